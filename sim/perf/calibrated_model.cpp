#include "sim/perf/calibrated_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "sim/core/errors.h"
#include "sim/model/parallel_layout.h"
#include "sim/perf/cuda_graph.h"

namespace kvsim {

std::string gdn_kernel_shape(const StateShape& s, int tp) {
  // gdn_state (config_reader.cpp): conv_dim = 2 k_heads k_dim + v_heads v_dim, ssm_heads = v_heads,
  // ssm_head_dim = v_dim, ssm_state_dim = k_dim.
  const int64_t k_dim = s.ssm_state_dim, v_dim = s.ssm_head_dim, v_heads = s.ssm_heads;
  if (k_dim <= 0 || tp < 1) return "";
  const int64_t k_heads = (s.conv_dim - v_heads * v_dim) / (2 * k_dim);
  if (k_heads <= 0 || k_heads % tp != 0 || v_heads % tp != 0) return "";
  return "k" + std::to_string(k_heads / tp) + "x" + std::to_string(k_dim) + "_v" + std::to_string(v_heads / tp) + "x" +
         std::to_string(v_dim);
}
namespace {

bool is_state_layer(LayerKind k) {
  return k == LayerKind::kMamba2 || k == LayerKind::kGatedDeltaNet || k == LayerKind::kRwkv6;
}

double weight_flops(const GpuSpec& g, DType w) {
  if ((w == DType::kFp8 || w == DType::kFp8DsMla) && g.fp8_flops > 0) return g.fp8_flops;
  if (is_fp4(w) && g.fp4_flops > 0) return g.fp4_flops;
  return g.bf16_flops;
}

// SOL of a GEMM whose B operand (the weights) has `wb` bytes per element, activations BF16.
double sol_weights(double m, double n, double k, double flops, double bw, double wb) {
  return std::max(2 * m * n * k / flops, (wb * n * k + 2 * (m * k + m * n)) / bw);
}

// Elements per step that are read and written by each element-wise kernel, per token, in units of
// hidden: fused add + RMSNorm reads residual and input and writes both (4 x hidden x 2 bytes).
constexpr int kMemoryOpsPerLayer = 4;
constexpr double kMemoryOpBytesPerHidden = 8.0;

std::vector<double> m_grid(const GemmTable& t) {
  std::vector<double> g = t.empty() ? std::vector<double>{} : t.m_grid();
  if (g.empty())
    for (double m = 1; m <= 32768; m *= 2) g.push_back(m);
  for (double m = g.back() * 2; m <= (1 << 21); m *= 2) g.push_back(m);
  return g;
}

// Running maximum, so a tabulated curve never decreases with tokens (measured tables carry noise).
std::vector<double> monotone(std::vector<double> v) {
  for (size_t i = 1; i < v.size(); ++i) v[i] = std::max(v[i], v[i - 1]);
  return v;
}

}  // namespace

CalibratedLatencyModel::CalibratedLatencyModel(const ModelSpec& m, const GpuSpec& g, int tp, DType weight_dtype,
                                               DType kv_dtype, const LatencyTables& tables,
                                               const EngineOverhead& overhead, PagedBlockTerm block_term,
                                               const ParallelPlan& parallel, std::vector<int64_t> cudagraph_sizes,
                                               double weight_bits, bool dense_weights_16bit, bool mla_module_rows,
                                               bool dsa_module_rows)
    : gpu_(g), tp_(tp), block_term_(block_term), cudagraph_sizes_(std::move(cudagraph_sizes)), dp_(parallel.dp) {
  const std::string who = "calibrated latency model (" + m.name + " on " + g.name + "): ";
  if (tp < 1) throw InputError(who + "tensor parallel size must be >= 1 (got " + std::to_string(tp) + ")");
  if (m.hidden_size <= 0 || m.layers.empty()) throw InputError(who + "model has no hidden size or layers");
  if (m.params <= 0) throw InputError(who + "model has no parameter count");
  if (g.bf16_flops <= 0 || g.hbm_bandwidth <= 0) throw InputError(who + "GPU lacks bf16_flops or hbm_bandwidth");

  cal_ = calibrate_gpu(tables, g);
  bf16_peak_ = {g.bf16_flops, g.hbm_bandwidth, 2.0};
  // Stored bytes per weight, scales included (dtype.h weight_bits_per_element): what a step reads.
  const double wb = (weight_bits > 0 ? weight_bits : weight_bits_per_element(weight_dtype)) / 8.0;
  const double kvb = dtype_bytes(kv_dtype);
  kv_scale_ = kvb / 2.0;
  expert_peak_ = {weight_flops(g, weight_dtype), g.hbm_bandwidth, wb};
  // A checkpoint that quantises only the routed experts (gpt-oss MXFP4) runs every other linear layer
  // as a BF16 GEMM (vLLM's UnquantizedLinearMethod for the modules_to_not_convert).
  weight_peak_ = dense_weights_16bit ? bf16_peak_ : expert_peak_;
  if (tables.has_gemm()) gemm_ = GemmTable(tables.gemm, bf16_peak_);
  const bool fp8_weights = (weight_dtype == DType::kFp8 || weight_dtype == DType::kFp8DsMla) && g.fp8_flops > 0;
  // NVFP4 x NVFP4 rows (activations quantised too, vLLM's ModelOpt NVFP4 linear) for nvfp4 weights and
  // the generic fp4; MXFP4 (gpt-oss's experts) is another kernel and keeps the scaled BF16 rows.
  const bool nvfp4_weights = (weight_dtype == DType::kNvfp4 || weight_dtype == DType::kFp4) && g.fp4_flops > 0;
  if (!dense_weights_16bit && fp8_weights && !tables.gemm_fp8.empty())
    gemm_quant_ = GemmTable(tables.gemm_fp8, {g.fp8_flops, g.hbm_bandwidth, 1.0});
  else if (!dense_weights_16bit && nvfp4_weights && !tables.gemm_nvfp4.empty())
    gemm_quant_ =
        GemmTable(tables.gemm_nvfp4, {g.fp4_flops, g.hbm_bandwidth, weight_bits_per_element(DType::kNvfp4) / 8});

  const double h = static_cast<double>(m.hidden_size);
  hidden_ = h;
  vocab_ = static_cast<double>(m.vocab_size);
  layers_ = static_cast<int>(m.layers.size());
  const double q_heads = m.num_attention_heads;
  const double qh_local = std::max(1.0, q_heads / tp_);
  const bool mlp_only_on_none = m.model_type == "nemotron_h";  // Nemotron-H: '-' layers carry the MLP

  // MLA layers of the shape the module rows were measured at, in the projections' format and the cache
  // dtype the rows hold, at a local head count they cover: the whole attention module from the rows.
  // The projections' format: BF16 for a checkpoint that keeps its dense layers in 16 bits (Kimi-K2.5's
  // INT4 experts) and for formats without module rows (INT4, MXFP4); FP8 as block-scaled FP8 (the
  // DeepSeek / Kimi FP8 checkpoints' format, the one the rows measure); NVFP4 / FP4 as NVFP4.
  {
    const bool all_shaped =
        std::any_of(m.layers.begin(), m.layers.end(), [](const LayerSpec& l) { return l.kind == LayerKind::kMla; }) &&
        std::all_of(m.layers.begin(), m.layers.end(),
                    [&](const LayerSpec& l) { return !is_attention(l.kind) || mla_module_shape(m, l); });
    const std::string gemm = dense_weights_16bit                                               ? "bf16"
                             : weight_dtype == DType::kFp8 || weight_dtype == DType::kFp8DsMla ? "fp8_block"
                             : weight_dtype == DType::kNvfp4 || weight_dtype == DType::kFp4    ? "nvfp4"
                                                                                               : "bf16";
    const std::string kv = kv_dtype == DType::kBf16 || kv_dtype == DType::kFp16 ? "bf16"
                           : kv_dtype == DType::kFp8                            ? "fp8"
                                                                                : "";
    const double heads = q_heads / tp_;
    if (mla_module_rows && all_shaped && !kv.empty() && heads == std::floor(heads)) {
      mla_context_ = MlaModuleTable(tables.mla_context, gemm, kv, static_cast<int>(heads));
      mla_generation_ = MlaModuleTable(tables.mla_generation, gemm, kv, static_cast<int>(heads));
      mla_module_ = !mla_context_.empty() && !mla_generation_.empty();
      if (mla_module_) mla_module_floor_s_ = mla_generation_.seconds(1, 2);
    }
    // GLM-5's DSA layers: decode rows only (the collection's context rows are not used, PROVENANCE.md), so
    // prefill keeps the roofline attention and the projections as GEMMs.
    const bool all_dsa = std::any_of(m.layers.begin(), m.layers.end(),
                                     [](const LayerSpec& l) { return l.kind == LayerKind::kSparseMla; }) &&
                         std::all_of(m.layers.begin(), m.layers.end(), [&](const LayerSpec& l) {
                           return !is_attention(l.kind) || dsa_module_shape(m, l);
                         });
    // vLLM's DSA cache format fp8_ds_mla (FP8 latent, BF16 rope part) reads the FP8-cache rows.
    const std::string dsa_kv = kv_dtype == DType::kFp8DsMla ? "fp8" : kv;
    if (dsa_module_rows && all_dsa && !dsa_kv.empty() && heads == std::floor(heads)) {
      dsa_generation_ = MlaModuleTable(tables.dsa_generation, gemm, dsa_kv, static_cast<int>(heads));
      // NVFP4 weights have no rows of their own (the collection is FP8-block only): the indexer, top-k and
      // sparse-attention kernels that make most of a row (64.6 us of the B200 row at one token) do not
      // depend on the weights' format; the FP8 rows, whose projections read about 2 x NVFP4's bytes (a
      // few us a layer). Without them these layers fell to a roofline with no indexer kernels (3 us).
      if (dsa_generation_.empty() && gemm == "nvfp4")
        dsa_generation_ = MlaModuleTable(tables.dsa_generation, "fp8_block", dsa_kv, static_cast<int>(heads));
      dsa_module_ = !dsa_generation_.empty();
    }
  }

  // The local GDN shape of every gated-DeltaNet layer ("" where the heads do not divide by TP).
  std::set<std::string> gdn_keys;
  // Parameters the explicit GEMMs account for (per token, whole model, TP 1), to size the rest.
  double explicit_params = 0;
  int other_layers = 0;          // MLA and state layers: their projections take the remaining parameters
  double replicated_params = 0;  // of those, held whole by every TP rank (MLA latent down-projections)
  std::map<std::tuple<int, int, int>, AttentionGroup> groups;  // (kv_local, head_dim, window)
  for (const LayerSpec& l : m.layers) {
    const auto& a = l.attn;
    const double hd = a.head_dim > 0 ? a.head_dim : m.head_dim;
    memory_ops_ += kMemoryOpsPerLayer;
    switch (l.kind) {
      case LayerKind::kFullAttention:
      case LayerKind::kSlidingWindow: {
        const double kv_local = std::max(1.0, static_cast<double>(a.num_kv_heads) / tp_);
        // With a gated output q_proj emits the gate too (vLLM qwen3_next.py: q_proj of 2 x heads x head_dim).
        const double q_width = m.attn_output_gate ? 2.0 : 1.0;
        token_gemms_.push_back({(q_width * qh_local + 2 * kv_local) * hd, h, 1});
        token_gemms_.push_back({h, qh_local * hd, 1});
        explicit_params += h * (q_width * q_heads + 2.0 * a.num_kv_heads) * hd + q_heads * hd * h;
        const int window = l.kind == LayerKind::kSlidingWindow ? a.window : 0;
        AttentionGroup& grp = groups[{static_cast<int>(kv_local), static_cast<int>(hd), window}];
        ++grp.layers;
        grp.window = window;
        grp.flops_per_pair = 4.0 * qh_local * hd;
        grp.kv_bytes_per_token = 2.0 * kv_local * hd * kvb;
        break;
      }
      case LayerKind::kMla:
      case LayerKind::kSparseMla:
        ++mla_layers_;
        if (!mla_module_) {
          ++other_layers;  // else the module rows hold the projections
          // vLLM keeps the latent down-projections whole on every TP rank (deepseek_v2.py: q_a_proj and
          // kv_a_proj_with_mqa are ReplicatedLinear; fused_qkv_a_proj when q_lora_rank is set), as sizing
          // counts them (params.cpp mla_params).
          if (a.q_lora_rank > 0)
            replicated_params += h * (a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim);
          else
            replicated_params += h * (a.kv_lora_rank + a.qk_rope_head_dim);
          // DSA's indexer projections too (wq_b, wk, weights_proj: ReplicatedLinear).
          if (l.kind == LayerKind::kSparseMla)
            replicated_params += static_cast<double>(a.q_lora_rank) * a.index_n_heads * a.index_head_dim +
                                 h * (a.index_head_dim + a.index_n_heads);
        }
        mla_flops_per_pair_ = qh_local * (2.0 * (a.kv_lora_rank + a.qk_rope_head_dim) + 2.0 * a.kv_lora_rank);
        // Prefill of a dense MLA layer runs as MHA on the up-projected keys and values (vLLM MLACommonImpl
        // _forward_prefill: kv_b_proj, then flash attention with head size qk_nope + rope, values v_head_dim):
        // 2 (nope + rope) + 2 v per head and pair, 10,240 for DeepSeek-V3 at 16 heads against the absorbed
        // decode form's 34,816 (the measured mla_context rows grow as the former). Sparse MLA (DSA) keeps
        // the absorbed form over its top-k keys in prefill too (FlashMLA sparse).
        mla_prefill_flops_per_pair_ =
            l.kind == LayerKind::kSparseMla
                ? mla_flops_per_pair_
                : qh_local * (2.0 * static_cast<double>(m.head_dim) + 2.0 * static_cast<double>(a.v_head_dim));
        mla_kv_bytes_per_token_ = (a.kv_lora_rank + a.qk_rope_head_dim) * kvb;
        if (l.kind == LayerKind::kSparseMla) {
          // DSA: the indexer scores every earlier token and reads every indexer key; the MLA
          // attention itself reads the top-k keys (BatchShape *_sparse aggregates).
          // The indexer is not split over TP (vLLM deepseek_v2.py Indexer: "no tensor parallel, just
          // replicated"; n_local_heads = index_n_heads): every rank scores every pair with all its heads.
          sparse_mla_ = true;
          indexer_flops_per_pair_ = 2.0 * a.index_n_heads * a.index_head_dim;
          indexer_bytes_per_token_ = a.index_head_dim * kvb;
        }
        break;
      default:
        if (is_state_layer(l.kind)) {
          ++state_layers_;
          ++other_layers;
          const auto& s = l.state;
          const double ssm = static_cast<double>(s.ssm_elems());
          const double conv = static_cast<double>(s.conv_elems());
          const double state_b = m.ssm_state_dtype_hint == "float32" ? 4.0 : 2.0;
          state_flops_per_token_ += (6.0 * ssm + 2.0 * static_cast<double>(s.conv_dim) * (s.conv_rows + 1)) / tp_;
          state_bytes_per_request_ += 2.0 * (ssm * state_b + conv * 2.0) / tp_;
          if (l.kind == LayerKind::kGatedDeltaNet) gdn_keys.insert(gdn_kernel_shape(s, tp_));
        }
        break;
    }
    if (l.moe && m.num_experts > 0) {
      ++moe_layers_;
      // The router, replicated and unquantised: vLLM builds the gate with quant_config=None
      // (deepseek_v2.py / qwen3_moe.py `self.gate = ReplicatedLinear(..., quant_config=None)`), as sizing
      // counts it (params.cpp: routers 16-bit).
      token_gemms_.push_back({static_cast<double>(m.num_experts), h, 1, true});
      explicit_params += h * m.num_experts + 3.0 * h * static_cast<double>(m.moe_intermediate_size) *
                                                 std::min(m.experts_per_token, m.num_experts);
      if (m.shared_expert_intermediate_size > 0) {
        const double is = static_cast<double>(m.shared_expert_intermediate_size);
        token_gemms_.push_back({2 * is / tp_, h, 1});
        token_gemms_.push_back({h, is / tp_, 1});
        explicit_params += 3.0 * h * is;
      }
    } else if (m.intermediate_size > 0 && (!mlp_only_on_none || l.kind == LayerKind::kNone)) {
      const double inter = static_cast<double>(m.intermediate_size);
      token_gemms_.push_back({2 * inter / tp_, h, 1});
      token_gemms_.push_back({h, inter / tp_, 1});
      explicit_params += 3.0 * h * inter;
    }
  }
  const double embed = vocab_ * h;
  const double active = static_cast<double>(m.active_params > 0 ? m.active_params : m.params);
  const double rest = active - embed - (m.tie_word_embeddings ? 0.0 : embed) - explicit_params;
  Gemm dsa_projections{};
  if (other_layers > 0 && rest > 0) {
    const double replicated = std::min(replicated_params, rest);
    const Gemm g{((rest - replicated) / tp_ + replicated) / (other_layers * h), h, static_cast<double>(other_layers)};
    // With the DSA decode rows the (DSA-only) other layers' projections are in the rows for decode tokens.
    if (dsa_module_)
      dsa_projections = g;
    else
      token_gemms_.push_back(g);
  }
  // Every state layer a gated-DeltaNet layer of one local shape with measured kernel rows (SGLang's conv1d +
  // delta-rule kernels, <gpu>/gdn_{context,generation}.csv): its state path from the rows.
  if (state_layers_ > 0 && gdn_keys.size() == 1 && !gdn_keys.begin()->empty() &&
      std::all_of(m.layers.begin(), m.layers.end(),
                  [](const LayerSpec& l) { return !is_state_layer(l.kind) || l.kind == LayerKind::kGatedDeltaNet; })) {
    const std::string& key = *gdn_keys.begin();
    const LayerSpec& any = *std::find_if(m.layers.begin(), m.layers.end(),
                                         [](const LayerSpec& l) { return l.kind == LayerKind::kGatedDeltaNet; });
    const int local_v = static_cast<int>(any.state.ssm_heads / tp_);
    gdn_context_ = MlaModuleTable(tables.gdn_context, key, "", local_v);
    gdn_generation_ = MlaModuleTable(tables.gdn_generation, key, "", local_v);
    gdn_rows_ = !gdn_context_.empty() && !gdn_generation_.empty();
  }
  memory_ops_ += 2;  // embedding gather, final norm
  // Per token: each element-wise kernel moves about 8 * hidden bytes; embedding gather and final
  // norm 4 * hidden more.
  memory_op_bytes_per_token_ = kMemoryOpBytesPerHidden * h * kMemoryOpsPerLayer * layers_ + 4.0 * h;

  for (auto& [key, grp] : groups) {
    const int kv_local = std::get<0>(key), hd = std::get<1>(key);
    grp.prefill = fit_prefill_attention(tables, static_cast<int>(qh_local), kv_local, hd, grp.window);
    grp.decode = fit_decode_attention(tables, static_cast<int>(qh_local), kv_local, hd, grp.window);
    attention_.push_back(grp);
  }

  if (moe_layers_ > 0) {
    num_experts_ = m.num_experts;
    topk_ = std::clamp(m.experts_per_token, 1, m.num_experts);
    // MoE layers shard over all DP x TP GPUs (fused_moe/config.py FusedMoEParallelConfig.make): each
    // expert tensor-split moe_tp ways (TP for plain TP, 1 under vLLM's EP), EP ranks holding E / EP of
    // them; each touched expert costs its share on the busiest GPU.
    const Parallel layout = parallel.layout(tp);
    moe_ep_ = expert_parallel_size(m, layout);
    moe_inter_ = static_cast<double>(m.moe_intermediate_size) / moe_tensor_parallel_size(m, layout);
    expert_bytes_ = 3.0 * h * static_cast<double>(m.moe_intermediate_size) * wb * expert_weight_share(m, layout);
    // The measured fused-MoE table of the experts' dtype (FP8 rows for FP8 experts, else BF16 rows with
    // the query's own SOL), at balanced routing's tokens per expert (moe_table.h). NVFP4, INT4 and MXFP4
    // tables store 4.5, 4.5 and 4.25 bits per weight (E4M3 scale per 16; a BF16 scale per group of 32, the
    // group aiconfigurator's collector uses for its Kimi-K2.5 int4_wo rows, collector/cases/base_ops/
    // moe.yaml moe_vllm module_config group_size 32 at 095f58a5; an E8M0 scale per 32); the query then
    // scales by its own format's bytes (Kimi's own group 32: its rows come back exactly).
    // MXFP4 rows are W4A16 (aiconfigurator's w4a16_mxfp4: BF16 activations), so their SOL and the
    // query's use the BF16 compute peak. Any layout: the experts see the tokens of every DP rank, the EP
    // rows (moe_ep > 1) measure a rank's share of the experts.
    {
      if (weight_dtype == DType::kMxfp4 && !tables.moe_mxfp4.empty()) {
        const PeakRates w4a16 = {g.bf16_flops, g.hbm_bandwidth, weight_bits_per_element(DType::kMxfp4) / 8};
        moe_table_ = MoeTable(tables.moe_mxfp4, w4a16);
        expert_peak_.flops = g.bf16_flops;
      } else if (fp8_weights && !tables.moe_fp8.empty()) {
        moe_table_ = MoeTable(tables.moe_fp8, {g.fp8_flops, g.hbm_bandwidth, 1.0});
      } else if (is_fp4(weight_dtype) && g.fp4_flops > 0 && !tables.moe_nvfp4.empty()) {
        moe_table_ =
            MoeTable(tables.moe_nvfp4, {g.fp4_flops, g.hbm_bandwidth, weight_bits_per_element(DType::kNvfp4) / 8});
      } else if (weight_dtype == DType::kInt4 && !tables.moe_int4.empty()) {
        constexpr double kInt4TableBits = 4.0 + 16.0 / 32;  // group 32, BF16 scales
        moe_table_ = MoeTable(tables.moe_int4, {g.bf16_flops, g.hbm_bandwidth, kInt4TableBits / 8});
      } else if (!tables.moe.empty()) {
        moe_table_ = MoeTable(tables.moe, bf16_peak_);
      }
    }
    if (cal_.moe) {
      moe_fit_ = *cal_.moe;
    } else {
      moe_fit_.per_call_s = 3 * cal_.gemm.floor_s;
      moe_fit_.per_byte_s = 1.0 / (cal_.gemm.eta_memory * g.hbm_bandwidth);
      moe_fit_.per_flop_s = 1.0 / (cal_.gemm.eta_compute * g.bf16_flops);
    }
    moe_fit_.per_flop_s *= g.bf16_flops / expert_peak_.flops;  // FP8 experts run at the FP8 rate
  }

  if (tp > 1) {
    for (const auto& p : tables.allreduce)
      if (p.num_gpus == tp) allreduce_points_.push_back(p);
    std::sort(allreduce_points_.begin(), allreduce_points_.end(),
              [](const AllReducePoint& a, const AllReducePoint& b) { return a.bytes < b.bytes; });
    if (allreduce_points_.empty() && g.nvlink_bandwidth <= 0 && g.pcie_bandwidth <= 0)
      throw InputError(who + "TP > 1 needs an all-reduce table, nvlink_bandwidth or pcie_bandwidth");
  }
  ParallelPlan plan = parallel;
  plan.tp = tp;
  parallel_ = ParallelTerms(plan, h, topk_, num_experts_, moe_layers_);
  overhead_c0_ = overhead.c0_s;
  overhead_c1_ = overhead.c1_s;
  // SGLang before piecewise CUDA graphs became its default (sgl-project/sglang#16331) runs every prefill
  // forward eagerly: ForwardMode.is_cuda_graph() admits decode-like modes only
  // (python/sglang/srt/model_executor/forward_batch_info.py). Measured for a MoE model only (DeepSeek-V3,
  // sgl-project/sglang#12160), so applied to models with MoE layers (models/latency/overhead.csv).
  if (moe_layers_ > 0) eager_prefill_floor_s_ = layers_ * overhead.eager_prefill_per_layer_s;

  const std::vector<double> grid = m_grid(gemm_);
  std::vector<double> lin, head, dsa;
  for (double x : grid) {
    lin.push_back(linear_at(x));
    if (dsa_module_) dsa.push_back(dsa_projections.count * gemm_seconds(x, dsa_projections.n, dsa_projections.k));
    head.push_back(bf16_gemm_seconds(x, vocab_ / tp_, h));  // the LM head stays in 16 bits
  }
  linear_curve_ = Curve1D(grid, monotone(lin));
  lm_head_curve_ = Curve1D(grid, monotone(head));
  if (dsa_module_) dsa_projection_curve_ = Curve1D(grid, monotone(dsa));
}

double CalibratedLatencyModel::bf16_gemm_seconds(double m, double n, double k) const {
  if (m <= 0 || n <= 0 || k <= 0) return 0.0;
  if (!gemm_.empty()) return gemm_.seconds(m, n, k);
  return cal_.gemm.floor_s + std::max(2 * m * n * k / (cal_.gemm.eta_compute * gpu_.bf16_flops),
                                      2 * (n * k + m * k + m * n) / (cal_.gemm.eta_memory * gpu_.hbm_bandwidth));
}

double CalibratedLatencyModel::gemm_seconds(double m, double n, double k) const {
  if (m <= 0 || n <= 0 || k <= 0) return 0.0;
  const double wb = weight_peak_.operand_bytes;
  if (!gemm_quant_.empty()) return gemm_quant_.seconds(m, n, k);  // the weights' format, measured
  if (!gemm_.empty()) {
    const double t = gemm_.seconds(m, n, k);
    if (weight_peak_.flops == bf16_peak_.flops && wb == 2.0) return t;
    // The part above the fitted per-call floor scales with SOL; the floor (launch, prologue, tail) does not:
    // scaled whole, a B200 FP8 GEMM at m = 8 came to 0.50 x BF16, where every low-precision row B200 has at
    // m <= 64 measures at least 0.83 x (NVFP4 rows, 0.28 x the bytes; models/latency/README.md).
    const double floor = std::min(cal_.gemm.floor_s, t);
    return floor + (t - floor) * sol_weights(m, n, k, weight_peak_.flops, weight_peak_.bytes_per_s, wb) /
                       sol_weights(m, n, k, bf16_peak_.flops, bf16_peak_.bytes_per_s, 2.0);
  }
  return cal_.gemm.floor_s + std::max(2 * m * n * k / (cal_.gemm.eta_compute * weight_peak_.flops),
                                      (wb * n * k + 2 * (m * k + m * n)) / (cal_.gemm.eta_memory * gpu_.hbm_bandwidth));
}

double CalibratedLatencyModel::linear_at(double m) const {
  double t = 0;
  for (const Gemm& g : token_gemms_)
    t += g.count * (g.bf16 ? bf16_gemm_seconds(m, g.n, g.k) : gemm_seconds(m, g.n, g.k));
  t += memory_ops_ * cal_.gemm.floor_s + m * memory_op_bytes_per_token_ / (cal_.gemm.eta_memory * gpu_.hbm_bandwidth);
  return t;
}

double CalibratedLatencyModel::allreduce_at(double tokens) const {
  const double bytes = tokens * hidden_ * 2.0;
  if (parallel_.tp_crosses_nodes()) return parallel_.cross_node_allreduce_seconds(bytes);
  const auto& p = allreduce_points_;
  if (!p.empty()) {
    if (bytes <= p.front().bytes) return p.front().seconds;
    if (bytes >= p.back().bytes) return p.back().seconds * bytes / p.back().bytes;  // bus bandwidth held
    const auto hi =
        std::lower_bound(p.begin(), p.end(), bytes, [](const AllReducePoint& a, double b) { return a.bytes < b; });
    if (hi->bytes == bytes) return hi->seconds;
    const auto lo = hi - 1;
    const double w = (std::log(bytes) - std::log(lo->bytes)) / (std::log(hi->bytes) - std::log(lo->bytes));
    return (1 - w) * lo->seconds + w * hi->seconds;
  }
  const double link = gpu_.nvlink_bandwidth > 0 ? gpu_.nvlink_bandwidth : gpu_.pcie_bandwidth;
  return 5e-6 + 2.0 * (tp_ - 1) / tp_ * bytes / (0.7 * link);
}

double CalibratedLatencyModel::attention_prefill(const AttentionGroup& g, const BatchShape& b) const {
  const double pairs =
      g.window > 0 && b.prefill_attn_pairs_windowed > 0 ? b.prefill_attn_pairs_windowed : b.prefill_attn_pairs;
  const double tokens = static_cast<double>(b.num_prefill_tokens);
  if (g.prefill)
    return g.layers * (g.prefill->per_call_s + g.prefill->per_pair_s * pairs + g.prefill->per_token_s * tokens);
  return g.layers * (cal_.gemm.floor_s + g.flops_per_pair * pairs / (cal_.attention_prefill_eta * gpu_.bf16_flops));
}

double CalibratedLatencyModel::attention_decode(const AttentionGroup& g, const BatchShape& b) const {
  const double ctx = static_cast<double>(g.window > 0 ? b.decode_context_tokens_windowed : b.decode_context_tokens);
  const double reqs = b.num_decode_requests;
  // The fits come from BF16-cache tables; the per-context-token term is the KV read, which an FP8
  // cache halves (kv_scale_ = kv bytes / 2).
  if (g.decode)
    return g.layers *
           (g.decode->per_call_s + g.decode->per_request_s * reqs + kv_scale_ * g.decode->per_context_token_s * ctx);
  // A shape without rows: its bytes at the tables' achieved efficiency, no faster than the fastest decode
  // call the GPU measures (B200 head-dim-64 layers came to 2.5-3.5 us with the GEMM floor, where every
  // B200 decode row takes 6.57 us or more).
  return g.layers *
         (attention_decode_floor() + ctx * g.kv_bytes_per_token / (cal_.attention_decode_eta * gpu_.hbm_bandwidth));
}

double CalibratedLatencyModel::module_decode_seconds(const MlaModuleTable& rows, double floor_s,
                                                     const BatchShape& b) const {
  // Decode requests at their mean context. In a step with prefill tokens the module runs once over all
  // tokens: the decodes then add only what their row costs above the one-request row (the launches and
  // weight reads are the prefill's).
  const double reqs = b.num_decode_requests;
  const double ctx = std::max(1.0, static_cast<double>(b.decode_context_tokens) / reqs);
  const double t = rows.seconds(reqs, ctx);
  return b.num_prefill_tokens > 0 ? std::max(0.0, t - floor_s) : t;
}

CalibratedBreakdown CalibratedLatencyModel::breakdown(const BatchShape& b) const {
  CalibratedBreakdown r;
  if (b.num_tokens <= 0) return r;
  // vLLM runs the token-level kernels at the CUDA-graph size the step is padded to (cuda_graph.h);
  // the LM head sees only the sampled rows, outside the graph.
  r.padded_tokens = cudagraph_padded_tokens(cudagraph_sizes_, b.num_tokens);
  const double n = static_cast<double>(r.padded_tokens);
  r.linear_s = linear_curve_(n);
  if (dsa_module_ && b.num_prefill_tokens > 0)
    r.linear_s += dsa_projection_curve_(static_cast<double>(b.num_prefill_tokens));
  r.lm_head_s = lm_head_curve_(static_cast<double>(b.num_decode_requests + b.num_prefill_requests));
  if (moe_layers_ > 0) {
    if (!moe_table_.empty()) {
      const MoeShape q{hidden_, moe_inter_, topk_, num_experts_, moe_ep_};
      r.moe_s = moe_layers_ * moe_table_.seconds(n * dp_, q, expert_peak_);
    } else {
      // The experts see the tokens of every DP rank (each assumed as large as this one).
      const double bytes = experts_touched(n * dp_, topk_, num_experts_) * expert_bytes_ + 4.0 * n * hidden_;
      const double flops = 6.0 * n * dp_ * topk_ * hidden_ * moe_inter_ / moe_ep_;  // 6 n k h I / TP per GPU
      r.moe_s = moe_layers_ * (moe_fit_.per_call_s + moe_fit_.per_byte_s * bytes + moe_fit_.per_flop_s * flops);
    }
  }
  if (b.num_prefill_tokens > 0) {
    for (const auto& g : attention_) r.prefill_attention_s += attention_prefill(g, b);
    if (mla_module_) {
      // The prefill requests as one context batch of their mean chunk; the rows measure chunks without a
      // cached prefix, so the query-key pairs a prefix adds go through the roofline.
      const double reqs = std::max(1, b.num_prefill_requests);
      const double chunk = static_cast<double>(b.num_prefill_tokens) / reqs;
      const double extra = std::max(0.0, b.prefill_attn_pairs - reqs * chunk * (chunk + 1) / 2);
      r.prefill_attention_s +=
          mla_layers_ * (mla_context_.seconds(reqs, chunk) +
                         mla_prefill_flops_per_pair_ * extra / (cal_.attention_prefill_eta * gpu_.bf16_flops));
    } else if (mla_layers_ > 0) {
      const double pairs =
          sparse_mla_ && b.prefill_attn_pairs_sparse > 0 ? b.prefill_attn_pairs_sparse : b.prefill_attn_pairs;
      const double flops = mla_prefill_flops_per_pair_ * pairs + indexer_flops_per_pair_ * b.prefill_attn_pairs;
      r.prefill_attention_s +=
          mla_layers_ * (cal_.gemm.floor_s + flops / (cal_.attention_prefill_eta * gpu_.bf16_flops));
    }
  }
  if (b.num_decode_requests > 0) {
    for (const auto& g : attention_) r.decode_attention_s += attention_decode(g, b);
    if (mla_module_) {
      r.decode_attention_s += mla_layers_ * module_decode_seconds(mla_generation_, mla_module_floor_s_, b);
    } else if (dsa_module_) {
      // Prefill tokens do not run the DSA rows (their attention is the roofline's, their projections the
      // GEMMs'), so a mixed step's decodes pay their whole row.
      r.decode_attention_s += mla_layers_ * module_decode_seconds(dsa_generation_, 0.0, b);
    } else if (mla_layers_ > 0) {
      const double full = static_cast<double>(b.decode_context_tokens);
      const double ctx = sparse_mla_ && b.decode_context_tokens_sparse > 0
                             ? static_cast<double>(b.decode_context_tokens_sparse)
                             : full;
      const double bytes = ctx * mla_kv_bytes_per_token_ + full * indexer_bytes_per_token_;
      const double flops = ctx * mla_flops_per_pair_ + full * indexer_flops_per_pair_;
      r.decode_attention_s +=
          mla_layers_ * (attention_decode_floor() + std::max(bytes / (cal_.attention_decode_eta * gpu_.hbm_bandwidth),
                                                             flops / (cal_.attention_prefill_eta * gpu_.bf16_flops)));
    }
  }
  if (state_layers_ > 0 && gdn_rows_) {
    // The measured kernels read and write the state; a prefix-cache checkpoint copy is extra.
    double per_layer = 0;
    if (b.num_decode_requests > 0) per_layer += gdn_generation_.seconds(b.num_decode_requests, 1);
    if (b.num_prefill_requests > 0)
      per_layer += gdn_context_.seconds(b.num_prefill_requests,
                                        static_cast<double>(b.num_prefill_tokens) / b.num_prefill_requests);
    r.state_s = state_layers_ * per_layer +
                2.0 * static_cast<double>(b.state_copy_bytes) / (cal_.gemm.eta_memory * gpu_.hbm_bandwidth);
  } else if (state_layers_ > 0) {
    r.state_s = state_layers_ * 2.0 * cal_.gemm.floor_s +
                (state_bytes_per_request_ * static_cast<double>(b.state_requests) +
                 2.0 * static_cast<double>(b.state_copy_bytes)) /
                    (cal_.gemm.eta_memory * gpu_.hbm_bandwidth) +
                static_cast<double>(b.num_tokens) * state_flops_per_token_ / (cal_.gemm.eta_compute * gpu_.bf16_flops);
  }
  // At the step's own size: the table is log-interpolated in bytes (allreduce_at), which read through the
  // m grid (powers of two) became linear in tokens between them (3,000 tokens at TP 2: 5 % low).
  r.allreduce_s = tp_ > 1 ? 2.0 * layers_ * allreduce_at(n) : 0.0;
  r.overhead_s = overhead_c0_ + overhead_c1_ * (b.num_decode_requests + b.num_prefill_requests);
  r.block_s = block_term_.seconds(b);
  r.parallel_s = parallel_.moe_comm_seconds(n);
  double kernels = r.linear_s + r.lm_head_s + r.moe_s + r.prefill_attention_s + r.decode_attention_s + r.state_s +
                   r.allreduce_s + r.parallel_s;
  // An eager prefill forward takes at least the time its launches take (the CPU, not the GPU, bounds it).
  if (b.num_prefill_tokens > 0 && eager_prefill_floor_s_ > kernels) {
    r.eager_floor_s = eager_prefill_floor_s_ - kernels;
    kernels = eager_prefill_floor_s_;
  }
  const double t = kernels + r.overhead_s;
  // The block term is 0 at the tables' block size (64), which leaves t untouched there.
  r.total = duration_from_seconds(r.block_s == 0.0 ? t : std::max(0.0, t + r.block_s));
  return r;
}

Duration CalibratedLatencyModel::step_time(const BatchShape& batch) const { return breakdown(batch).total; }

}  // namespace kvsim
