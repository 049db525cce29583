#pragma once
// make_latency_model: the step-time model one engine runs with, by name. A registry of two: "roofline"
// (sim/perf/roofline_model.h) and "calibrated" (calibrated_model.h, tables from `tables_dir`).
#include <memory>
#include <string>

#include "sim/model/dtype.h"
#include "sim/model/hardware.h"
#include "sim/model/model_spec.h"
#include "sim/perf/i_latency_model.h"
#include "sim/perf/parallel_terms.h"

namespace kvsim {

struct LatencyModelSpec {
  std::string name = "roofline";  // roofline | calibrated
  int tp = 1;
  DType weight_dtype = DType::kBf16;
  DType kv_dtype = DType::kBf16;
  std::string tables_dir;      // calibrated: the latency tables folder (models/latency)
  std::string engine_kind;     // calibrated: whose per-step overhead (vllm | sglang | trtllm)
  std::string engine_version;  // calibrated: its release, for the version-dependent terms (empty: current)
  // The block-size term (paged_block_term.h). block_size 0, block_cost false or engine_kind "sglang"
  // (page-1-native kernels, latency_factory.cpp block_term_applies): no term.
  int block_size = 0;
  // The roofline's reference: the block size the engine resolves by default for this model. The
  // calibrated model always uses kCalibrationTablesBlockSize.
  int default_block_size = 0;
  bool block_cost = true;
  // CUDA-graph padding (cuda_graph.h), calibrated model, engine_kind "vllm" only: the scheduler limits
  // the capture sizes derive from. 0 = no padding.
  int max_num_seqs = 0;
  int max_num_batched_tokens = 0;
  // Bits per quantised weight, scales included, when the weights are served as the checkpoint stores
  // them (checkpoint_weight_bits); 0 = the dtype's default (weight_bits_per_element).
  double weight_bits = 0;
  // The checkpoint quantises the routed experts only (checkpoint_dense_weights_16bit): the calibrated
  // model prices attention, dense MLP, shared-expert and LM-head GEMMs in BF16, the experts in
  // weight_dtype.
  bool dense_weights_16bit = false;
  // FP8 weights with block scales (fp8_block_scaled, sizing.h): the calibrated model reads the tables'
  // block-scaled FP8 rows (with_block_fp8_rows) where the GPU has them.
  bool fp8_block_scaled = false;
  // The routing of the fused-MoE rows the calibrated model reads (load_latency_tables): "balanced" or a
  // resolved power-law exponent (resolve_moe_routing).
  std::string moe_routing = "balanced";
  // engine.mla_attention module_rows: the calibrated model prices MLA layers of the DeepSeek-V3 shape from
  // the measured attention-module rows (mla_module_table.h) instead of its roofline. Off by default:
  // tested, not adopted (models/latency/README.md, "MLA attention-module rows").
  bool mla_module_rows = false;
  // engine.mla_attention auto (default) or module_rows: GLM-5's DSA layers decode from its measured DSA
  // module rows (dsa_generation.csv) where the GPU has them; roofline: they do not.
  bool dsa_module_rows = false;
  // DP / EP / PP and the links between GPUs (parallel_terms.h); parallel.tp is set from `tp`. PP > 1
  // builds a PipelineLatencyModel over one model per stage (pipeline_model.h).
  ParallelPlan parallel;
};

// Bits per quantised weight of the checkpoint, scales and zero points included, from what sizing read
// out of config.json's quantization_config (ModelSpec::checkpoint_weight_bytes, quantized_params):
// (checkpoint bytes - 2 x unquantised parameters) x 8 / quantised parameters. 0 when nothing is
// quantised. E.g. gpt-oss MXFP4 (E8M0 scale per 32) 4.25; DeepSeek-V3 FP8 with 128 x 128 FP32 block
// scales 8 + 32 / 16384. The calibrated model applies it to the quantised weights (the dense GEMMs too
// unless dense_weights_16bit), the roofline to every linear weight.
double checkpoint_weight_bits(const ModelSpec& model);
// Whether the checkpoint quantises only the routed experts, every other linear layer kept in 16 bits
// (gpt-oss: modules_to_not_convert lists self_attn, router, embed and lm_head).
bool checkpoint_dense_weights_16bit(const ModelSpec& model);

// The block size aiconfigurator's vLLM attention collector ran at (collector/vllm/collect_attn.py:
// block_size = 64), i.e. the block size the calibrated attention tables describe.
inline constexpr int kCalibrationTablesBlockSize = 64;

// Throws InputError "<key>: unknown model 'x' (known: calibrated, roofline)" for an unknown name, and
// whatever the chosen model's constructor throws for a model or GPU it cannot price.
std::unique_ptr<ILatencyModel> make_latency_model(const LatencyModelSpec& spec, const ModelSpec& model,
                                                  const GpuSpec& gpu, const std::string& key);

}  // namespace kvsim
