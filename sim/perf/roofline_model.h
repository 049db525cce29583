#pragma once
// RooflineLatencyModel: the first latency model. One step of one engine instance (per GPU of a
// tensor-parallel group of size TP) costs
//
//   t = max(t_compute, t_memory) + n_kernels * kernel_floor + t_allreduce, then + step_overhead
//
//   t_compute = (F_mm + F_state) / (eta_c * peak_w) + F_attn / (eta_c * peak_bf16)
//     F_mm    = [2 * P_tok * N + 2 * V * h * S] / TP
//               P_tok: active parameters per token without embedding lookup and LM head,
//               S: sampled tokens = decode requests + prefill requests (logits only where sampled)
//     F_attn  = sum_layers c_layer * pairs_layer / TP, pairs = prefill_attn_pairs + decode_context_tokens
//               (windowed aggregates for sliding layers); c = 4 * q_heads * head_dim for full and
//               sliding layers (QK^T and PV), c = q_heads * (2 * (kv_lora_rank + rope) + 2 * kv_lora_rank)
//               for MLA and sparse MLA (latent width; DSA top-k not modelled, so sparse MLA is priced
//               as dense MLA over the whole context)
//     F_state = N * sum_state_layers (6 * ssm_elems + 2 * conv_dim * (conv_rows + 1)) / TP
//     peak_w  = FP8 peak for FP8 weights, FP4 peak for FP4 weights (when the GPU has one), else BF16
//   t_memory  = (B_w + B_kv + B_state) / (eta_m * HBM bandwidth)
//     B_w     dense: [(params - untied embedding table - V h) * w_bytes + V h * 2] / TP (the LM head
//                    stays in 16 bits); w_bytes = weight_bits_per_element / 8, scales included:
//                    bf16 2, fp8 1, int4 (group 128, bf16 scale) 0.515625, mxfp4 (E8M0 per 32)
//                    0.53125, nvfp4 (E4M3 per 16) 0.5625
//             MoE:   non-expert weights (same rule) + n_moe_layers * E * (1 - (1 - k/E)^N) * expert_bytes, / TP
//                    (expected distinct experts touched by N tokens under uniform routing)
//     B_kv    = kv_read_full * (decode_context + prefill_context)
//               + kv_read_sliding * (decode_context_windowed + prefill_context_windowed)
//               + kv_write * N; per-token bytes per rank: full/sliding 2 * ceil(kv_heads/TP) * head_dim
//               * kv_bytes, MLA (kv_lora_rank + rope) * kv_bytes (replicated on every rank), sparse MLA
//               adds index_head_dim; layers that read another layer's cache read but do not write
//     B_state = state_requests * sum_state_layers 2 * (ssm_elems * ssm_bytes + conv_elems * 2) / TP
//               + 2 * state_copy_bytes (read and write); ssm_bytes = 4 when the config asks for float32
//   n_kernels = layers * kKernelsPerLayer + moe_layers * kExtraKernelsPerMoeLayer + kKernelsPerStep
//   t_allreduce (TP > 1) = layers * 2 * (kAllReduceLatency + 2 (TP-1)/TP * N * h * 2 bytes / link_bw),
//               link_bw = NVLink per-direction bandwidth (PCIe when the GPU has no NVLink)
//
// Not modelled: activations' memory traffic, element-wise kernels beyond the floor, overlap of the
// floor with the roofline term (the sum is pessimistic at small batches), routing imbalance. Expert and
// data parallelism change B_w (experts touched by the DP ranks' DP x N tokens, each GPU holding 1/(DP x TP)
// of every expert, or ceil(E/EP) whole experts with EP) and add ParallelTerms' MoE communication; TP
// across nodes prices t_allreduce on the NIC; pipeline parallelism wraps stage models
// (pipeline_model.h). An empty batch (N = 0) costs nothing.
// Constants from shared/reference/latency-model.md sections 2-3. Everything that does not depend on
// the batch is computed once in the constructor, so step_time() is O(1).
#include <string>

#include "sim/model/dtype.h"
#include "sim/model/hardware.h"
#include "sim/model/model_spec.h"
#include "sim/perf/i_latency_model.h"
#include "sim/perf/paged_block_term.h"
#include "sim/perf/parallel_terms.h"

namespace kvsim {

// Norm, QKV GEMM, rope + cache write, attention, O GEMM, norm, gate-up GEMM (+ activation), down GEMM.
inline constexpr int kKernelsPerLayer = 8;
// Router GEMM and top-k / token alignment.
inline constexpr int kExtraKernelsPerMoeLayer = 2;
// Embedding, final norm, LM head + sampling.
inline constexpr int kKernelsPerStep = 3;
// vLLM custom all-reduce under CUDA graphs: 4.6-5.7 us minimum (latency-model.md section 2).
inline constexpr double kAllReduceLatencySeconds = 5e-6;

// The terms of one step, for tests and diagnostics. FLOPs and bytes are per GPU (per TP rank).
struct RooflineBreakdown {
  double matmul_flops = 0;  // F_mm
  double attention_flops = 0;
  double state_flops = 0;
  double weight_bytes = 0;
  double kv_bytes = 0;
  double state_bytes = 0;
  double compute_s = 0;
  double memory_s = 0;
  double floor_s = 0;
  double allreduce_s = 0;
  double block_s = 0;     // PagedBlockTerm: the block size against the reference (0 there)
  double parallel_s = 0;  // ParallelTerms: MoE all-gather / all-to-all of DP (0 without DP)
  Duration total;
};

class RooflineLatencyModel final : public ILatencyModel {
 public:
  // Throws InputError when the spec or GPU lacks what the model needs (params, peaks, a link for TP).
  // `parallel` (parallel_terms.h): DP / EP expert shards and MoE communication, TP across nodes; its
  // default leaves the model as it was. plan.tp is ignored (`tp` rules). weight_bits > 0 replaces the
  // dtype's bits per weight (the checkpoint's own scales; see checkpoint_weight_bits in latency_factory.h).
  RooflineLatencyModel(const ModelSpec& model, const GpuSpec& gpu, int tp, DType weight_dtype, DType kv_dtype,
                       PagedBlockTerm block_term = {}, const ParallelPlan& parallel = {}, double weight_bits = 0);

  Duration step_time(const BatchShape& batch) const override;
  std::string name() const override { return "roofline"; }
  RooflineBreakdown breakdown(const BatchShape& batch) const;

  // Per-rank constants (exposed for tests).
  double weight_bytes_dense() const { return weight_bytes_fixed_; }
  double kv_read_bytes_per_token_full() const { return kv_read_full_; }
  double kv_read_bytes_per_token_sliding() const { return kv_read_sliding_; }

 private:
  double tp_;
  double flops_per_token_ = 0;   // 2 * P_tok / TP
  double flops_per_sample_ = 0;  // 2 * V * h / TP
  double attn_flops_per_pair_full_ = 0;
  double attn_flops_per_pair_sliding_ = 0;
  double attn_flops_per_pair_sparse_ = 0;  // sparse MLA main attention, over the top-k aggregates
  double state_flops_per_token_ = 0;
  double weight_bytes_fixed_ = 0;      // all weights (dense) or non-expert weights (MoE), per rank
  double expert_bytes_per_layer_ = 0;  // one expert of one MoE layer, per rank
  int moe_layers_ = 0;
  int num_experts_ = 0;
  int experts_per_token_ = 0;
  double kv_read_full_ = 0;     // bytes per context token, summed over full / MLA layers
  double kv_read_sliding_ = 0;  // same for sliding-window layers
  double kv_read_sparse_ = 0;   // sparse MLA rows, read over the top-k aggregates
  double kv_write_ = 0;         // bytes per new token, layers that own a cache
  double state_bytes_per_request_ = 0;
  double compute_rate_w_ = 0;     // eta_c * peak for weight GEMMs
  double compute_rate_bf16_ = 0;  // eta_c * BF16 peak for attention
  double memory_rate_ = 0;        // eta_m * HBM bandwidth
  double floor_s_ = 0;
  double allreduce_fixed_s_ = 0;      // per step, independent of N
  double allreduce_per_token_s_ = 0;  // per token
  Duration step_overhead_;
  PagedBlockTerm block_term_;
  ParallelTerms parallel_;
  double dp_ = 1;  // DP ranks whose tokens meet at the experts
};

}  // namespace kvsim
