#pragma once
// resolve_parallel_plan: one engine's parallel settings and the hardware catalog's link figures ->
// the ParallelPlan the latency models price (sim/perf/parallel_terms.h).
#include <string>

#include "sim/engine/engine_settings.h"
#include "sim/model/hardware.h"
#include "sim/perf/parallel_terms.h"

namespace kvsim {

// intra_node_link "auto": the catalog's NVLink whose line rate is the GPU's nvlink_bandwidth, else the
// PCIe link whose line rate is its pcie_bandwidth. Each link costs latency + bytes / (line rate x
// achieved fraction) (models/hardware/links.yaml). Throws InputError "<key>.<name>: ..." for an unknown
// link or backend. `key` is "<file>: <engine key>".
ParallelPlan resolve_parallel_plan(const EngineSettings& e, const GpuSpec& gpu, const HardwareCatalog& hw,
                                   const std::string& key);

}  // namespace kvsim
