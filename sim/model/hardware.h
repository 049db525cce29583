#pragma once
// Hardware catalog entries as plain structs. The YAML files in models/hardware/ are read by
// scenario/hardware_catalog.h (yaml-cpp stays in scenario/); everything else sees these structs.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/core/time.h"

namespace kvsim {

struct GpuSpec {
  std::string name;          // catalog key, e.g. "h100-sxm"
  std::string display_name;  // "NVIDIA H100 SXM 80GB"
  int64_t memory_bytes = 0;  // total memory as the engine sees it (torch.cuda.mem_get_info total)
  double bf16_flops = 0;     // dense peak, FLOP/s
  double fp8_flops = 0;      // dense peak, FLOP/s (0 when unsupported)
  double fp4_flops = 0;
  double hbm_bandwidth = 0;     // bytes/s
  double nvlink_bandwidth = 0;  // bytes/s per direction per GPU (0 when none)
  double pcie_bandwidth = 0;    // bytes/s per direction, host link
  // GPUs that one NVLink fabric joins across nodes (GB200 / GB300 NVL72: 72); 0: NVLink ends at the
  // node (engine.gpus_per_node). Inside it, traffic between nodes stays on NVLink (nvlink_domain()).
  int nvlink_domain = 0;
  // Roofline efficiencies (fraction of peak) and floors used by the first latency model.
  double compute_efficiency = 0.7;
  double memory_efficiency = 0.8;
  Duration kernel_floor = Duration::us(3);
  Duration step_overhead = Duration::us(3000);  // per-step CPU/launch overhead (vLLM)
  double activation_reserve_fraction = 0.0;     // see sizing: activation + CUDA graph reserve
  std::map<std::string, std::string> sources;   // field -> source of the number
};

struct LinkSpec {
  std::string name;  // "nvlink4", "pcie5-x16", "ib-ndr", "roce-400", "eth-100g"
  std::string display_name;
  double line_rate = 0;  // bytes/s per direction
  double achieved_fraction = 1.0;
  Duration latency;  // fixed per-transfer latency
  std::map<std::string, std::string> sources;
  double effective_bandwidth() const { return line_rate * achieved_fraction; }
};

struct TierSpec {
  std::string name;  // "host-dram", "nvme-gen4", "remote-rdma"
  std::string display_name;
  double read_bandwidth = 0;  // bytes/s (effective)
  double write_bandwidth = 0;
  Duration latency;
  int64_t capacity_bytes = 0;
  std::map<std::string, std::string> sources;
};

struct HardwareCatalog {
  std::map<std::string, GpuSpec> gpus;
  std::map<std::string, LinkSpec> links;
  std::map<std::string, TierSpec> tiers;
  // Lookups throw InputError listing the known names.
  const GpuSpec& gpu(const std::string& name) const;
  const LinkSpec& link(const std::string& name) const;
  const TierSpec& tier(const std::string& name) const;
};

}  // namespace kvsim
