#include "sim/workload/content_ids.h"
#include "sim/workload/impl/dist_sampling.h"
#include "sim/workload/impl/synthetic_sources.h"

namespace kvsim {

ArrivalProcess::ArrivalProcess(bool gamma, double rate, double cv, RandomStream& rng)
    : gamma_(gamma), rate_(rate), shape_(1.0 / (cv * cv)), scale_(cv * cv / rate), rng_(rng) {}

SimTime ArrivalProcess::next() {
  const double gap = gamma_ ? rng_.gamma(shape_, scale_) : rng_.exponential(rate_);
  now_ = advance_clock(now_, gap, "workload.synthetic.rate");
  return now_;
}

namespace {

class OpenLoopSource final : public IRequestSource {
 public:
  OpenLoopSource(const SyntheticConfig& c, RandomStreams& rng)
      : config_(c),
        arrivals_(c.kind == "gamma", c.rate, c.cv, rng.stream("workload/arrivals")),
        input_rng_(rng.stream("workload/input_tokens")),
        output_rng_(rng.stream("workload/output_tokens")) {}

  std::optional<RequestSpec> next() override {
    if (done_ || (config_.num_requests > 0 && emitted_ >= config_.num_requests)) return std::nullopt;
    const SimTime t = arrivals_.next();
    if (config_.duration > 0.0 && t > SimTime::zero() + duration_from_seconds(config_.duration)) {
      done_ = true;
      return std::nullopt;
    }
    RequestSpec r;
    r.id = RequestId(emitted_);
    r.arrival = t;
    Segment s;
    s.content_id = make_content_id(ContentNamespace::kUnique, static_cast<uint64_t>(emitted_));
    s.tokens = sample_tokens(config_.input_tokens, input_rng_);
    r.prompt.push_back(s);
    r.prompt_tokens = s.tokens;
    r.output_tokens = sample_tokens(config_.output_tokens, output_rng_);
    r.output_content_id = make_content_id(ContentNamespace::kOutput, static_cast<uint64_t>(emitted_));
    ++emitted_;
    return r;
  }

 private:
  SyntheticConfig config_;
  ArrivalProcess arrivals_;
  RandomStream& input_rng_;
  RandomStream& output_rng_;
  int64_t emitted_ = 0;
  bool done_ = false;
};

}  // namespace

std::unique_ptr<IRequestSource> make_open_loop_source(const SyntheticConfig& config, RandomStreams& rng) {
  return std::make_unique<OpenLoopSource>(config, rng);
}

}  // namespace kvsim
