#include "sim/perf/latency_factory.h"

#include "sim/core/errors.h"
#include "sim/perf/calibrated_model.h"
#include "sim/perf/cuda_graph.h"
#include "sim/perf/latency_tables.h"
#include "sim/perf/roofline_model.h"

namespace kvsim {

double checkpoint_weight_bits(const ModelSpec& m) {
  if (!m.quant.quantized() || !m.quant.understood || m.quantized_params <= 0) return 0.0;
  const double kept = static_cast<double>(m.params + m.vision_params - m.quantized_params);
  return (static_cast<double>(m.checkpoint_weight_bytes) - 2.0 * kept) * 8.0 / static_cast<double>(m.quantized_params);
}

std::unique_ptr<ILatencyModel> make_latency_model(const LatencyModelSpec& spec, const ModelSpec& model,
                                                  const GpuSpec& gpu, const std::string& key) {
  const bool term = spec.block_cost && spec.block_size > 0;
  if (spec.name == "roofline") {
    const PagedBlockTerm block = term && spec.default_block_size > 0
                                     ? PagedBlockTerm(model, spec.tp, spec.block_size, spec.default_block_size)
                                     : PagedBlockTerm();
    return std::make_unique<RooflineLatencyModel>(model, gpu, spec.tp, spec.weight_dtype, spec.kv_dtype, block,
                                                  spec.weight_bits);
  }
  if (spec.name == "calibrated") {
    const LatencyTables tables = load_latency_tables(spec.tables_dir, gpu.name);
    const PagedBlockTerm block =
        term ? PagedBlockTerm(model, spec.tp, spec.block_size, kCalibrationTablesBlockSize) : PagedBlockTerm();
    // vLLM pads each step to its captured CUDA-graph sizes; SGLang and TensorRT-LLM capture other sizes
    // (not modelled: no padding).
    std::vector<int64_t> sizes;
    if (spec.engine_kind == "vllm")
      sizes = vllm_cudagraph_capture_sizes(spec.max_num_seqs, spec.max_num_batched_tokens);
    return std::make_unique<CalibratedLatencyModel>(model, gpu, spec.tp, spec.weight_dtype, spec.kv_dtype, tables,
                                                    engine_overhead(spec.tables_dir, spec.engine_kind), block,
                                                    std::move(sizes), spec.weight_bits);
  }
  throw InputError(key + ": unknown model '" + spec.name + "' (known: calibrated, roofline)");
}

}  // namespace kvsim
