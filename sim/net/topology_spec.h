#pragma once
// A topology as plain data: vertices and full-duplex links, from a topology file
// (scenario/topology_file.h) or a generator (net/topology_generators.h). Topology::build() checks it
// against the hardware catalog and turns every link into two directed links.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/time.h"

namespace kvsim {

enum class VertexKind { kGpu, kNvSwitch, kPcieSwitch, kNic, kCpu, kLeaf, kSpine, kStorage };

// "gpu", "nvswitch", "pcie_switch", "nic", "cpu", "leaf", "spine", "storage".
const char* vertex_kind_name(VertexKind kind);
std::optional<VertexKind> vertex_kind_from_name(std::string_view name);
// "gpu, nvswitch, ..." for error messages.
std::string known_vertex_kinds();

struct TopologySpec {
  struct Vertex {
    std::string name;  // unique, e.g. "node0/gpu3", "leaf2"
    VertexKind kind = VertexKind::kGpu;
    int node = -1;  // node index for GPUs (required, >= 0) and node-local parts; -1 for shared switches
  };
  // One full-duplex link: two directed links of capacity count * scale * achieved_fraction * line_rate
  // of the catalog link type `type`, each with latency `latency` when set, else latency_share times
  // the type's latency.
  struct Link {
    std::string from, to;             // vertex names
    std::string type;                 // catalog link type ("nvlink4", "ib-ndr", ...)
    int count = 1;                    // parallel ports bundled into one link
    double scale = 1.0;               // capacity multiplier in (0, inf), e.g. 1 / oversubscription
    std::optional<Duration> latency;  // per-hop latency, overrides latency_share
    double latency_share = 1.0;       // share of the type's latency, in [0, 1]; generators split a floor
    // Key paths that errors about this link name. Empty: "links[i]" and "links[i].type". Generators
    // set type_key to the parameter the type came from ("nic_link").
    std::string key, type_key;
  };
  std::string name;    // topology name (file stem or generator name)
  std::string source;  // file name (or "generator <name>") that errors start with
  std::vector<Vertex> vertices;
  std::vector<Link> links;
};

}  // namespace kvsim
