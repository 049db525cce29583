// groups x requests_per_group prompts, each the group's shared prefix (one content per group)
// followed by a suffix unique to the request. Closed loop (concurrency > 0: every arrival is 0 and
// the driver releases requests as others finish) or Poisson open loop at `rate`.
#include <algorithm>
#include <vector>

#include "sim/workload/content_ids.h"
#include "sim/workload/impl/dist_sampling.h"
#include "sim/workload/impl/synthetic_sources.h"

namespace kvsim {
namespace {

class SharedPrefixSource final : public IRequestSource {
 public:
  SharedPrefixSource(const SyntheticConfig& c, RandomStreams& rng)
      : config_(c),
        output_rng_(rng.stream("workload/output_tokens")),
        turnaround_rng_(rng.stream("workload/turnaround")),
        total_(c.groups * c.requests_per_group) {
    if (c.num_requests > 0) total_ = std::min(total_, c.num_requests);
    if (c.concurrency == 0) arrivals_.emplace(false, c.rate, 1.0, rng.stream("workload/arrivals"));
    if (c.order == "random") {
      // Fisher-Yates over all slots; memory groups x requests_per_group indices.
      RandomStream& order_rng = rng.stream("workload/order");
      const int64_t n = c.groups * c.requests_per_group;
      permutation_.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) permutation_[static_cast<size_t>(i)] = i;
      for (int64_t i = n - 1; i > 0; --i) {
        std::swap(permutation_[static_cast<size_t>(i)], permutation_[static_cast<size_t>(order_rng.uniform_int(0, i))]);
      }
    }
  }

  int closed_loop_concurrency() const override { return config_.concurrency; }

  std::optional<RequestSpec> next() override {
    if (emitted_ >= total_) return std::nullopt;
    SimTime t = SimTime::zero();
    if (arrivals_) {
      t = arrivals_->next();
      if (config_.duration > 0.0 && t > SimTime::zero() + duration_from_seconds(config_.duration)) {
        total_ = emitted_;
        return std::nullopt;
      }
    }
    const int64_t group = group_of(emitted_);
    RequestSpec r;
    r.id = RequestId(emitted_);
    r.arrival = t;
    if (config_.concurrency > 0)
      r.turnaround = advance_clock(SimTime::zero(), sample_seconds(config_.turnaround, turnaround_rng_),
                                   "workload.synthetic.turnaround") -
                     SimTime::zero();
    if (config_.prefix_tokens > 0) {
      r.prompt.push_back(Segment{make_content_id(ContentNamespace::kGroupPrefix, static_cast<uint64_t>(group)),
                                 config_.prefix_tokens});
    }
    if (config_.suffix_tokens > 0) {
      r.prompt.push_back(
          Segment{make_content_id(ContentNamespace::kUnique, static_cast<uint64_t>(emitted_)), config_.suffix_tokens});
    }
    r.prompt_tokens = config_.prefix_tokens + config_.suffix_tokens;
    r.output_tokens = sample_tokens(config_.output_tokens, output_rng_);
    r.output_content_id = make_content_id(ContentNamespace::kOutput, static_cast<uint64_t>(emitted_));
    ++emitted_;
    return r;
  }

 private:
  // interleaved: slot i is (group i % G, request i / G); grouped: (i / R, i % R).
  int64_t group_of(int64_t i) const {
    if (config_.order == "grouped") return i / config_.requests_per_group;
    if (config_.order == "random") i = permutation_[static_cast<size_t>(i)];
    return i % config_.groups;
  }

  SyntheticConfig config_;
  RandomStream& output_rng_;
  RandomStream& turnaround_rng_;
  std::optional<ArrivalProcess> arrivals_;
  std::vector<int64_t> permutation_;
  int64_t total_;
  int64_t emitted_ = 0;
};

}  // namespace

std::unique_ptr<IRequestSource> make_shared_prefix_source(const SyntheticConfig& config, RandomStreams& rng) {
  return std::make_unique<SharedPrefixSource>(config, rng);
}

}  // namespace kvsim
