#pragma once
// Loads the hardware catalog (GPUs, links, storage tiers) from a directory of YAML files, by
// default models/hardware/. yaml-cpp is used only here; the rest of the simulator sees the plain
// structs of sim/model/hardware.h.
//
// Every *.yaml file in the directory (not subdirectories; *.yml and other names are ignored) is
// read in sorted file-name order. Each file has a top-level `kind` that says what it holds:
//
//   kind: gpu       one GPU; the other top-level keys are its fields:
//     name                catalog key; must equal the file name without .yaml ("h100-sxm")
//     display_name        free text
//     memory              bytes as the engine sees them (nvidia-smi / torch total), "81559MiB"
//     bf16_flops          dense peak, "989TFLOP/s"
//     fp8_flops           dense peak, or "none" when unsupported (stored as 0)
//     fp4_flops           dense peak, or "none"
//     hbm_bandwidth       "3.35TB/s"
//     nvlink_bandwidth    per direction per GPU, or "none" when the GPU has no scale-up link
//     pcie_bandwidth      host link line rate per direction, "64GB/s"
//     nvlink_domain       optional: GPUs one NVLink fabric joins across nodes (72 on GB200 / GB300
//                         NVL72), 2 to 2^20, needs nvlink_bandwidth; absent: NVLink ends at the node
//     compute_efficiency  fraction of peak FLOP/s, in [0.01, 1]
//     memory_efficiency   fraction of peak HBM bandwidth, in [0.01, 1]
//     kernel_floor        per-kernel latency floor, "3us"
//     step_overhead       per engine step CPU/launch overhead, "2ms"
//     activation_reserve  bytes kept for activations + CUDA graphs, "3.5GiB"; stored in
//                         GpuSpec::activation_reserve_fraction as activation_reserve / memory
//     sources             map: one non-empty entry for every field above except name and
//                         display_name (nvlink_domain only when given), and no others
//   kind: links     `links:` map of name -> {display_name, line_rate, achieved_fraction [0.01, 1],
//                   latency, sources{line_rate, achieved_fraction, latency}}
//   kind: tiers     `tiers:` map of name -> {display_name, read_bandwidth, write_bandwidth, latency,
//                   capacity, sources{read_bandwidth, write_bandwidth, latency, capacity}}
//
// Every key but nvlink_domain is required, unknown keys are rejected, and a name defined twice (in one file or
// across files) is an error. Errors are InputError with the file and key path, e.g.
//   models/hardware/h100-sxm.yaml: hbm_bandwidth: cannot parse '3.35TB' as bandwidth with a /s unit
//   models/hardware/links.yaml: links.nvlink4.sources: missing key 'latency'
#include <string>

#include "sim/model/hardware.h"

namespace kvsim {

// The catalog directory relative to the repository root. The library does not search for it:
// callers (the app, tests) pass the directory they want.
inline constexpr const char* kDefaultHardwareDir = "models/hardware";

// Reads every *.yaml file in `dir` (see above). Throws InputError when the directory is missing,
// holds no *.yaml file, or any file is malformed.
HardwareCatalog load_hardware_catalog(const std::string& dir);

}  // namespace kvsim
