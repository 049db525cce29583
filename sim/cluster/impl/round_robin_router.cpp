// round_robin: request i (in arrival order) goes to candidate i mod N. Each candidate set (a cluster's
// decode pool and its prefill pool are routed separately) keeps its own counter, as a proxy keeps one
// list per pool (toy_proxy_server.py cycles prefill and decode clients independently).
#include <map>

#include "sim/cluster/impl/routers.h"

namespace kvsim {
namespace {

class RoundRobinRouter final : public IRouter {
 public:
  int route(const RequestSpec&, std::span<const int> candidates, const IClusterView&) override {
    int64_t& next = next_[candidates.front()];  // candidate sets are disjoint pools
    const int pick = candidates[static_cast<size_t>(next % static_cast<int64_t>(candidates.size()))];
    ++next;
    return pick;
  }
  std::string name() const override { return "round_robin"; }

 private:
  std::map<int, int64_t> next_;
};

}  // namespace

std::unique_ptr<IRouter> make_round_robin_router() { return std::make_unique<RoundRobinRouter>(); }

}  // namespace kvsim
