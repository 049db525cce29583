#pragma once
// Topology generators. Each returns a TopologySpec (check it with Topology::build); link types are
// catalog names (models/hardware/links.yaml), checked at build and reported under the parameter key
// they came from ("nic_link").
//
// Vertex names: node<n>/gpu<i>, node<n>/nvswitch, node<n>/pcie<i>, node<n>/nic<i>, node<n>/cpu<s>,
// leaf<r>, spine<k>.
//
// Latency per hop: a catalog latency is the end-to-end floor of one transfer over that link class
// (e.g. NCCL p2p over IB, 17 us), so the generators split it over the hops a route crosses and a
// route's sum equals the floor (TopologySpec::Link::latency_share): GPU<->NVSwitch carries half the
// NVLink latency (GPU -> GPU = one NVLink floor); NIC<->leaf half the NIC latency (GPU -> GPU across
// nodes = one NIC floor); PCIe switch<->CPU and GPU<->CPU the whole host-link latency (GPU -> host =
// one floor); GPU<->PCIe switch, PCIe switch<->NIC and leaf<->spine none (their cost is inside those
// floors; the catalog has no per-switch-hop figure).
#include <string>

#include "sim/net/topology_spec.h"

namespace kvsim {

struct NodeLinks {
  std::string gpu_link = "nvlink4";     // GPU <-> NVSwitch (per GPU)
  std::string pcie_link = "pcie5-x16";  // GPU <-> PCIe switch <-> NIC, PCIe switch <-> CPU
  std::string nic_link = "ib-ndr";      // NIC <-> leaf (per NIC)
};

// One HGX node (index `node`) of `gpus` GPUs on one NVSwitch; GPU i has its own PCIe switch with NIC i
// (rail i) and reaches CPU socket i / (gpus / 2). (On HGX H100 boards two GPUs and two NICs share a
// PCIe Gen5 switch; one switch per GPU keeps the rails apart and GPU<->NIC is not the bottleneck.)
// The NICs are left unconnected: leaf_spine() connects them.
TopologySpec hgx_node(const NodeLinks& links = {}, int node = 0, int gpus = 8);

// `nodes` HGX nodes of `rails` GPUs; NIC r of every node on leaf r (rail-optimised, NVIDIA HGX
// reference architecture); every leaf linked to each of `spines` spines. A leaf has `nodes` ports
// down; its uplinks total nodes / oversubscription ports of `fabric_link`, split over the spines
// (scale = nodes / (spines * oversubscription) per leaf-spine link). spines <= 0: spines = rails.
TopologySpec leaf_spine(int nodes, const std::string& gpu_link, const std::string& pcie_link,
                        const std::string& nic_link, const std::string& fabric_link, double oversubscription,
                        int rails = 8, int spines = 0);

// GB200 NVL72: 18 compute trays (nodes) of 4 GPUs, all 72 GPUs on one NVLink-switch domain
// (one "nvl72/nvswitch" vertex, gpu_link per GPU); per tray 2 Grace CPUs, each joined to two GPUs by
// `host_link` (NVLink-C2C) directly; per GPU a PCIe switch and NIC, all NICs on one leaf.
TopologySpec gb200_nvl72(const std::string& gpu_link = "nvlink5", const std::string& host_link = "nvlink-c2c",
                         const std::string& pcie_link = "pcie5-x16", const std::string& nic_link = "ib-ndr");

}  // namespace kvsim
