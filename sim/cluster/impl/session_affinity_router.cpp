// session_affinity: requests of one session (the trace's session / conversation id) go to the instance
// that owns the session's point on a consistent-hash ring (virtual_nodes points per instance, so
// adding an instance moves only ~1/N of the sessions). A request without a session falls back to
// least_loaded.
#include <algorithm>
#include <utility>

#include "sim/cluster/impl/routers.h"
#include "sim/engine/hash_mix.h"

namespace kvsim {
namespace {

uint64_t ring_point(int instance, int v) {
  Mixer m(0x72696E67ULL);  // "ring"
  m.add(static_cast<uint64_t>(instance));
  m.add(static_cast<uint64_t>(v));
  return m.finish();
}

class SessionAffinityRouter final : public IRouter {
 public:
  SessionAffinityRouter(int virtual_nodes, int num_instances) {
    for (int i = 0; i < num_instances; ++i)
      for (int v = 0; v < virtual_nodes; ++v) ring_.emplace_back(ring_point(i, v), i);
    std::sort(ring_.begin(), ring_.end());
  }

  int route(const RequestSpec& spec, std::span<const int> candidates, const IClusterView& view) override {
    if (spec.session.empty()) return least_loaded_instance(candidates, view);
    const uint64_t h = avalanche64(fnv1a64(spec.session));  // FNV-1a alone leaves the top bits of near-equal ids equal
    // The first ring point at or after h (wrapping) whose instance is a candidate.
    auto it = std::lower_bound(ring_.begin(), ring_.end(), std::make_pair(h, -1));
    for (size_t step = 0; step < ring_.size(); ++step, ++it) {
      if (it == ring_.end()) it = ring_.begin();
      if (std::binary_search(candidates.begin(), candidates.end(), it->second)) return it->second;
    }
    return least_loaded_instance(candidates, view);
  }
  std::string name() const override { return "session_affinity"; }

 private:
  std::vector<std::pair<uint64_t, int>> ring_;  // sorted (point, instance)
};

}  // namespace

std::unique_ptr<IRouter> make_session_affinity_router(const RouterSettings& s, int num_instances) {
  return std::make_unique<SessionAffinityRouter>(s.virtual_nodes, num_instances);
}

}  // namespace kvsim
