#include "sim/net/topology.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/connected_components.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/graph/reverse_graph.hpp>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>

#include "sim/core/errors.h"

namespace kvsim {
namespace {

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
using UndirectedGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS>;
using Reversed = boost::reverse_graph<Graph>;
using ReversedEdge = boost::graph_traits<Reversed>::edge_descriptor;

bool is_endpoint(VertexKind k) { return k == VertexKind::kGpu || k == VertexKind::kCpu || k == VertexKind::kStorage; }

// Reversed-graph edges x->u (original u->x) that a BFS from `dst` may follow: out of the destination
// or out of a transit vertex, never out of another endpoint.
struct TransitFilter {
  const Reversed* g = nullptr;
  const std::vector<bool>* endpoint = nullptr;
  size_t dst = 0;
  bool operator()(const ReversedEdge& e) const {
    const size_t x = boost::source(e, *g);
    return x == dst || !(*endpoint)[x];
  }
};

std::string known_link_types(const HardwareCatalog& catalog) {
  std::string out;
  for (const auto& [name, spec] : catalog.links) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

struct Topology::Search {
  explicit Search(size_t gpus) : once(gpus), dist(gpus) {}
  Graph graph;
  std::vector<bool> endpoint;        // GPUs, CPUs and storage: routes end there, never pass through
  std::vector<std::once_flag> once;  // per GPU: its search runs once, whoever asks first
  std::vector<std::unique_ptr<const std::vector<int>>> dist;  // per GPU; null until a route needs it
};

size_t ecmp_pick(uint64_t flow_hash, int hop, size_t n) {
  uint64_t z = flow_hash + 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(hop) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<size_t>(z % n);
}

Topology Topology::build(const TopologySpec& spec, const HardwareCatalog& catalog) {
  const std::string src = spec.source.empty() ? "topology " + spec.name : spec.source;
  auto fail = [&](const std::string& key, const std::string& msg) -> void {
    throw InputError(src + ": " + (key.empty() ? "" : key + ": ") + msg);
  };
  Topology t;
  t.name_ = spec.name;
  std::map<std::string, int, std::less<>> by_name;
  for (size_t i = 0; i < spec.vertices.size(); ++i) {
    const auto& v = spec.vertices[i];
    const std::string key = "vertices[" + std::to_string(i) + "]";
    if (v.name.empty()) fail(key + ".name", "empty vertex name");
    auto [it, fresh] = by_name.emplace(v.name, static_cast<int>(i));
    if (!fresh) {
      fail(key + ".name",
           "duplicate vertex " + quote_for_message(v.name) + " (also vertices[" + std::to_string(it->second) + "])");
    }
    if (v.kind == VertexKind::kGpu && v.node < 0) fail(key + ".node", "a GPU needs a node index >= 0");
    t.vertices_.push_back({v.name, v.kind, v.node, {}});
  }
  // Canonical GPU order: by node, then spec order.
  std::vector<std::pair<int, int>> gpu_order;
  for (size_t i = 0; i < t.vertices_.size(); ++i) {
    if (t.vertices_[i].kind == VertexKind::kGpu) gpu_order.emplace_back(t.vertices_[i].node, static_cast<int>(i));
  }
  if (gpu_order.empty()) fail("vertices", "no vertex of kind gpu");
  std::sort(gpu_order.begin(), gpu_order.end());
  t.gpu_of_vertex_.assign(t.vertices_.size(), -1);
  std::set<int> nodes;
  for (const auto& [node, v] : gpu_order) {
    t.gpu_of_vertex_[v] = static_cast<int>(t.gpus_.size());
    t.gpus_.push_back(v);
    nodes.insert(node);
  }
  t.num_nodes_ = *nodes.rbegin() + 1;
  if (static_cast<int>(nodes.size()) != t.num_nodes_) {
    fail("vertices", "GPU node indices must be 0.." + std::to_string(t.num_nodes_ - 1) + " with no gap");
  }

  std::set<std::pair<int, int>> pairs;
  for (size_t i = 0; i < spec.links.size(); ++i) {
    const auto& l = spec.links[i];
    const std::string key = l.key.empty() ? "links[" + std::to_string(i) + "]" : l.key;
    auto vertex = [&](const std::string& name, const char* field) {
      auto it = by_name.find(name);
      if (it == by_name.end()) fail(key + "." + field, "unknown vertex " + quote_for_message(name));
      return it->second;
    };
    const int a = vertex(l.from, "from");
    const int b = vertex(l.to, "to");
    if (a == b) fail(key, "link from " + quote_for_message(l.from) + " to itself");
    if (!pairs.insert({std::min(a, b), std::max(a, b)}).second) {
      fail(key, "second link between " + quote_for_message(l.from) + " and " + quote_for_message(l.to) +
                    " (use count for parallel ports)");
    }
    auto type = catalog.links.find(l.type);
    if (type == catalog.links.end()) {
      fail(l.type_key.empty() ? key + ".type" : l.type_key,
           "unknown link type " + quote_for_message(l.type) + " (known: " + known_link_types(catalog) + ")");
    }
    if (l.count < 1) fail(key + ".count", "must be >= 1 (got " + std::to_string(l.count) + ")");
    if (!(l.scale > 0) || !std::isfinite(l.scale)) fail(key + ".scale", "must be a finite number > 0");
    if (!(l.latency_share >= 0 && l.latency_share <= 1)) fail(key + ".latency_share", "must be in [0, 1]");
    const Duration latency =
        l.latency ? *l.latency
                  : Duration::ns(std::llround(l.latency_share * static_cast<double>(type->second.latency.ns())));
    if (latency < Duration::zero()) fail(key + ".latency", "must be >= 0");
    const double capacity = l.count * l.scale * type->second.effective_bandwidth();
    for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
      const int id = static_cast<int>(t.links_.size());
      t.links_.push_back({t.vertices_[from].name + "->" + t.vertices_[to].name, l.type, from, to, capacity, latency});
      t.vertices_[from].out_links.push_back(id);
    }
  }

  // Tensor-parallel domains: connected components of the GPUs and NVSwitches over the links among them,
  // with every node's GPUs joined too (a node without NVLink runs TP over PCIe, as the engine prices it).
  {
    UndirectedGraph nv(t.vertices_.size());
    const auto on_nvlink = [&](int v) {
      const VertexKind k = t.vertices_[static_cast<size_t>(v)].kind;
      return k == VertexKind::kGpu || k == VertexKind::kNvSwitch;
    };
    for (size_t id = 0; id < t.links_.size(); id += 2)
      if (on_nvlink(t.links_[id].from) && on_nvlink(t.links_[id].to))
        boost::add_edge(t.links_[id].from, t.links_[id].to, nv);
    for (size_t i = 1; i < t.gpus_.size(); ++i)  // canonical order: a node's GPUs are adjacent
      if (t.vertices_[static_cast<size_t>(t.gpus_[i])].node == t.vertices_[static_cast<size_t>(t.gpus_[i - 1])].node)
        boost::add_edge(t.gpus_[i - 1], t.gpus_[i], nv);
    std::vector<int> component(t.vertices_.size());
    boost::connected_components(nv, component.data());
    std::map<int, int> numbered;  // component -> domain, in GPU order
    for (int v : t.gpus_) {
      const int n = static_cast<int>(numbered.size());
      t.gpu_domain_.push_back(numbered.emplace(component[static_cast<size_t>(v)], n).first->second);
    }
  }
  // The graph the distance searches run on; each GPU's distances are searched when a route first needs them.
  t.search_ = std::make_shared<Search>(t.gpus_.size());
  t.search_->graph = Graph(t.vertices_.size());
  for (const auto& l : t.links_) boost::add_edge(l.from, l.to, t.search_->graph);
  t.search_->endpoint.resize(t.vertices_.size());
  for (size_t v = 0; v < t.vertices_.size(); ++v) t.search_->endpoint[v] = is_endpoint(t.vertices_[v].kind);
  // Every GPU reaches another one: a forward search from each through transit vertices only, stopping at the
  // first other GPU (one stamp array for all the searches).
  if (t.gpus_.size() > 1) {
    std::vector<int> stamp(t.vertices_.size(), -1), queue;
    for (size_t gi = 0; gi < t.gpus_.size(); ++gi) {
      const int src = t.gpus_[gi];
      bool reaches = false;
      queue.assign(1, src);
      stamp[static_cast<size_t>(src)] = static_cast<int>(gi);
      for (size_t head = 0; head < queue.size() && !reaches; ++head) {
        const int x = queue[head];
        if (x != src && t.search_->endpoint[static_cast<size_t>(x)]) {
          reaches = t.vertices_[static_cast<size_t>(x)].kind == VertexKind::kGpu;
          continue;
        }
        for (int id : t.vertices_[static_cast<size_t>(x)].out_links) {
          const int v = t.links_[static_cast<size_t>(id)].to;
          if (stamp[static_cast<size_t>(v)] == static_cast<int>(gi)) continue;
          stamp[static_cast<size_t>(v)] = static_cast<int>(gi);
          queue.push_back(v);
        }
      }
      if (!reaches) {
        fail("vertices[" + std::to_string(src) + "]",
             "GPU " + quote_for_message(t.vertices_[static_cast<size_t>(src)].name) + " reaches no other GPU");
      }
    }
  }
  return t;
}

const std::string& Topology::gpu_name(int gpu) const { return vertices_.at(gpus_.at(gpu)).name; }
int Topology::gpu_node(int gpu) const { return vertices_.at(gpus_.at(gpu)).node; }
int Topology::gpu_domain(int gpu) const { return gpu_domain_.at(static_cast<size_t>(gpu)); }
int Topology::gpu_vertex(int gpu) const { return gpus_.at(gpu); }
const std::string& Topology::vertex_name(int v) const { return vertices_.at(v).name; }
VertexKind Topology::vertex_kind(int v) const { return vertices_.at(v).kind; }
int Topology::vertex_node(int v) const { return vertices_.at(v).node; }
const Topology::LinkInfo& Topology::link(int id) const { return links_.at(id); }

std::optional<int> Topology::find_vertex(std::string_view name) const {
  for (size_t v = 0; v < vertices_.size(); ++v) {
    if (vertices_[v].name == name) return static_cast<int>(v);
  }
  return std::nullopt;
}

std::optional<int> Topology::find_gpu(std::string_view name) const {
  auto v = find_vertex(name);
  if (!v || gpu_of_vertex_[*v] < 0) return std::nullopt;
  return gpu_of_vertex_[*v];
}

int Topology::hops(int src_gpu, int dst_gpu) const { return dist_to_gpu(dst_gpu).at(gpus_.at(src_gpu)); }

const std::vector<int>& Topology::dist_to_gpu(int gpu) const {
  Search& s = *search_;
  const size_t g = static_cast<size_t>(gpu);
  std::unique_ptr<const std::vector<int>>& slot = s.dist.at(g);
  std::call_once(s.once[g], [&] { slot = std::make_unique<const std::vector<int>>(distances_to(gpus_[g])); });
  return *slot;  // the vector never moves once searched
}

std::optional<Topology::Path> Topology::route(int src_gpu, int dst_gpu, uint64_t flow_hash) const {
  const std::vector<int>& dist = dist_to_gpu(dst_gpu);
  const int u = gpus_.at(src_gpu);
  if (dist[u] < 0) return std::nullopt;
  return walk(u, gpus_[dst_gpu], dist, flow_hash);
}

Topology::Path Topology::walk(int u, int dst, const std::vector<int>& dist, uint64_t flow_hash) const {
  Path p;
  std::vector<int> candidates;
  for (int hop = 0; u != dst; ++hop) {
    candidates.clear();
    for (int id : vertices_[u].out_links) {
      const int v = links_[id].to;
      if (dist[v] == dist[u] - 1 && (v == dst || !is_endpoint(vertices_[v].kind))) candidates.push_back(id);
    }
    if (candidates.empty()) throw std::logic_error("Topology::route: no next hop at " + vertices_[u].name);
    const int id = candidates[candidates.size() == 1 ? 0 : ecmp_pick(flow_hash, hop, candidates.size())];
    p.links.push_back(id);
    p.latency += links_[id].latency;
    u = links_[id].to;
  }
  return p;
}

std::vector<int> Topology::distances_to(int dst) const {
  // Over the reversed links from `dst`, never expanding out of another endpoint.
  const Reversed reversed = boost::make_reverse_graph(search_->graph);
  std::vector<int> dist(vertices_.size(), -1);
  dist[static_cast<size_t>(dst)] = 0;
  boost::filtered_graph<Reversed, TransitFilter> fg(
      reversed, TransitFilter{&reversed, &search_->endpoint, static_cast<size_t>(dst)});
  boost::breadth_first_search(
      fg, static_cast<size_t>(dst),
      boost::visitor(boost::make_bfs_visitor(boost::record_distances(dist.data(), boost::on_tree_edge()))));
  return dist;
}

std::optional<Topology::Path> Topology::route_vertices(int src, int dst, uint64_t flow_hash) const {
  if (src < 0 || src >= num_vertices() || dst < 0 || dst >= num_vertices())
    throw std::invalid_argument("Topology::route_vertices: vertex out of range");
  const std::vector<int> dist = distances_to(dst);
  if (dist[static_cast<size_t>(src)] < 0) return std::nullopt;
  return walk(src, dst, dist, flow_hash);
}

int Topology::nearest(int from, VertexKind kind, int node) const {
  int best = -1, best_hops = 0;
  for (int v = 0; v < num_vertices(); ++v) {
    const VertexInfo& vi = vertices_[static_cast<size_t>(v)];
    if (vi.kind != kind || vi.node != node || v == from) continue;
    const int h = distances_to(v)[static_cast<size_t>(from)];
    if (h >= 0 && (best < 0 || h < best_hops)) {
      best = v;
      best_hops = h;
    }
  }
  return best;
}

}  // namespace kvsim
