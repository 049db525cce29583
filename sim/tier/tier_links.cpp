#include "sim/tier/tier_links.h"

#include <algorithm>
#include <memory>

#include "sim/core/check.h"
#include "sim/core/errors.h"
#include "sim/tier/offload_resolution.h"

namespace kvsim {
namespace {

// Spec link i is directed links 2i and 2i + 1 (topology.h): a path taken backwards.
Topology::Path reversed(const Topology::Path& p) {
  Topology::Path r;
  r.latency = p.latency;
  for (auto it = p.links.rbegin(); it != p.links.rend(); ++it) r.links.push_back(*it ^ 1);
  return r;
}

Topology::Path joined(Topology::Path a, const Topology::Path& b) {
  a.links.insert(a.links.end(), b.links.begin(), b.links.end());
  a.latency += b.latency;
  return a;
}

// A tier the topology routes for some of an instance's ranks only (a node's NVMe linked to one socket's
// cpu, a rank under the other): every rank copies its share of each chunk, so each needs a path.
[[noreturn]] void uneven(const std::string& tier_key, const std::string& name, const std::vector<int>& gpus,
                         size_t reached, size_t missed) {
  throw InputError(tier_key + ": the " + name + " tier is reachable from TP rank " + std::to_string(reached) +
                   " but not from TP rank " + std::to_string(missed) + " (GPUs " + std::to_string(gpus[reached]) +
                   " and " + std::to_string(gpus[missed]) +
                   " of cluster.topology): every rank copies its share of a chunk, so link the storage vertex to a "
                   "vertex all of them reach (each socket's cpu, or a switch)");
}

}  // namespace

TierLinks::TierLinks(FlowNetwork& network, const std::vector<int>& gpus, const KvOffloadConfig& config,
                     const std::string& key)
    : network_(network) {
  const Topology& topo = network.topology();
  const int tiers = 1 + static_cast<int>(config.lower.size());
  tiers_.resize(static_cast<size_t>(tiers));
  for (size_t r = 0; r < gpus.size(); ++r) {
    const int g = gpus[r];
    const int gv = topo.gpu_vertex(g);
    const int node = topo.gpu_node(g);
    const uint64_t hash = 0x746965726c696e6bULL ^ (static_cast<uint64_t>(g) * 0x9E3779B97F4A7C15ULL);
    const int cpu = topo.nearest(gv, VertexKind::kCpu, node);
    for (int t = 0; t < tiers; ++t) {
      const std::string& name = t == 0 ? config.tier : config.lower[static_cast<size_t>(t - 1)].tier;
      const std::string kind = tier_kind(name);
      const std::string tier_key = key + ".tiers[" + std::to_string(t) + "]";
      // Lower tiers are written from and read into host memory (vLLM TieringOffloadingSpec stages through
      // the CPU); the first tier is copied to from the GPU.
      const int from = t == 0 && kind != "host" ? gv : cpu;
      std::optional<Topology::Path> path;
      if (kind == "host") {
        if (cpu < 0)
          throw InputError(key + ": cluster.topology '" + topo.name() + "' has no cpu vertex on node " +
                           std::to_string(node) + " reachable from " + topo.gpu_name(g) + " for the host tier (" +
                           name + ")");
        path = topo.route_vertices(gv, cpu, hash);
      } else if (from >= 0) {
        const int store = topo.nearest(from, VertexKind::kStorage, kind == "nvme" ? node : -1);
        if (store >= 0) {
          path = topo.route_vertices(from, store, hash);
        } else if (kind == "remote") {
          const int nic = topo.nearest(gv, VertexKind::kNic, node);
          if (nic >= 0) path = topo.route_vertices(from, nic, hash);
          if (path) {
            std::vector<int> up;
            for (int l = 0; l < topo.num_links(); ++l)
              if (topo.link(l).from == nic && topo.vertex_node(topo.link(l).to) != node) up.push_back(l);
            if (!up.empty()) {
              Topology::Path hop;
              hop.links.push_back(up[up.size() == 1 ? 0 : ecmp_pick(hash, 0, up.size())]);
              hop.latency = topo.link(hop.links.back()).latency;
              path = joined(std::move(*path), hop);
            }
          }
        }
      }
      if (!path) {
        if (t == 0 && kind == "remote")
          throw InputError(tier_key + ": cluster.topology '" + topo.name() + "' has no path from " + topo.gpu_name(g) +
                           " to a storage or nic vertex for the remote store (" + name + ")");
        if (r > 0 && tiers_[static_cast<size_t>(t)].routed) uneven(tier_key, name, gpus, 0, r);
        continue;
      }
      Route& route = tiers_[static_cast<size_t>(t)];
      if (r > 0 && !route.routed) uneven(tier_key, name, gpus, r, 0);
      route.routed = true;
      route.rdma = kind == "remote";
      route.out.push_back(reversed(*path));
      route.into.push_back(std::move(*path));
    }
  }
  // The first tier's copies are timed by the topology alone (a lower tier off the network keeps its I/O
  // servers' timing; the first has none): a local NVMe first tier needs a storage vertex on its node.
  if (!tiers_[0].routed)
    throw InputError(key + ".tiers[0]: cluster.topology '" + topo.name() + "' has no storage vertex on node " +
                     std::to_string(topo.gpu_node(gpus.at(0))) + " for the first tier (" + config.tier +
                     "); add one linked to the node's cpu, or put a host tier first");
}

bool TierLinks::routed(int tier) const { return tiers_.at(static_cast<size_t>(tier)).routed; }

const Topology::Path& TierLinks::path_into(int tier, int rank) const {
  return tiers_.at(static_cast<size_t>(tier)).into.at(static_cast<size_t>(rank));
}

void TierLinks::move(int tier, bool into, int64_t bytes_rank, double rate_cap, Duration latency,
                     std::function<void()> done) {
  const Route& route = tiers_.at(static_cast<size_t>(tier));
  KVSIM_CHECK(route.routed, "tier " << tier << " is not on the topology");
  const std::vector<Topology::Path>& paths = into ? route.into : route.out;
  auto left = std::make_shared<size_t>(paths.size());
  auto fn = std::make_shared<std::function<void()>>(std::move(done));
  for (const Topology::Path& p : paths) {
    const Duration wait = std::max(Duration::zero(), latency - p.latency);
    network_.start_on(
        p, bytes_rank,
        [left, fn] {
          if (--*left == 0) (*fn)();
        },
        rate_cap, wait, route.rdma);
  }
}

}  // namespace kvsim
