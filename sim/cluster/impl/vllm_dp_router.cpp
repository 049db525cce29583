// vllm_dp: vLLM's data-parallel load balancer, the rule its API server uses to pick a DP rank
// (vllm/v1/engine/core_client.py, DPLBAsyncMPClient.get_core_engine_for_request): score = 4 x waiting +
// running from the ranks' reported counts, the first minimum scanning from a start index that rotates by
// one after every pick (eng_start_index), so ties spread over the ranks. Between two stats updates the
// client counts its own picks (current_counts[eng_index][0] += client_count, one API server here): with
// stale reports (report_interval > 0) each pick adds one waiting request to its rank until the next
// snapshot.
#include <vector>

#include "sim/cluster/impl/routers.h"

namespace kvsim {
namespace {

class VllmDpRouter final : public IRouter {
 public:
  int route(const RequestSpec&, std::span<const int> candidates, const IClusterView& view) override {
    const int64_t epoch = view.report_epoch();
    if (epoch != epoch_) {
      picked_.assign(static_cast<size_t>(view.num_instances()), 0);
      epoch_ = epoch;
    }
    const size_t n = candidates.size();
    int best = candidates[start_ % n];
    int64_t best_score = INT64_MAX;
    for (size_t i = 0; i < n; ++i) {
      const int c = candidates[(start_ + i) % n];
      const InstanceReport& r = view.report(c);
      const int64_t score = 4 * (static_cast<int64_t>(r.waiting) + picked_[static_cast<size_t>(c)]) + r.running;
      if (score < best_score) {
        best_score = score;
        best = c;
      }
    }
    start_ = (start_ + 1) % n;
    // Live reports count the pick once it reaches the instance (not before, under routing_latency or at
    // a P/D decode stage: a known gap, small unless a burst lands within the delay).
    if (epoch >= 0) ++picked_[static_cast<size_t>(best)];
    return best;
  }
  std::string name() const override { return "vllm_dp"; }

 private:
  size_t start_ = 0;
  int64_t epoch_ = -2;           // the snapshot picked_ counts against
  std::vector<int64_t> picked_;  // this router's picks per instance since that snapshot
};

}  // namespace

std::unique_ptr<IRouter> make_vllm_dp_router() { return std::make_unique<VllmDpRouter>(); }

}  // namespace kvsim
