#pragma once
// Topology files (models/topologies/<name>.yaml; schema in models/topologies/README.md). yaml-cpp is
// used only here; the network module sees the plain TopologySpec.
//
//   kind: topology
//   description: free text            (optional)
//   sources: {key: text, ...}         (optional, free text per key)
// then either a generator and its parameters
//   generator: hgx_node     gpu_link, pcie_link, nic_link; gpus (default 8)
//   generator: leaf_spine   nodes, gpu_link, pcie_link, nic_link, fabric_link, oversubscription;
//                           rails (default 8), spines (default = rails)
//   generator: gb200_nvl72  gpu_link, host_link, pcie_link, nic_link
// or explicit lists
//   vertices: [{name, kind (gpu|nvswitch|pcie_switch|nic|cpu|leaf|spine|storage), node (GPUs: required)}]
//   links:    [{from, to, type, count (default 1), scale (default 1), latency (default: the type's)}]
//
// Every key is checked and unknown keys are rejected; errors are InputError naming the file and key
// path ("models/topologies/x.yaml: links[3].count: cannot parse 'two' as an integer"). Link types are
// checked against the hardware catalog by Topology::build, under the same file and key.
#include <string>

#include "sim/net/topology_spec.h"

namespace kvsim {

inline constexpr const char* kDefaultTopologyDir = "models/topologies";

// "<dir>/<name>.yaml".
std::string topology_path(const std::string& name, const std::string& dir = kDefaultTopologyDir);

// Reads one topology file; the spec's name is the file stem and its source the path as given.
TopologySpec load_topology_file(const std::string& path);

// The same from text (tests): `source` names the file in errors, `name` becomes the spec name.
TopologySpec parse_topology(const std::string& text, const std::string& source, const std::string& name);

}  // namespace kvsim
