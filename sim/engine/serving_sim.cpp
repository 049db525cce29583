#include "sim/engine/serving_sim.h"

#include "sim/core/check.h"
#include "sim/core/errors.h"

namespace kvsim {
namespace {
constexpr uint32_t kTagArrival = 0x01;
}

ServingSim::ServingSim(SimContext& ctx, IRequestSource& source, EngineInstance& engine)
    : ctx_(ctx), source_(source), engine_(engine), closed_loop_(source.closed_loop_concurrency()) {
  engine_.set_on_done([this](RequestId, bool finished) { on_done(finished); });
}

void ServingSim::schedule_next_arrival() {
  if (source_done_ || next_.has_value()) return;
  next_ = source_.next();
  if (!next_) {
    source_done_ = true;
    return;
  }
  SimTime at = next_->arrival;
  if (closed_loop_ > 0) {
    at = ctx_.now();
  } else if (at < ctx_.now()) {
    throw InputError("request " + std::to_string(next_->id.value()) + ": arrival time goes backwards");
  }
  next_->arrival = at;
  ctx_.queue.schedule(at, Phase::kArrival, kTagArrival, [this] { on_arrival(); });
}

void ServingSim::on_arrival() {
  KVSIM_CHECK(next_.has_value(), "arrival without a request");
  RequestSpec spec = std::move(*next_);
  next_.reset();
  ++submitted_;
  engine_.submit(std::move(spec));
  // Open loop: the following arrival is scheduled now. Closed loop: until C are in flight.
  if (closed_loop_ == 0 || submitted_ - done_ < closed_loop_) schedule_next_arrival();
}

void ServingSim::on_done(bool finished) {
  ++done_;
  finished_ += finished;
  if (progress_) progress_(done_, ctx_.now());
  if (closed_loop_ > 0 && submitted_ - done_ < closed_loop_) schedule_next_arrival();
}

ServingResult ServingSim::run() {
  schedule_next_arrival();
  while (ctx_.queue.run_one()) {
  }
  invariants();
  ServingResult r;
  const EngineTotals& t = engine_.totals();
  r.submitted = submitted_;
  r.finished = finished_;
  r.unfinished = submitted_ - finished_;
  r.generated_tokens = t.generated_tokens_finished;
  r.steps = t.steps;
  r.preemptions = t.preemptions;
  r.prompt_tokens = t.prompt_tokens;
  r.cached_tokens = t.cached_tokens;
  r.evictions = engine_.kv().pool().evictions();
  r.events = ctx_.queue.events_dispatched();
  r.fingerprint = ctx_.queue.fingerprint();
  r.end_time = ctx_.now();
  return r;
}

void ServingSim::invariants() const {
  KVSIM_CHECK(ctx_.queue.empty(), "events left in the queue");
  KVSIM_CHECK(source_done_ && !next_.has_value(), "source not drained");
  KVSIM_CHECK(
      engine_.num_running() == 0 && engine_.num_waiting() == 0,
      "requests left in the engine: " << engine_.num_running() << " running, " << engine_.num_waiting() << " waiting");
  const EngineTotals& t = engine_.totals();
  KVSIM_CHECK(t.submitted == submitted_, "engine saw " << t.submitted << " of " << submitted_ << " submissions");
  KVSIM_CHECK(t.finished + t.rejected == submitted_ && done_ == submitted_,
              "finished " << t.finished << " + rejected " << t.rejected << " != submitted " << submitted_);
  KVSIM_CHECK(t.generated_tokens_finished == t.requested_tokens_finished,
              "generated " << t.generated_tokens_finished << " != requested " << t.requested_tokens_finished);
  engine_.check_invariants();
  KVSIM_CHECK(engine_.kv().pool().num_free_blocks() == engine_.kv().pool().num_usable_blocks(),
              "blocks still held at the end");
}

}  // namespace kvsim
