#include "sim/perf/latency_factory.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "sim/core/errors.h"
#include "sim/model/parallel_layout.h"
#include "sim/perf/calibrated_model.h"
#include "sim/perf/cuda_graph.h"
#include "sim/perf/latency_tables.h"
#include "sim/perf/pipeline_model.h"
#include "sim/perf/roofline_model.h"

namespace kvsim {
namespace {

// The calibrated model's tables for this GPU, MoE routing and weight format.
LatencyTables tables_for(const LatencyModelSpec& spec, const ModelSpec& model, const GpuSpec& gpu) {
  LatencyTables t = load_latency_tables(spec.tables_dir, gpu.name, spec.moe_routing);
  const bool dsa = std::any_of(model.layers.begin(), model.layers.end(),
                               [](const LayerSpec& l) { return l.kind == LayerKind::kSparseMla; });
  if (spec.mla_module_rows)
    t = with_mla_module_rows(std::move(t));
  else if (spec.dsa_module_rows && dsa)
    t = with_dsa_module_rows(std::move(t));  // a default run of another model parses nothing more
  return spec.fp8_block_scaled ? with_block_fp8_rows(std::move(t)) : t;
}

// vLLM pads each step to its captured CUDA-graph sizes (cuda_graph.h); SGLang and TensorRT-LLM capture
// other sizes (not modelled: no padding).
std::vector<int64_t> capture_sizes(const LatencyModelSpec& spec) {
  if (spec.engine_kind != "vllm") return {};
  return vllm_cudagraph_capture_sizes(spec.max_num_seqs, spec.max_num_batched_tokens);
}

// Whether the step prices the block size (paged_block_term.h). Not for SGLang: its attention backends
// (FA3 on Hopper, the one measured) read the page table token by token, page 1 being SGLang's default
// (server_args page_size), and measure no page-size cost. aiconfigurator's SGLang 0.5.14 H200 decode rows,
// collected at page 1 (collector/sglang/collect_attn.py: page_size = 1 unless trtllm_mha, commit e23be5a79),
// are 0.94 x its vLLM 0.19.0 rows at block 64 at the median over 2,811 shared shapes (0.98-1.07 x at
// batch >= 64, where the KV read dominates), against the 2-3 x the FlashAttention per-page term gives
// page 1; its SGLang 0.5.6.post2 rows at page 64 are no faster than page 1 (models/latency/README.md,
// "SGLang pages").
bool block_term_applies(const LatencyModelSpec& spec) {
  return spec.block_cost && spec.block_size > 0 && spec.engine_kind != "sglang";
}

// The next stage's all-gather of the TP slices: NVLink inside a node; a TP group across nodes rings
// over the node's NICs as the TP all-reduce does (min(NVLink, G x NIC)).
LinkCost gather_link(const ParallelPlan& plan) {
  if (plan.tp <= plan.node_size()) return plan.intra;
  LinkCost l = plan.inter;
  l.bandwidth = std::min(plan.intra.bandwidth, plan.node_size() * plan.inter.bandwidth);
  return l;
}

// One model per pipeline stage, without the per-step overhead (the pipeline adds it once per step).
std::unique_ptr<ILatencyModel> make_pipeline(const LatencyModelSpec& spec, const ModelSpec& model, const GpuSpec& gpu,
                                             const ParallelPlan& plan) {
  const bool term = block_term_applies(spec);
  const std::vector<StageRange> ranges = pipeline_stages(static_cast<int>(model.layers.size()), plan.pp);
  std::vector<PipelineStage> stages;
  std::vector<LinkCost> sends;
  StepOverhead overhead;
  std::optional<LatencyTables> tables;
  EngineOverhead engine;
  if (spec.name == "calibrated") {
    tables = tables_for(spec, model, gpu);
    engine = overhead_for_version(engine_overhead(spec.tables_dir, spec.engine_kind), spec.engine_version);
    overhead.fixed_s = engine.c0_s;
    overhead.per_request_s = engine.c1_s;
  } else {
    overhead.fixed = gpu.step_overhead;
  }
  GpuSpec stage_gpu = gpu;
  stage_gpu.step_overhead = Duration::zero();
  EngineOverhead no_overhead = engine;
  no_overhead.c0_s = no_overhead.c1_s = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const ModelSpec sm = stage_model(model, ranges[i], i + 1 == ranges.size());
    PipelineStage st;
    if (tables) {
      const PagedBlockTerm block =
          term ? PagedBlockTerm(sm, spec.tp, spec.block_size, kCalibrationTablesBlockSize) : PagedBlockTerm();
      st.model = std::make_unique<CalibratedLatencyModel>(
          sm, stage_gpu, spec.tp, spec.weight_dtype, spec.kv_dtype, *tables, no_overhead, block, plan,
          capture_sizes(spec), spec.weight_bits, spec.dense_weights_16bit, spec.mla_module_rows, spec.dsa_module_rows);
    } else {
      const PagedBlockTerm block = term && spec.default_block_size > 0
                                       ? PagedBlockTerm(sm, spec.tp, spec.block_size, spec.default_block_size)
                                       : PagedBlockTerm();
      st.model = std::make_unique<RooflineLatencyModel>(sm, stage_gpu, spec.tp, spec.weight_dtype, spec.kv_dtype, block,
                                                        plan, spec.weight_bits);
    }
    stages.push_back(std::move(st));
    if (i + 1 < ranges.size()) {
      // Stage i's first GPU and stage i + 1's (DP rank 0): vLLM ranks are (dp, pp, tp), TP innermost.
      const int a = static_cast<int>(i) * plan.tp, b = static_cast<int>(i + 1) * plan.tp;
      sends.push_back(a / plan.node_size() == b / plan.node_size() ? plan.intra : plan.inter);
    }
  }
  return std::make_unique<PipelineLatencyModel>(std::move(stages), std::move(sends),
                                                static_cast<double>(model.hidden_size), overhead, spec.name, plan.tp,
                                                gather_link(plan));
}

}  // namespace

double checkpoint_weight_bits(const ModelSpec& m) {
  if (!m.quant.quantized() || !m.quant.understood || m.quantized_params <= 0) return 0.0;
  const double kept = static_cast<double>(m.params + m.vision_params - m.quantized_params);
  return (static_cast<double>(m.checkpoint_weight_bytes) - 2.0 * kept) * 8.0 / static_cast<double>(m.quantized_params);
}

bool checkpoint_dense_weights_16bit(const ModelSpec& m) {
  return m.quant.quantized() && m.quant.understood && m.quantized_params > 0 && m.quantized_dense_params == 0;
}

std::unique_ptr<ILatencyModel> make_latency_model(const LatencyModelSpec& spec, const ModelSpec& model,
                                                  const GpuSpec& gpu, const std::string& key) {
  const bool term = block_term_applies(spec);
  ParallelPlan plan = spec.parallel;
  plan.tp = spec.tp;
  if (spec.name != "roofline" && spec.name != "calibrated")
    throw InputError(key + ": unknown model '" + spec.name + "' (known: calibrated, roofline)");
  if (plan.pp > 1) return make_pipeline(spec, model, gpu, plan);
  if (spec.name == "roofline") {
    const PagedBlockTerm block = term && spec.default_block_size > 0
                                     ? PagedBlockTerm(model, spec.tp, spec.block_size, spec.default_block_size)
                                     : PagedBlockTerm();
    return std::make_unique<RooflineLatencyModel>(model, gpu, spec.tp, spec.weight_dtype, spec.kv_dtype, block, plan,
                                                  spec.weight_bits);
  }
  const LatencyTables tables = tables_for(spec, model, gpu);
  const PagedBlockTerm block =
      term ? PagedBlockTerm(model, spec.tp, spec.block_size, kCalibrationTablesBlockSize) : PagedBlockTerm();
  return std::make_unique<CalibratedLatencyModel>(
      model, gpu, spec.tp, spec.weight_dtype, spec.kv_dtype, tables,
      overhead_for_version(engine_overhead(spec.tables_dir, spec.engine_kind), spec.engine_version), block, plan,
      capture_sizes(spec), spec.weight_bits, spec.dense_weights_16bit, spec.mla_module_rows, spec.dsa_module_rows);
}

}  // namespace kvsim
