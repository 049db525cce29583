#pragma once
// CalibratedLatencyModel: one engine step (per GPU of a TP group) as a sum of operators priced from
// measured tables (models/latency/<gpu>/) where they cover the shape, else from a roofline whose
// efficiencies are fitted on the same tables (sim/perf/calibration.h), plus a per-step engine
// overhead (models/latency/overhead.csv):
//
//   t = L(N) + H(S) + sum_moe_layers MoE(N) + A_prefill + A_decode + State + AR(N) + c0 + c1 * R
//
//   L(N)  all token-level work as one pre-tabulated curve of N = num_tokens: per layer the QKV and
//         output projections (GQA layers, the query twice as wide with a gated output; MLA and state
//         layers get one GEMM of k = hidden whose width is their share of the remaining active
//         parameters, the MLA latent down-projections and DSA indexer whole on every TP rank), dense MLP
//         (gate+up, down) or the MoE router (always BF16) and shared expert, four memory-bound
//         element-wise kernels (norms, rope + cache write, activation; bytes / (eta_m * BW) + floor
//         each); plus the embedding gather.
//         GEMMs come from GemmTable (exact at measured points, utilisation held beyond the grid):
//         FP8 weights use the GPU's measured FP8 GEMM rows where it has them (gemm_fp8.csv), other
//         formats scale the BF16 time above the fitted per-call floor by SOL(dtype) / SOL(bf16), with
//         the format's stored bytes per weight, scales included (INT4 4.125, MXFP4 4.25, NVFP4 4.5 bits).
//   H(S)  LM head GEMM over S = sampled tokens (decode requests + prefill requests), in BF16.
//   MoE   fused expert kernel per MoE layer from the GPU's MoE table (moe_table.h: measured
//         utilisation at balanced routing's N k / E tokens per expert, FP8 rows for FP8 experts), else
//         per_call + per_byte * (touched experts' weights + activations) + per_flop * 6 N k h I / TP
//         on the fitted roofline (uniform routing, no expert parallelism); a table-priced call is no
//         faster than the table's fastest row.
//   A     per attention layer: GQA/sliding from fits of the attention tables for the layer's per-GPU
//         shape (prefill a + b * pairs + c * tokens; decode a + b * batch + c * sum context), a shape
//         without rows by roofline whose decode is no faster than the GPU's fastest decode row;
//         MLA layers by roofline with the tables' achieved attention efficiencies (the same decode
//         floor); with
//         engine.mla_attention module_rows, those of the DeepSeek-V3 shape (Kimi-K2.5 too) from the
//         measured attention-module rows (mla_module_table.h: projections + attention + o_proj, so their
//         projections leave L(N)); with auto (default) or module_rows, GLM-5's DSA layers decode from
//         its measured DSA module rows (projections + indexer + sparse attention + o_proj; prefill stays
//         on the roofline).
//   State Mamba2 / gated-DeltaNet recurrent state read + write per request and scan FLOPs per token,
//         fitted roofline plus two kernel floors per layer; gated-DeltaNet layers of a shape SGLang's
//         GDN kernel rows cover: those rows (conv1d + delta rule, decode and prefill).
//   AR    TP all-reduce, two per layer, message N * hidden * 2 bytes, from the vLLM custom all-reduce
//         table (log-interpolated in size, bus bandwidth held beyond it), else an alpha-beta formula;
//         through the NIC when TP spans nodes (parallel_terms.h).
//   DP/EP the experts see DP x N tokens and hold 1/(DP x TP) of each expert (ceil(E/EP) whole experts
//         with EP); ParallelTerms adds the MoE all-gather / all-to-all. PP: pipeline_model.h.
//   R     requests in the step (c0, c1 per engine).
//   N     vLLM pads the step's tokens to its next CUDA-graph capture size (cuda_graph.h) for L, MoE
//         and AR; H and attention see the real batch. Decode attention's KV term scales with the KV
//         dtype (the tables are BF16-cache).
// Every batch-independent term is built in the constructor; step_time() is a handful of lookups.
#include <optional>
#include <string>
#include <vector>

#include "sim/model/dtype.h"
#include "sim/model/hardware.h"
#include "sim/model/model_spec.h"
#include "sim/perf/calibration.h"
#include "sim/perf/gemm_table.h"
#include "sim/perf/i_latency_model.h"
#include "sim/perf/latency_tables.h"
#include "sim/perf/mla_module_table.h"
#include "sim/perf/moe_table.h"
#include "sim/perf/paged_block_term.h"
#include "sim/perf/parallel_terms.h"

namespace kvsim {

struct CalibratedBreakdown {
  double linear_s = 0;  // L(N): GEMMs, element-wise kernels, embedding
  double lm_head_s = 0;
  double moe_s = 0;
  double prefill_attention_s = 0;
  double decode_attention_s = 0;
  double state_s = 0;
  double allreduce_s = 0;
  double overhead_s = 0;
  double block_s = 0;         // PagedBlockTerm: the block size against the tables' 64 (0 there)
  double parallel_s = 0;      // ParallelTerms: MoE all-gather / all-to-all of DP (0 without DP)
  double eager_floor_s = 0;   // what the eager-prefill floor (EngineOverhead) added to the kernels' sum
  int64_t padded_tokens = 0;  // num_tokens after CUDA-graph padding (= num_tokens when not padded)
  Duration total;
};

// The key of a gated-DeltaNet layer's local kernel shape in the GDN rows, "k<key heads>x<key dim>_v<value
// heads>x<value dim>" with the heads on one GPU of `tp`; "" when the heads do not divide by tp.
std::string gdn_kernel_shape(const StateShape& s, int tp);

class CalibratedLatencyModel final : public ILatencyModel {
 public:
  // Throws InputError when the spec or GPU lacks what the model needs.
  CalibratedLatencyModel(const ModelSpec& model, const GpuSpec& gpu, int tp, DType weight_dtype, DType kv_dtype,
                         const LatencyTables& tables, const EngineOverhead& overhead, PagedBlockTerm block_term = {},
                         const ParallelPlan& parallel = {}, std::vector<int64_t> cudagraph_sizes = {},
                         double weight_bits = 0, bool dense_weights_16bit = false, bool mla_module_rows = false,
                         bool dsa_module_rows = false);

  Duration step_time(const BatchShape& batch) const override;
  std::string name() const override { return "calibrated"; }
  CalibratedBreakdown breakdown(const BatchShape& batch) const;

  const GpuCalibration& calibration() const { return cal_; }
  bool uses_tables() const { return !gemm_.empty(); }
  // One GEMM C[m x n] = A[m x k] B[k x n] with the model's weight dtype, seconds: the measured table of
  // the weights' format where the GPU has one (FP8 per-tensor, or block-scaled when the tables passed are
  // with_block_fp8_rows'; NVFP4 x NVFP4 for nvfp4 / fp4 weights on a GPU with an FP4 peak), else the BF16
  // table scaled by SOL(dtype) / SOL(bf16), else the fitted roofline. Weight bytes include the format's
  // scales (weight_bits_per_element).
  double gemm_seconds(double m, double n, double k) const;
  double bf16_gemm_seconds(double m, double n, double k) const;
  bool uses_quantised_gemm_table() const { return !gemm_quant_.empty(); }
  bool uses_moe_table() const { return !moe_table_.empty(); }
  // mla_module_rows (engine.mla_attention module_rows) and the model, GPU, format and head count have rows.
  bool uses_mla_module_table() const { return mla_module_; }
  // The same option on a model whose attention layers are all DSA layers of GLM-5's shape
  // (dsa_module_shape) with rows for its format, cache dtype and local heads: decode from dsa_generation.csv.
  bool uses_dsa_module_table() const { return dsa_module_; }
  // Every state layer is gated DeltaNet of one local shape the GDN kernel rows cover (gdn_kernel_shape).
  bool uses_gdn_kernel_rows() const { return gdn_rows_; }
  // The compute and memory limits of the hardware file for the dense GEMMs' weights (for tests).
  PeakRates peak_rates() const { return weight_peak_; }
  // The token-level GEMMs of one step (n, k, count per step, kept in BF16), for tests.
  struct GemmShape {
    double n, k, count;
    bool bf16;
  };
  std::vector<GemmShape> token_gemm_shapes() const {
    std::vector<GemmShape> v;
    for (const Gemm& g : token_gemms_) v.push_back({g.n, g.k, g.count, g.bf16});
    return v;
  }

 private:
  // The per-call floor of a decode-attention kernel priced by roofline (a shape without rows, MLA): the
  // fastest decode row of the GPU's tables, else the GEMM floor.
  double attention_decode_floor() const {
    return cal_.attention_decode_floor_s > 0 ? cal_.attention_decode_floor_s : cal_.gemm.floor_s;
  }
  // One module-rows layer's decode in step b (MLA or DSA rows, their one-request floor).
  double module_decode_seconds(const MlaModuleTable& rows, double floor_s, const BatchShape& b) const;
  struct AttentionGroup {  // layers sharing one per-GPU shape
    int layers = 0;
    int window = 0;
    std::optional<PrefillAttentionFit> prefill;
    std::optional<DecodeAttentionFit> decode;
    double flops_per_pair = 0;  // roofline fallback
    double kv_bytes_per_token = 0;
  };
  double linear_at(double m) const;  // everything in L(N), computed directly (used to tabulate)
  double allreduce_at(double tokens) const;
  double attention_prefill(const AttentionGroup& g, const BatchShape& b) const;
  double attention_decode(const AttentionGroup& g, const BatchShape& b) const;

  GpuSpec gpu_;
  double tp_ = 1;
  PagedBlockTerm block_term_;
  GpuCalibration cal_;
  GemmTable gemm_;
  GemmTable gemm_quant_;                  // the weights' format measured (FP8 / block FP8 / NVFP4 rows)
  MoeTable moe_table_;                    // measured fused-MoE table (empty: fitted roofline)
  std::vector<int64_t> cudagraph_sizes_;  // vLLM capture sizes (empty: no padding)
  double kv_scale_ = 1;                   // KV bytes per element / 2 (BF16-cache decode fits)
  PeakRates bf16_peak_;
  PeakRates weight_peak_;  // the dense GEMMs' weights (BF16 when the checkpoint keeps them in 16 bits)
  PeakRates expert_peak_;  // the routed experts' weights
  double hidden_ = 0;
  double memory_op_bytes_per_token_ = 0;  // element-wise kernels, per step, per token
  int memory_ops_ = 0;                    // element-wise kernels per step
  struct Gemm {
    double n, k, count;
    bool bf16 = false;  // kept in 16 bits whatever the weights' format (the MoE router)
  };
  std::vector<Gemm> token_gemms_;
  double vocab_ = 0;
  std::vector<AttentionGroup> attention_;
  int mla_layers_ = 0;
  double mla_flops_per_pair_ = 0, mla_kv_bytes_per_token_ = 0;
  double mla_prefill_flops_per_pair_ = 0;  // dense MLA prefill: MHA on up-projected keys and values
  bool mla_module_ = false;                // MLA layers priced by the module rows (mla_context_, mla_generation_)
  MlaModuleTable mla_context_, mla_generation_;
  double mla_module_floor_s_ = 0;  // generation row at batch 1, context 2: what a mixed step shares
  // DSA decode module rows (GLM-5): the DSA layers' projections then run as GEMMs for prefill tokens only.
  bool dsa_module_ = false;
  MlaModuleTable dsa_generation_;
  Curve1D dsa_projection_curve_;
  // Gated DeltaNet state kernels from the rows (gdn_context_, gdn_generation_).
  bool gdn_rows_ = false;
  MlaModuleTable gdn_context_, gdn_generation_;  // the DSA layers' projection GEMMs at m tokens (with dsa_module_)
  bool sparse_mla_ = false;                      // DeepSeek-V3.2 DSA: main attention over the top-k keys
  double indexer_flops_per_pair_ = 0;            // lightning indexer, per query-key pair, per rank
  double indexer_bytes_per_token_ = 0;           // indexer key bytes read per context token
  int moe_layers_ = 0;
  int num_experts_ = 0, topk_ = 0;
  double expert_bytes_ = 0, moe_inter_ = 0;  // moe_inter_: per GPU, after the moe-TP split
  int moe_ep_ = 1;                           // EP size
  MoeFit moe_fit_;
  int state_layers_ = 0;
  double state_bytes_per_request_ = 0, state_flops_per_token_ = 0;
  std::vector<AllReducePoint> allreduce_points_;  // this TP size, sorted by bytes
  int layers_ = 0;
  double overhead_c0_ = 0, overhead_c1_ = 0;
  double eager_prefill_floor_s_ = 0;  // layers x EngineOverhead::eager_prefill_per_layer_s (MoE models)
  Curve1D linear_curve_, lm_head_curve_;
  ParallelTerms parallel_;
  double dp_ = 1;  // DP ranks whose tokens meet at the experts
};

}  // namespace kvsim
