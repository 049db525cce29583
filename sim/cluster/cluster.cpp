#include "sim/cluster/cluster.h"

#include <algorithm>

#include "sim/cluster/impl/prefix_hashes.h"
#include "sim/cluster/router_registry.h"
#include "sim/core/check.h"
#include "sim/core/errors.h"

namespace kvsim {
namespace {
constexpr uint32_t kTagArrival = 0x01;  // the single-engine driver's tag: fingerprints unchanged
constexpr uint32_t kTagDelayedSubmit = 0x02;
constexpr uint32_t kTagReport = 0x03;
}  // namespace

Cluster::Cluster(SimContext& ctx, IRequestSource& source, std::vector<EngineInstance*> instances,
                 const RouterSettings& router, const std::string& router_key)
    : ctx_(ctx),
      source_(source),
      instances_(std::move(instances)),
      routing_latency_(duration_from_seconds(router.routing_latency_s)),
      report_interval_(duration_from_seconds(router.report_interval_s)),
      closed_loop_(source.closed_loop_concurrency()) {
  KVSIM_CHECK(!instances_.empty(), "a cluster needs an instance");
  for (size_t i = 0; i < instances_.size(); ++i) {
    EngineInstance& e = *instances_[i];
    KVSIM_CHECK(e.config().instance == static_cast<int>(i), "instance " << i << " carries id " << e.config().instance);
    InstanceInfo in;
    in.id = static_cast<int>(i);
    in.pool = e.config().pool;
    in.block_size = e.kv().block_size();
    in.num_blocks = e.kv().pool().num_usable_blocks();
    info_.push_back(in);
    candidates_.push_back(static_cast<int>(i));
    const int id = static_cast<int>(i);
    e.set_on_done([this, id](RequestId rid, bool) { on_done(id, rid); });
    e.set_on_first_token([this, id](RequestId rid) { router_->on_first_token(rid, id); });
  }
  reports_.resize(instances_.size());
  routed_.assign(instances_.size(), 0);
  router_ = make_router(router, *this, ctx_.rng, router_key);
}

Cluster::Cluster(SimContext& ctx, IRequestSource& source, EngineInstance& engine)
    : Cluster(ctx, source, std::vector<EngineInstance*>{&engine}, RouterSettings{}) {}

Cluster::~Cluster() = default;

InstanceReport Cluster::live_report(int i) const {
  const EngineInstance& e = *instances_[static_cast<size_t>(i)];
  InstanceReport r;
  r.waiting = e.num_waiting();
  r.running = e.num_running();
  r.kv_usage = e.kv().pool().usage();
  r.hashed_blocks = e.kv().pool().num_hashed_blocks();
  return r;
}

const InstanceReport& Cluster::report(int i) const {
  if (report_interval_ == Duration::ns(0)) reports_[static_cast<size_t>(i)] = live_report(i);
  return reports_[static_cast<size_t>(i)];
}

int64_t Cluster::cached_prefix_blocks(int i, const RequestSpec& spec, int64_t max_blocks) const {
  const EngineInstance& e = *instances_[static_cast<size_t>(i)];
  if (max_blocks <= 0 || !e.config().enable_prefix_caching) return 0;
  if (probe_request_ != spec.id.value()) {
    probe_hashes_.clear();
    probe_request_ = spec.id.value();
  }
  const std::pair<int, int> key{e.kv().block_size(), e.kv().hash_unit()};
  auto it = std::find_if(probe_hashes_.begin(), probe_hashes_.end(), [&](const auto& p) { return p.first == key; });
  if (it == probe_hashes_.end()) {
    probe_hashes_.emplace_back(key, std::vector<uint64_t>{});
    it = probe_hashes_.end() - 1;
    // The prompt's full blocks only, as the engine hashes them (the whole prompt: max_blocks may grow
    // between calls for other instances of the same block size).
    router_block_hashes(spec, key.first, INT64_MAX / key.first, /*partial_tail=*/false, it->second, key.second);
  }
  const size_t n = std::min<size_t>(it->second.size(), static_cast<size_t>(max_blocks));
  return e.cached_prefix_blocks(std::span<const uint64_t>(it->second.data(), n));
}

void Cluster::take_reports() {
  for (size_t i = 0; i < instances_.size(); ++i) reports_[i] = live_report(static_cast<int>(i));
}

void Cluster::schedule_report(SimTime at) {
  report_pending_ = true;
  ctx_.queue.schedule(at, Phase::kSample, kTagReport, [this] { on_report(); });
}

void Cluster::on_report() {
  report_pending_ = false;
  take_reports();
  if (submitted_ > done_) schedule_report(ctx_.now() + report_interval_);
}

void Cluster::schedule_next_arrival() {
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

void Cluster::on_arrival() {
  KVSIM_CHECK(next_.has_value(), "arrival without a request");
  RequestSpec spec = std::move(*next_);
  next_.reset();
  ++submitted_;
  if (arrival_sink_ != nullptr) arrival_sink_->on_arrival(spec.id, spec.arrival);
  if (spec.prompt_tokens == 0)
    for (const Segment& s : spec.prompt) spec.prompt_tokens += s.tokens;
  if (report_interval_ > Duration::ns(0) && !report_pending_) {
    // The snapshots stopped while nothing was in flight; the state has not changed since.
    take_reports();
    const int64_t step = report_interval_.ns();
    schedule_report(SimTime::from_ns((ctx_.now().ns() + step - 1) / step * step));
  }
  probe_request_ = -1;
  const int instance = router_->route(spec, candidates_, *this);
  KVSIM_CHECK(instance >= 0 && instance < num_instances(), "router " << router_->name() << " chose " << instance);
  ++routed_[static_cast<size_t>(instance)];
  if (routing_latency_ == Duration::ns(0)) {
    const SimTime arrival = spec.arrival;
    instances_[static_cast<size_t>(instance)]->submit(std::move(spec), arrival);
  } else {
    delayed_.emplace_back(std::move(spec), instance);
    ctx_.queue.schedule(ctx_.now() + routing_latency_, Phase::kArrival, kTagDelayedSubmit,
                        [this] { on_delayed_submit(); });
  }
  // Open loop: the following arrival is scheduled now. Closed loop: until C are in flight.
  if (closed_loop_ == 0 || submitted_ - done_ < closed_loop_) schedule_next_arrival();
}

void Cluster::on_delayed_submit() {
  KVSIM_CHECK(!delayed_.empty(), "delayed submission without a request");
  auto [spec, instance] = std::move(delayed_.front());
  delayed_.pop_front();
  const SimTime arrival = spec.arrival;
  instances_[static_cast<size_t>(instance)]->submit(std::move(spec), arrival);
}

void Cluster::on_done(int instance, RequestId id) {
  ++done_;
  router_->on_finished(id, instance);
  if (progress_) progress_(done_, ctx_.now());
  if (closed_loop_ > 0 && submitted_ - done_ < closed_loop_) schedule_next_arrival();
}

ServingResult Cluster::run() {
  if (report_interval_ > Duration::ns(0)) {
    take_reports();
    schedule_report(ctx_.now() + report_interval_);
  }
  schedule_next_arrival();
  ServingResult r;
  if (stop_) {
    while (!ctx_.queue.empty() && !stop_()) ctx_.queue.run_one();
    r.interrupted = !ctx_.queue.empty();
  } else {
    while (ctx_.queue.run_one()) {
    }
  }
  if (!r.interrupted) invariants();
  r.submitted = submitted_;
  for (const EngineInstance* e : instances_) {
    const EngineTotals& t = e->totals();
    r.finished += t.finished;
    r.generated_tokens += t.generated_tokens_finished;
    r.steps += t.steps;
    r.preemptions += t.preemptions;
    r.prompt_tokens += t.prompt_tokens;
    r.cached_tokens += t.cached_tokens;
    r.evictions += e->kv().pool().evictions();
  }
  r.unfinished = submitted_ - r.finished;
  r.events = ctx_.queue.events_dispatched();
  r.fingerprint = ctx_.queue.fingerprint();
  r.end_time = ctx_.now();
  r.routed = routed_;
  return r;
}

void Cluster::invariants() const {
  KVSIM_CHECK(ctx_.queue.empty(), "events left in the queue");
  KVSIM_CHECK(source_done_ && !next_.has_value(), "source not drained");
  KVSIM_CHECK(delayed_.empty(), "routed requests never submitted");
  KVSIM_CHECK(done_ == submitted_, "done " << done_ << " != submitted " << submitted_);
  for (size_t i = 0; i < instances_.size(); ++i) {
    const EngineInstance& e = *instances_[i];
    KVSIM_CHECK(e.num_running() == 0 && e.num_waiting() == 0, "instance " << i << ": requests left: " << e.num_running()
                                                                          << " running, " << e.num_waiting()
                                                                          << " waiting");
    const EngineTotals& t = e.totals();
    KVSIM_CHECK(t.submitted == routed_[i], "instance " << i << " saw " << t.submitted << " of " << routed_[i]);
    KVSIM_CHECK(t.finished + t.rejected == t.submitted, "instance " << i << ": finished " << t.finished
                                                                    << " + rejected " << t.rejected << " != submitted "
                                                                    << t.submitted);
    KVSIM_CHECK(t.generated_tokens_finished == t.requested_tokens_finished,
                "instance " << i << ": generated " << t.generated_tokens_finished << " != requested "
                            << t.requested_tokens_finished);
    e.check_invariants();
    KVSIM_CHECK(e.kv().pool().num_free_blocks() == e.kv().pool().num_usable_blocks(),
                "instance " << i << ": blocks still held at the end");
  }
}

}  // namespace kvsim
