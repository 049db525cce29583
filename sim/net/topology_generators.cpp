#include "sim/net/topology_generators.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kvsim {
namespace {

std::string node_vertex(int node, const std::string& part) { return "node" + std::to_string(node) + "/" + part; }

void add_link(TopologySpec& spec, const std::string& from, const std::string& to, const std::string& type,
              const char* type_key, double latency_share, double scale = 1.0) {
  TopologySpec::Link l;
  l.from = from;
  l.to = to;
  l.type = type;
  l.type_key = type_key;
  l.latency_share = latency_share;
  l.scale = scale;
  spec.links.push_back(std::move(l));
}

// Node-local vertices and links of one HGX node, appended to `spec`.
void append_hgx_node(TopologySpec& spec, const NodeLinks& links, int node, int gpus) {
  if (gpus < 1) throw std::invalid_argument("hgx_node: gpus must be >= 1");
  const int sockets = gpus >= 2 ? 2 : 1;
  spec.vertices.push_back({node_vertex(node, "nvswitch"), VertexKind::kNvSwitch, node});
  for (int s = 0; s < sockets; ++s) {
    spec.vertices.push_back({node_vertex(node, "cpu" + std::to_string(s)), VertexKind::kCpu, node});
  }
  for (int i = 0; i < gpus; ++i) {
    const std::string gpu = node_vertex(node, "gpu" + std::to_string(i));
    const std::string pcie = node_vertex(node, "pcie" + std::to_string(i));
    const std::string nic = node_vertex(node, "nic" + std::to_string(i));
    const std::string cpu = node_vertex(node, "cpu" + std::to_string(i * sockets / gpus));
    spec.vertices.push_back({gpu, VertexKind::kGpu, node});
    spec.vertices.push_back({pcie, VertexKind::kPcieSwitch, node});
    spec.vertices.push_back({nic, VertexKind::kNic, node});
    add_link(spec, gpu, node_vertex(node, "nvswitch"), links.gpu_link, "gpu_link", 0.5);
    add_link(spec, gpu, pcie, links.pcie_link, "pcie_link", 0.0);
    add_link(spec, pcie, nic, links.pcie_link, "pcie_link", 0.0);
    add_link(spec, pcie, cpu, links.pcie_link, "pcie_link", 1.0);
  }
}

}  // namespace

TopologySpec hgx_node(const NodeLinks& links, int node, int gpus) {
  TopologySpec spec;
  spec.name = "hgx_node";
  spec.source = "generator hgx_node";
  append_hgx_node(spec, links, node, gpus);
  return spec;
}

TopologySpec leaf_spine(int nodes, const std::string& gpu_link, const std::string& pcie_link,
                        const std::string& nic_link, const std::string& fabric_link, double oversubscription, int rails,
                        int spines) {
  if (nodes < 1 || rails < 1) throw std::invalid_argument("leaf_spine: nodes and rails must be >= 1");
  if (!(oversubscription > 0) || !std::isfinite(oversubscription)) {
    throw std::invalid_argument("leaf_spine: oversubscription must be > 0");
  }
  if (spines <= 0) spines = rails;
  TopologySpec spec;
  spec.name = "leaf_spine";
  spec.source = "generator leaf_spine";
  const NodeLinks links{gpu_link, pcie_link, nic_link};
  for (int n = 0; n < nodes; ++n) append_hgx_node(spec, links, n, rails);
  for (int r = 0; r < rails; ++r) spec.vertices.push_back({"leaf" + std::to_string(r), VertexKind::kLeaf, -1});
  for (int k = 0; k < spines; ++k) spec.vertices.push_back({"spine" + std::to_string(k), VertexKind::kSpine, -1});
  for (int n = 0; n < nodes; ++n) {
    for (int r = 0; r < rails; ++r) {
      add_link(spec, node_vertex(n, "nic" + std::to_string(r)), "leaf" + std::to_string(r), nic_link, "nic_link", 0.5);
    }
  }
  // Each leaf has nodes / oversubscription fabric ports up. With at least one port a spine they are split
  // evenly over all spines; with fewer ports than spines (a small fabric) they are spread over the first
  // floor(ports) spines, every leaf the same ones (so that any two leaves meet): a single flow, held on
  // one spine by ECMP, then gets at least a whole port (fewer than one port up: that fraction).
  const double up = nodes / oversubscription;
  const int used = std::clamp(static_cast<int>(std::floor(up)), 1, spines);
  const double scale = up / used;
  for (int r = 0; r < rails; ++r) {
    for (int k = 0; k < used; ++k) {
      add_link(spec, "leaf" + std::to_string(r), "spine" + std::to_string(k), fabric_link, "fabric_link", 0.0, scale);
    }
  }
  return spec;
}

TopologySpec gb200_nvl72(const std::string& gpu_link, const std::string& host_link, const std::string& pcie_link,
                         const std::string& nic_link) {
  constexpr int kTrays = 18, kGpusPerTray = 4;
  TopologySpec spec;
  spec.name = "gb200_nvl72";
  spec.source = "generator gb200_nvl72";
  spec.vertices.push_back({"nvl72/nvswitch", VertexKind::kNvSwitch, -1});
  spec.vertices.push_back({"leaf0", VertexKind::kLeaf, -1});
  for (int n = 0; n < kTrays; ++n) {
    for (int s = 0; s < 2; ++s) {
      spec.vertices.push_back({node_vertex(n, "cpu" + std::to_string(s)), VertexKind::kCpu, n});
    }
    for (int i = 0; i < kGpusPerTray; ++i) {
      const std::string gpu = node_vertex(n, "gpu" + std::to_string(i));
      const std::string pcie = node_vertex(n, "pcie" + std::to_string(i));
      const std::string nic = node_vertex(n, "nic" + std::to_string(i));
      spec.vertices.push_back({gpu, VertexKind::kGpu, n});
      spec.vertices.push_back({pcie, VertexKind::kPcieSwitch, n});
      spec.vertices.push_back({nic, VertexKind::kNic, n});
      add_link(spec, gpu, "nvl72/nvswitch", gpu_link, "gpu_link", 0.5);
      add_link(spec, gpu, node_vertex(n, "cpu" + std::to_string(i / 2)), host_link, "host_link", 1.0);
      add_link(spec, gpu, pcie, pcie_link, "pcie_link", 0.0);
      add_link(spec, pcie, nic, pcie_link, "pcie_link", 0.0);
      add_link(spec, nic, "leaf0", nic_link, "nic_link", 0.5);
    }
  }
  return spec;
}

}  // namespace kvsim
