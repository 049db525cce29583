#include "sim/app/parallel_plan.h"

#include "sim/core/errors.h"
#include "sim/engine/engine_resolution.h"

namespace kvsim {
namespace {

LinkCost link_cost(const LinkSpec& l) { return {l.effective_bandwidth(), l.latency.seconds()}; }

const LinkSpec& named_link(const HardwareCatalog& hw, const std::string& name, const std::string& key) {
  try {
    return hw.link(name);
  } catch (const InputError& err) {
    throw InputError(key + ": " + err.what());
  }
}

}  // namespace

ParallelPlan resolve_parallel_plan(const EngineSettings& e, const GpuSpec& gpu, const HardwareCatalog& hw,
                                   const std::string& key) {
  ParallelPlan p;
  p.tp = e.tensor_parallel_size;
  p.dp = e.data_parallel_size;
  p.pp = e.pipeline_parallel_size;
  p.expert_parallel = e.enable_expert_parallel || e.expert_parallel_size > 0;
  p.ep = e.expert_parallel_size;
  p.all2all_backend = e.all2all_backend;
  if (is_dispatch_combine_backend(p.all2all_backend, key + ".all2all_backend") && p.dp > 1 && p.ep > 0 &&
      p.ep != p.dp * p.tp)
    throw InputError(key + ".all2all_backend: " + p.all2all_backend + " dispatches and combines with vLLM's EP size " +
                     "dp x tp = " + std::to_string(p.dp * p.tp) + ", not expert_parallel_size " + std::to_string(p.ep) +
                     "; use allgather_reducescatter");
  p.gpus_per_node = nvlink_domain(e, gpu);  // the NVLink domain: a rack-scale one spans the nodes
  const int gpus = p.tp * p.dp * p.pp;
  const bool needs_links = p.dp > 1 || p.pp > 1 || p.tp > p.gpus_per_node;
  if (!needs_links) return p;  // the models price nothing new: the links are not read
  if (e.intra_node_link != "auto") {
    p.intra = link_cost(named_link(hw, e.intra_node_link, key + ".intra_node_link"));
    p.intra_nvlink = e.intra_node_link.starts_with("nvlink");
  } else {
    // The catalog iterates in name order, so the match is deterministic.
    const LinkSpec* found = nullptr;
    for (const auto& [name, l] : hw.links)
      if (!found && name.starts_with("nvlink") && gpu.nvlink_bandwidth > 0 && l.line_rate == gpu.nvlink_bandwidth)
        found = &l;
    for (const auto& [name, l] : hw.links)
      if (!found && name.starts_with("pcie") && gpu.pcie_bandwidth > 0 && l.line_rate == gpu.pcie_bandwidth) found = &l;
    if (!found)
      throw InputError(key + ".intra_node_link: no link in the catalog matches " + gpu.name +
                       "'s NVLink or PCIe bandwidth; name one (models/hardware/links.yaml)");
    p.intra = link_cost(*found);
    p.intra_nvlink = found->name.starts_with("nvlink");
  }
  if (gpus > p.gpus_per_node) p.inter = link_cost(named_link(hw, e.inter_node_link, key + ".inter_node_link"));
  return p;
}

}  // namespace kvsim
