// round_robin: request i (in arrival order) goes to candidate i mod N.
#include "sim/cluster/impl/routers.h"

namespace kvsim {
namespace {

class RoundRobinRouter final : public IRouter {
 public:
  int route(const RequestSpec&, std::span<const int> candidates, const IClusterView&) override {
    const int pick = candidates[static_cast<size_t>(next_ % static_cast<int64_t>(candidates.size()))];
    ++next_;
    return pick;
  }
  std::string name() const override { return "round_robin"; }

 private:
  int64_t next_ = 0;
};

}  // namespace

std::unique_ptr<IRouter> make_round_robin_router() { return std::make_unique<RoundRobinRouter>(); }

}  // namespace kvsim
