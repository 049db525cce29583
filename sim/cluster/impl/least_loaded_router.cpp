// least_loaded: the candidate with the fewest waiting + running requests in its last report, ties by
// the lowest instance id.
#include "sim/cluster/impl/routers.h"

namespace kvsim {
namespace {

class LeastLoadedRouter final : public IRouter {
 public:
  int route(const RequestSpec&, std::span<const int> candidates, const IClusterView& view) override {
    return least_loaded_instance(candidates, view);
  }
  std::string name() const override { return "least_loaded"; }
};

}  // namespace

int least_loaded_instance(std::span<const int> candidates, const IClusterView& view) {
  int best = candidates[0];
  int64_t best_load = INT64_MAX;
  for (int i : candidates) {
    const InstanceReport& r = view.report(i);
    const int64_t load = static_cast<int64_t>(r.waiting) + r.running;
    if (load < best_load) {  // candidates ascend, so the first minimum is the lowest id
      best_load = load;
      best = i;
    }
  }
  return best;
}

std::unique_ptr<IRouter> make_least_loaded_router() { return std::make_unique<LeastLoadedRouter>(); }

}  // namespace kvsim
