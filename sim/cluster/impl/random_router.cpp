// random: a candidate drawn uniformly from the stream "router/random".
#include "sim/cluster/impl/routers.h"

namespace kvsim {
namespace {

class RandomRouter final : public IRouter {
 public:
  explicit RandomRouter(RandomStream& s) : stream_(s) {}
  int route(const RequestSpec&, std::span<const int> candidates, const IClusterView&) override {
    return candidates[static_cast<size_t>(stream_.uniform_int(0, static_cast<int64_t>(candidates.size()) - 1))];
  }
  std::string name() const override { return "random"; }

 private:
  RandomStream& stream_;
};

}  // namespace

std::unique_ptr<IRouter> make_random_router(RandomStream& stream) { return std::make_unique<RandomRouter>(stream); }

}  // namespace kvsim
