#pragma once
// The network topology of one run: vertices (GPUs, switches, NICs, CPUs) and directed links with
// capacity and latency, plus shortest-path routes with ECMP. Built once, immutable afterwards but for the
// distances a route searches on first use (kept, each once).
//
// Routing (cluster-offload.md D.5, G.18): fewest hops. GPUs, CPUs and storage are endpoints only; no
// route passes through one (traffic never relays through another GPU's memory, host DRAM or a drive). Distances
// to a GPU are found by breadth-first search from it over the reversed graph (Boost Graph) the first
// time a route ends there, and kept. A route walks from the source; at each vertex the ECMP next hops are
// the out-links u->v with d(v) = d(u) - 1, in link-id order, and one is picked by a deterministic
// hash of (flow_hash, hop index).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/time.h"
#include "sim/model/hardware.h"
#include "sim/net/topology_spec.h"

namespace kvsim {

class Topology {
 public:
  // Throws InputError "<source>: <key>: <message>" for an unknown link type (listing the known ones),
  // a link naming a missing vertex, duplicate vertex names or links, a bad count/scale/latency, a
  // GPU without node index, node indices that are not 0..N-1, no GPU, or a GPU that reaches no other GPU.
  static Topology build(const TopologySpec& spec, const HardwareCatalog& catalog);

  const std::string& name() const { return name_; }

  // GPUs in canonical order: by node, then by order of appearance in the spec.
  int num_gpus() const { return static_cast<int>(gpus_.size()); }
  const std::string& gpu_name(int gpu) const;  // "node3/gpu5"
  int gpu_node(int gpu) const;
  // The GPU's tensor-parallel domain: the GPUs of one node, and GPUs joined through NVSwitches (or to one
  // another), share one. An HGX node is a domain (over NVLink, or over PCIe without it); an NVL72 rack's
  // switch joins its trays into one. Numbered 0.. in GPU order.
  int gpu_domain(int gpu) const;
  int gpu_vertex(int gpu) const;
  std::optional<int> find_gpu(std::string_view name) const;
  int num_nodes() const { return num_nodes_; }

  int num_vertices() const { return static_cast<int>(vertices_.size()); }
  const std::string& vertex_name(int v) const;
  VertexKind vertex_kind(int v) const;
  int vertex_node(int v) const;  // -1 for shared switches
  std::optional<int> find_vertex(std::string_view name) const;

  // Directed links: spec link i becomes links 2i (from -> to) and 2i + 1 (to -> from).
  int num_links() const { return static_cast<int>(links_.size()); }
  struct LinkInfo {
    std::string name;      // "node0/gpu0->node0/nvswitch"
    std::string type;      // catalog link type
    int from = 0, to = 0;  // vertex ids
    double capacity = 0;   // bytes/s: count * scale * achieved_fraction * line_rate
    Duration latency;
  };
  const LinkInfo& link(int id) const;

  struct Path {
    std::vector<int> links;  // directed link ids, source to destination
    Duration latency;        // sum of the links' latencies
  };
  // Fewest-hop route from GPU src to GPU dst (see above); nullopt when dst is unreachable.
  // src == dst: empty path, zero latency. The same (src, dst, flow_hash) always gives the same path.
  std::optional<Path> route(int src_gpu, int dst_gpu, uint64_t flow_hash) const;
  // Hop count of the fewest-hop route, -1 when unreachable.
  int hops(int src_gpu, int dst_gpu) const;
  // Fewest-hop route between any two vertices under the same rules (ECMP by flow_hash), nullopt when
  // unreachable. A breadth-first search per call: for set-up (offload copy paths), not per flow.
  std::optional<Path> route_vertices(int src_vertex, int dst_vertex, uint64_t flow_hash) const;
  // The vertex of `kind` on `node` with the fewest hops from `from` (ties: the lowest vertex id), -1 when
  // none is reachable.
  int nearest(int from_vertex, VertexKind kind, int node) const;

 private:
  std::vector<int> distances_to(int dst_vertex) const;
  // Hops from every vertex to GPU `gpu` without transit through a GPU or CPU (-1 = none): searched on first
  // use and kept. A run routes to a few destinations; all of a 2,048-node leaf-spine's 16,384 took 3.6 GB.
  const std::vector<int>& dist_to_gpu(int gpu) const;
  Path walk(int src_vertex, int dst_vertex, const std::vector<int>& dist, uint64_t flow_hash) const;
  struct VertexInfo {
    std::string name;
    VertexKind kind;
    int node;
    std::vector<int> out_links;  // ascending link ids
  };
  std::string name_;
  std::vector<VertexInfo> vertices_;
  std::vector<LinkInfo> links_;
  std::vector<int> gpus_;           // gpu index -> vertex id
  std::vector<int> gpu_of_vertex_;  // vertex id -> gpu index or -1
  std::vector<int> gpu_domain_;     // gpu index -> tensor-parallel domain
  int num_nodes_ = 0;
  struct Search;  // the Boost graph and the distances searched so far (shared by copies: they never change)
  std::shared_ptr<Search> search_;
};

// The ECMP choice among `n` equal next hops at hop `hop` of a flow: splitmix64 of the pair, mod n.
size_t ecmp_pick(uint64_t flow_hash, int hop, size_t n);

}  // namespace kvsim
