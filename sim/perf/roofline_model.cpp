#include "sim/perf/roofline_model.h"

#include <algorithm>
#include <cmath>

#include "sim/core/errors.h"
#include "sim/model/parallel_layout.h"

namespace kvsim {
namespace {

// Private approximation of per-token KV bytes of one layer on one TP rank; the sizing module
// (sim/model/sizing.h) is the official source (scales, FP8 MLA layouts, padding).
double kv_bytes_per_token(const LayerSpec& l, int tp, double kv_bytes) {
  const auto& a = l.attn;
  switch (l.kind) {
    case LayerKind::kFullAttention:
    case LayerKind::kSlidingWindow: {
      const int heads = std::max(1, (a.num_kv_heads + tp - 1) / tp);  // replicated when kv_heads < TP
      return 2.0 * heads * a.head_dim * kv_bytes;
    }
    case LayerKind::kMla:
      return static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim) * kv_bytes;  // replicated on every rank
    case LayerKind::kSparseMla:
      return static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim + a.index_head_dim) * kv_bytes;
    default:
      return 0.0;
  }
}

bool is_state_layer(LayerKind k) {
  return k == LayerKind::kMamba2 || k == LayerKind::kGatedDeltaNet || k == LayerKind::kRwkv6;
}

double weight_peak(const GpuSpec& g, DType w) {
  if ((w == DType::kFp8 || w == DType::kFp8DsMla) && g.fp8_flops > 0) return g.fp8_flops;
  if (is_fp4(w) && g.fp4_flops > 0) return g.fp4_flops;
  return g.bf16_flops;
}

}  // namespace

RooflineLatencyModel::RooflineLatencyModel(const ModelSpec& m, const GpuSpec& g, int tp, DType weight_dtype,
                                           DType kv_dtype, PagedBlockTerm block_term, const ParallelPlan& parallel,
                                           double weight_bits)
    : tp_(tp), step_overhead_(g.step_overhead), block_term_(block_term), dp_(parallel.dp) {
  const std::string who = "roofline latency model (" + m.name + " on " + g.name + "): ";
  if (tp < 1) throw InputError(who + "tensor parallel size must be >= 1 (got " + std::to_string(tp) + ")");
  if (m.params <= 0) throw InputError(who + "model has no parameter count");
  if (m.hidden_size <= 0 || m.layers.empty()) throw InputError(who + "model has no hidden size or layers");
  if (g.bf16_flops <= 0 || g.hbm_bandwidth <= 0) throw InputError(who + "GPU lacks bf16_flops or hbm_bandwidth");
  if (g.compute_efficiency <= 0 || g.memory_efficiency <= 0) throw InputError(who + "efficiencies must be > 0");
  const double link = g.nvlink_bandwidth > 0 ? g.nvlink_bandwidth : g.pcie_bandwidth;
  if (tp > 1 && link <= 0) throw InputError(who + "TP > 1 needs nvlink_bandwidth or pcie_bandwidth");

  const double h = static_cast<double>(m.hidden_size);
  const double vh = static_cast<double>(m.vocab_size) * h;
  const double untied_embedding = m.tie_word_embeddings ? 0.0 : vh;
  const double active = static_cast<double>(m.active_params > 0 ? m.active_params : m.params);
  // Stored bytes per weight, scales included (dtype.h weight_bits_per_element): INT4 4.125 bits,
  // MXFP4 4.25, NVFP4 4.5, FP8 8, BF16 16. Embeddings and the LM head stay in 16 bits (vLLM:
  // quantization/fp8.py get_quant_method quantises LinearBase and FusedMoE; ParallelLMHead is an embedding).
  const double wb = (weight_bits > 0 ? weight_bits : weight_bits_per_element(weight_dtype)) / 8.0;
  const double kvb = dtype_bytes(kv_dtype);
  const double state_b = m.ssm_state_dtype_hint == "float32" ? 4.0 : 2.0;
  constexpr double kConvBytes = 2.0;

  flops_per_token_ = 2.0 * std::max(0.0, active - vh - untied_embedding) / tp_;
  flops_per_sample_ = 2.0 * vh / tp_;

  int num_kernels = kKernelsPerStep;
  for (const LayerSpec& l : m.layers) {
    num_kernels += kKernelsPerLayer;
    if (l.moe) {
      ++moe_layers_;
      num_kernels += kExtraKernelsPerMoeLayer;
    }
    const auto& a = l.attn;
    const double q_heads = static_cast<double>(m.num_attention_heads);
    const double head_dim = a.head_dim > 0 ? a.head_dim : m.head_dim;
    const double kv_token = kv_bytes_per_token(l, tp, kvb);
    if (l.reads_cache_of < 0) kv_write_ += kv_token;
    switch (l.kind) {
      case LayerKind::kFullAttention:
        attn_flops_per_pair_full_ += 4.0 * q_heads * head_dim / tp_;
        kv_read_full_ += kv_token;
        break;
      case LayerKind::kSlidingWindow:
        attn_flops_per_pair_sliding_ += 4.0 * q_heads * head_dim / tp_;
        kv_read_sliding_ += kv_token;
        break;
      case LayerKind::kMla:
        attn_flops_per_pair_full_ +=
            q_heads * (2.0 * (a.kv_lora_rank + a.qk_rope_head_dim) + 2.0 * a.kv_lora_rank) / tp_;
        kv_read_full_ += kv_token;
        break;
      case LayerKind::kSparseMla: {
        // DSA: the main MLA attention reads only the indexer's top-k keys; the indexer itself scores
        // every earlier token (index_n_heads x index_head_dim per pair) and reads every indexer key.
        const double mla = q_heads * (2.0 * (a.kv_lora_rank + a.qk_rope_head_dim) + 2.0 * a.kv_lora_rank) / tp_;
        const double indexer = 2.0 * a.index_n_heads * a.index_head_dim / tp_;
        const double index_key = a.index_head_dim * kvb;
        attn_flops_per_pair_sparse_ += mla;
        attn_flops_per_pair_full_ += indexer;
        kv_read_sparse_ += kv_token - index_key;
        kv_read_full_ += index_key;
        break;
      }
      default:
        break;
    }
    if (is_state_layer(l.kind)) {
      const auto& s = l.state;
      const double ssm = static_cast<double>(s.ssm_elems());
      const double conv = static_cast<double>(s.conv_elems());
      state_flops_per_token_ += (6.0 * ssm + 2.0 * static_cast<double>(s.conv_dim) * (s.conv_rows + 1)) / tp_;
      state_bytes_per_request_ += 2.0 * (ssm * state_b + conv * kConvBytes) / tp_;
    }
  }

  const double params = static_cast<double>(m.params);
  if (m.num_experts > 0 && moe_layers_ > 0) {
    num_experts_ = m.num_experts;
    experts_per_token_ = std::clamp(m.experts_per_token, 1, m.num_experts);
    const double expert_params = 3.0 * h * static_cast<double>(m.moe_intermediate_size);
    const double non_expert = params - untied_embedding - moe_layers_ * m.num_experts * expert_params;
    if (expert_params <= 0 || non_expert < vh) {
      throw InputError(who + "MoE expert weights (" + std::to_string(moe_layers_) + " layers x " +
                       std::to_string(m.num_experts) + " experts x 3 x hidden x moe_intermediate_size) exceed params");
    }
    weight_bytes_fixed_ = ((non_expert - vh) * wb + vh * 2.0) / tp_;
    // MoE layers shard over all DP x TP GPUs (fused_moe/config.py FusedMoEParallelConfig.make): 1/(DP x TP)
    // of every expert, or with EP ceil(E / EP) experts split DP x TP / EP ways (expert_weight_share).
    expert_bytes_per_layer_ = expert_params * wb * expert_weight_share(m, parallel.layout(tp));
  } else {
    moe_layers_ = 0;
    // Every weight read once, except the embedding table (only looked up): the LM head (the tied
    // table, or its own matrix) in 16 bits, the rest in the weight format.
    weight_bytes_fixed_ = ((params - untied_embedding - vh) * wb + vh * 2.0) / tp_;
  }

  compute_rate_w_ = g.compute_efficiency * weight_peak(g, weight_dtype);
  compute_rate_bf16_ = g.compute_efficiency * g.bf16_flops;
  memory_rate_ = g.memory_efficiency * g.hbm_bandwidth;
  floor_s_ = num_kernels * g.kernel_floor.seconds();
  if (tp > 1) {
    const double all_reduces = 2.0 * static_cast<double>(m.layers.size());
    allreduce_fixed_s_ = all_reduces * kAllReduceLatencySeconds;
    allreduce_per_token_s_ = all_reduces * 2.0 * (tp_ - 1.0) / tp_ * h * 2.0 / link;
  }
  ParallelPlan plan = parallel;
  plan.tp = tp;
  parallel_ = ParallelTerms(plan, h, experts_per_token_, num_experts_, moe_layers_);
  if (parallel_.tp_crosses_nodes()) {
    // TP beyond one node: each all-reduce goes through NCCL over NVLink and the node's NICs
    // (parallel_terms.h), linear here: NCCL's least latency (its small-message protocol) plus h x 2 bytes a
    // token at the full bus bandwidth (its large-message one), a lower envelope of NCCL's model.
    const double all_reduces = 2.0 * static_cast<double>(m.layers.size());
    allreduce_fixed_s_ = all_reduces * parallel_.cross_node_allreduce_seconds(0);
    allreduce_per_token_s_ = all_reduces * parallel_.cross_node_allreduce_traffic_seconds(h * 2.0);
  }
}

RooflineBreakdown RooflineLatencyModel::breakdown(const BatchShape& b) const {
  RooflineBreakdown r;
  if (b.num_tokens <= 0) return r;
  const double n = static_cast<double>(b.num_tokens);
  const double samples = static_cast<double>(b.num_decode_requests + b.num_prefill_requests);
  r.matmul_flops = flops_per_token_ * n + flops_per_sample_ * samples;
  // Sparse layers use the top-k aggregates when the engine supplied them, else the dense ones.
  const bool sparse = b.prefill_attn_pairs_sparse > 0 || b.decode_context_tokens_sparse > 0;
  const double sparse_pairs = sparse ? b.prefill_attn_pairs_sparse + static_cast<double>(b.decode_context_tokens_sparse)
                                     : b.prefill_attn_pairs + static_cast<double>(b.decode_context_tokens);
  r.attention_flops =
      attn_flops_per_pair_sparse_ * sparse_pairs +
      attn_flops_per_pair_full_ * (b.prefill_attn_pairs + static_cast<double>(b.decode_context_tokens)) +
      attn_flops_per_pair_sliding_ *
          (b.prefill_attn_pairs_windowed + static_cast<double>(b.decode_context_tokens_windowed));
  r.state_flops = state_flops_per_token_ * n;

  r.weight_bytes = weight_bytes_fixed_;
  if (moe_layers_ > 0) {
    const double e = num_experts_;
    // The experts see the tokens of every DP rank (each assumed as large as this one).
    const double touched = e * (1.0 - std::pow(1.0 - experts_per_token_ / e, n * dp_));
    r.weight_bytes += moe_layers_ * touched * expert_bytes_per_layer_;
  }
  const double prefill_ctx =
      static_cast<double>(b.prefill_context_tokens > 0 ? b.prefill_context_tokens : b.num_prefill_tokens);
  const double prefill_ctx_win = static_cast<double>(
      b.prefill_context_tokens_windowed > 0 ? b.prefill_context_tokens_windowed : b.num_prefill_tokens);
  const double sparse_ctx = sparse
                                ? static_cast<double>(b.decode_context_tokens_sparse + b.prefill_context_tokens_sparse)
                                : static_cast<double>(b.decode_context_tokens) + prefill_ctx;
  r.kv_bytes =
      kv_read_sparse_ * sparse_ctx + kv_read_full_ * (static_cast<double>(b.decode_context_tokens) + prefill_ctx) +
      kv_read_sliding_ * (static_cast<double>(b.decode_context_tokens_windowed) + prefill_ctx_win) + kv_write_ * n;
  r.state_bytes =
      state_bytes_per_request_ * static_cast<double>(b.state_requests) + 2.0 * static_cast<double>(b.state_copy_bytes);

  r.compute_s = (r.matmul_flops + r.state_flops) / compute_rate_w_ + r.attention_flops / compute_rate_bf16_;
  r.memory_s = (r.weight_bytes + r.kv_bytes + r.state_bytes) / memory_rate_;
  r.floor_s = floor_s_;
  r.allreduce_s = allreduce_fixed_s_ > 0 ? allreduce_fixed_s_ + allreduce_per_token_s_ * n : 0.0;
  r.block_s = block_term_.seconds(b);
  r.parallel_s = parallel_.moe_comm_seconds(n);
  const double t = std::max(r.compute_s, r.memory_s) + r.floor_s + r.allreduce_s + r.parallel_s;
  // The block term is 0 at the reference block size, which leaves t (and the default runs) untouched.
  r.total = duration_from_seconds(r.block_s == 0.0 ? t : std::max(0.0, t + r.block_s)) + step_overhead_;
  return r;
}

Duration RooflineLatencyModel::step_time(const BatchShape& batch) const { return breakdown(batch).total; }

}  // namespace kvsim
