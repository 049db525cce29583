#pragma once
// TierLinks: an engine's offload copies as flows over the scenario's topology (DESIGN "Tiers": stores and
// loads "as flows on the GPU's PCIe / NIC links when there is a topology"; cluster-offload.md D.6: "flow f =
// (src endpoint, dst endpoint, bytes, class) # one per (P rank, D rank) pair or per tier copy").
//  - A tier job moves bytes_rank on every rank of the engine at once: one flow per rank on that rank's
//    path, bounded by the tier's bandwidth (a DMA engine, drive or store slower than its links still
//    limits the copy). Each flow first waits max(tier latency, path latency), so on idle links whose
//    capacity is at least the tier's bandwidth a job takes exactly what the tier file alone gives. The job
//    ends when its last flow ends. Flows share links max-min with every other flow of the network: the P/D
//    pulls, the other ranks' and instances' copies.
//  - Paths, rank r on GPU g of node n (the reverse direction takes the same links backwards):
//      host tier:   g -> the cpu vertex of node n nearest g (for an HGX node, its PCIe switch's socket);
//      local NVMe:  host cpu -> the storage vertex of node n nearest it (g -> it as the first tier); a
//                   topology without one leaves the tier off the network (the I/O station's timing alone);
//      remote:      host cpu (g as the first tier) -> the shared storage vertex (node -1) nearest it when
//                   the topology has one; else to the fabric: -> the nic vertex of node n nearest g -> its
//                   first link off the node (ECMP by rank), or up to the NIC when it has none; a node
//                   without a NIC leaves a lower remote tier off the network (and a first one is an error).
//  - A remote copy is RDMA (the network's per-flow cap applies); host and NVMe copies are DMA (it does not).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/net/flow_network.h"
#include "sim/net/topology.h"
#include "sim/tier/offload_config.h"

namespace kvsim {

class TierLinks {
 public:
  // Paths for the engine whose rank r runs on topology GPU gpus[r], tier i of `config` (0 = first tier,
  // i = lower[i - 1]). Throws InputError naming `key` (the engine's kv_offload key) when the host tier has
  // no cpu vertex on a rank's node, or a first-tier remote store no path.
  TierLinks(FlowNetwork& network, const std::vector<int>& gpus, const KvOffloadConfig& config, const std::string& key);

  // Whether tier i's copies cross the topology.
  bool routed(int tier) const;
  // Moves bytes_rank on every rank into tier `tier` (a store) or out of it (a load): see above. `done`
  // runs from the last flow's completion event.
  void move(int tier, bool into, int64_t bytes_rank, double rate_cap, Duration latency, std::function<void()> done);
  // Rank r's path into tier i (tests, reports); empty when not routed.
  const Topology::Path& path_into(int tier, int rank) const;

 private:
  struct Route {
    bool routed = false;
    bool rdma = false;
    std::vector<Topology::Path> into, out;  // per rank
  };
  FlowNetwork& network_;
  std::vector<Route> tiers_;
};

}  // namespace kvsim
