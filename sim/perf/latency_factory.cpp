#include "sim/perf/latency_factory.h"

#include "sim/core/errors.h"
#include "sim/perf/calibrated_model.h"
#include "sim/perf/latency_tables.h"
#include "sim/perf/roofline_model.h"

namespace kvsim {

std::unique_ptr<ILatencyModel> make_latency_model(const LatencyModelSpec& spec, const ModelSpec& model,
                                                  const GpuSpec& gpu, const std::string& key) {
  if (spec.name == "roofline")
    return std::make_unique<RooflineLatencyModel>(model, gpu, spec.tp, spec.weight_dtype, spec.kv_dtype);
  if (spec.name == "calibrated") {
    const LatencyTables tables = load_latency_tables(spec.tables_dir, gpu.name);
    return std::make_unique<CalibratedLatencyModel>(model, gpu, spec.tp, spec.weight_dtype, spec.kv_dtype, tables,
                                                    engine_overhead(spec.tables_dir, spec.engine_kind));
  }
  throw InputError(key + ": unknown model '" + spec.name + "' (known: calibrated, roofline)");
}

}  // namespace kvsim
