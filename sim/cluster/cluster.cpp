#include "sim/cluster/cluster.h"

#include <algorithm>
#include <cstdint>

#include "sim/cluster/impl/prefix_hashes.h"
#include "sim/cluster/router_registry.h"
#include "sim/core/check.h"
#include "sim/core/errors.h"
#include "sim/engine/hash_mix.h"
#include "sim/net/flow_network.h"

namespace kvsim {
namespace {
constexpr uint32_t kTagArrival = 0x01;  // the single-engine driver's tag: fingerprints unchanged
constexpr uint32_t kTagDelayedSubmit = 0x02;
constexpr uint32_t kTagReport = 0x03;
constexpr uint32_t kTagLinkSample = 0x04;

// The router sees the prefill stage of a disaggregated request as a request of its own.
RequestId prefill_stage(RequestId id) { return RequestId(id.value() | (int64_t{1} << 62)); }
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
    e.set_on_done([this, id](RequestId rid, bool finished) { on_done(id, rid, finished); });
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
  ++report_epoch_;
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
  while (!source_done_ && !next_.has_value()) {
    next_ = source_.next();
    if (!next_) {
      source_done_ = true;
      return;
    }
    SimTime at = next_->arrival;
    if (closed_loop_ > 0) {
      // The request reaches the server its client turnaround after the slot is free. Zero: at once,
      // one arrival after the other in the same instant.
      const Duration turnaround = next_->turnaround;
      if (ctx_.now().ns() > INT64_MAX - turnaround.ns())
        throw InputError(
            "workload.synthetic.turnaround: arrival times run past the end of the simulated clock (about "
            "292 years)");
      at = ctx_.now() + turnaround;
      if (turnaround > Duration::ns(0)) {
        const int64_t id = next_->id.value();
        next_->arrival = at;
        in_transit_.emplace(id, std::move(*next_));
        next_.reset();
        ctx_.queue.schedule(at, Phase::kArrival, kTagArrival, [this, id] { on_turnaround_done(id); });
        if (!slot_free()) return;
        continue;
      }
    } else if (at < ctx_.now()) {
      throw InputError("request " + std::to_string(next_->id.value()) + ": arrival time goes backwards");
    }
    next_->arrival = at;
    ctx_.queue.schedule(at, Phase::kArrival, kTagArrival, [this] { on_arrival(); });
  }
}

void Cluster::on_turnaround_done(int64_t id) {
  auto it = in_transit_.find(id);
  KVSIM_CHECK(it != in_transit_.end(), "turnaround of request " << id << " not in transit");
  RequestSpec spec = std::move(it->second);
  in_transit_.erase(it);
  admit(std::move(spec));
}

void Cluster::on_arrival() {
  KVSIM_CHECK(next_.has_value(), "arrival without a request");
  RequestSpec spec = std::move(*next_);
  next_.reset();
  admit(std::move(spec));
}

void Cluster::admit(RequestSpec spec) {
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
  if (disagg_ != nullptr && !link_sample_pending_ && disagg_->settings.utilisation_interval_s > 0) {
    const int64_t step = duration_from_seconds(disagg_->settings.utilisation_interval_s).ns();
    schedule_link_sample(SimTime::from_ns((ctx_.now().ns() + step - 1) / step * step));
  }
  probe_request_ = -1;
  if (disagg_ != nullptr) {
    route_disaggregated(std::move(spec));
  } else {
    const int instance = router_->route(spec, candidates_, *this);
    KVSIM_CHECK(instance >= 0 && instance < num_instances(), "router " << router_->name() << " chose " << instance);
    submit_to(instance, std::move(spec), RemoteKv::kNone);
  }
  // Open loop: the following arrival is scheduled now. Closed loop: until C are in flight.
  if (closed_loop_ == 0 || slot_free()) schedule_next_arrival();
}

void Cluster::submit_to(int instance, RequestSpec spec, RemoteKv remote) {
  ++routed_[static_cast<size_t>(instance)];
  if (routing_latency_ == Duration::ns(0)) {
    const SimTime arrival = spec.arrival;
    instances_[static_cast<size_t>(instance)]->submit(std::move(spec), arrival, remote);
  } else {
    delayed_.push_back(Delayed{std::move(spec), instance, remote});
    ctx_.queue.schedule(ctx_.now() + routing_latency_, Phase::kArrival, kTagDelayedSubmit,
                        [this] { on_delayed_submit(); });
  }
}

void Cluster::on_delayed_submit() {
  KVSIM_CHECK(!delayed_.empty(), "delayed submission without a request");
  Delayed d = std::move(delayed_.front());
  delayed_.pop_front();
  const SimTime arrival = d.spec.arrival;
  instances_[static_cast<size_t>(d.instance)]->submit(std::move(d.spec), arrival, d.remote);
}

void Cluster::set_disaggregation(const DisaggregationSetup* setup) {
  disagg_ = setup;
  KVSIM_CHECK(setup->network != nullptr, "disaggregation without a network");
  KVSIM_CHECK(setup->instance_gpus.size() == instances_.size(),
              "GPU placement for " << setup->instance_gpus.size() << " of " << instances_.size() << " instances");
  candidates_.clear();
  prefill_candidates_.clear();
  for (size_t i = 0; i < instances_.size(); ++i) {
    const int id = static_cast<int>(i);
    EngineInstance& e = *instances_[i];
    const std::string& role = setup->pool_roles.at(static_cast<size_t>(e.config().pool));
    KVSIM_CHECK(role == "prefill" || role == "decode",
                "instance " << i << " of role " << role << " in a disaggregated cluster");
    if (role == "prefill") {
      prefill_candidates_.push_back(id);
      e.set_on_first_token([this, id](RequestId rid) { router_->on_first_token(prefill_stage(rid), id); });
      e.set_on_prefill_sent(
          [this, id](RequestId rid, int slot, const RequestRecord& rec) { on_prefill_sent(id, rid, slot, rec); });
      if (setup->settings.layerwise)
        e.set_on_last_prefill_chunk(
            [this](RequestId rid, const RequestRecord& rec) { on_last_prefill_chunk(rid, rec); });
      e.set_on_done([this, id](RequestId rid, bool) { on_prefill_rejected(id, rid); });
    } else {
      candidates_.push_back(id);
      e.set_on_remote_wait([this, id](RequestId rid, int slot, int64_t hit) { start_pull(id, rid, slot, hit); });
      e.set_on_done([this, id](RequestId rid, bool finished) { on_decode_done(id, rid, finished); });
    }
  }
  KVSIM_CHECK(!candidates_.empty() && !prefill_candidates_.empty(), "a disaggregated cluster needs both roles");
}

bool Cluster::wants_remote_prefill(const RequestSpec& spec, int64_t match) const {
  const DisaggSettings& d = disagg_->settings;
  const int64_t uncached = std::max<int64_t>(spec.prompt_tokens - match, 0);
  if (d.decider == "always") return true;
  if (d.decider == "never") return false;
  if (d.decider == "llm_d") return d.threshold > 0 && uncached >= d.threshold;  // prefix_based_pd_decider.go
  KVSIM_CHECK(d.decider == "dynamo", "unknown decider " << d.decider);
  int queue = 0;  // disagg_router.rs: the prefill queue, here what the prefill pool reports waiting
  for (int i : prefill_candidates_) queue += report(i).waiting;
  return uncached > d.max_local_prefill && queue < d.max_prefill_queue;
}

void Cluster::route_disaggregated(RequestSpec spec) {
  // llm-d / Dynamo: the decode instance first, then the decision, then the prefill instance.
  const std::string& decider = disagg_->settings.decider;
  // never: every request runs whole where it lands, as in a colocated cluster.
  const RouteStage decode_stage = decider == "always"  ? RouteStage::kDecode
                                  : decider == "never" ? RouteStage::kColocated
                                                       : RouteStage::kDecodeThenDecide;
  const int decode = router_->route_stage(spec, candidates_, *this, decode_stage);
  KVSIM_CHECK(std::find(candidates_.begin(), candidates_.end(), decode) != candidates_.end(),
              "router " << router_->name() << " chose " << decode << " as the decode instance");
  if (!wants_remote_prefill(spec, router_->last_match_tokens())) {
    submit_to(decode, std::move(spec), RemoteKv::kNone);
    return;
  }
  RequestSpec stage = spec;
  stage.id = prefill_stage(spec.id);
  probe_request_ = -1;
  const int prefill = router_->route_stage(stage, prefill_candidates_, *this, RouteStage::kPrefill);
  KVSIM_CHECK(std::find(prefill_candidates_.begin(), prefill_candidates_.end(), prefill) != prefill_candidates_.end(),
              "router " << router_->name() << " chose " << prefill << " as the prefill instance");
  ++disaggregated_;
  Pending& p = pending_[spec.id.value()];
  p.decode = decode;
  p.prefill = prefill;
  p.prompt_tokens = spec.prompt_tokens;
  p.spec = spec;
  submit_to(prefill, std::move(spec), RemoteKv::kSend);
}

void Cluster::on_last_prefill_chunk(RequestId id, const RequestRecord& rec) {
  auto it = pending_.find(id.value());
  KVSIM_CHECK(it != pending_.end(), "prefill of request " << id.value() << " not pending");
  Pending& p = it->second;
  if (p.forwarded) return;
  p.forwarded = true;
  ++routed_[static_cast<size_t>(p.decode)];
  const SimTime arrival = p.spec.arrival;
  instances_[static_cast<size_t>(p.decode)]->submit(std::move(p.spec), arrival, RemoteKv::kReceive, &rec);
}

void Cluster::on_prefill_sent(int prefill, RequestId id, int slot, const RequestRecord& rec) {
  router_->on_finished(prefill_stage(id), prefill);
  auto it = pending_.find(id.value());
  KVSIM_CHECK(it != pending_.end(), "prefill of request " << id.value() << " not pending");
  Pending& p = it->second;
  p.prefill_slot = slot;
  p.prefill_finished = true;
  p.prefill_done = ctx_.now();
  if (p.decode_left) {
    // Layer-wise: the decode instance refused the request while it was still prefilling here.
    instances_[static_cast<size_t>(prefill)]->release_held(slot);
    pending_.erase(it);
    return;
  }
  if (p.forwarded) {
    // Layer-wise: the decode side has the request since its last chunk was scheduled; the pull may be over.
    if (p.pulled) finish_pull(id.value());
    return;
  }
  p.forwarded = true;
  // The proxy forwards the request with the prefill's kv_transfer_params to the decode instance.
  ++routed_[static_cast<size_t>(p.decode)];
  const SimTime arrival = p.spec.arrival;
  instances_[static_cast<size_t>(p.decode)]->submit(std::move(p.spec), arrival, RemoteKv::kReceive, &rec);
}

void Cluster::on_prefill_rejected(int prefill, RequestId id) {
  // The prefill instance refused the request: it ends there, and its decode routing with it.
  auto it = pending_.find(id.value());
  KVSIM_CHECK(it != pending_.end(), "rejected prefill of request " << id.value() << " not pending");
  router_->on_finished(prefill_stage(id), prefill);
  const int decode = it->second.decode;
  pending_.erase(it);
  on_done(decode, id, false);
}

void Cluster::start_pull(int decode, RequestId id, int slot, int64_t local_hit) {
  auto it = pending_.find(id.value());
  KVSIM_CHECK(it != pending_.end(), "pull of request " << id.value() << " not pending");
  Pending& p = it->second;
  p.decode_slot = slot;
  p.start = ctx_.now();
  const int prefill_pool = instances_[static_cast<size_t>(p.prefill)]->config().pool;
  const int decode_pool = instances_[static_cast<size_t>(decode)]->config().pool;
  const KvTransferModel& model = disagg_->transfer.at({prefill_pool, decode_pool});
  std::vector<RankFlow> flows = model.plan(p.prompt_tokens, local_hit);
  // A full local hit reads nothing; the decode side still tells the prefill side to free (one message).
  if (flows.empty()) flows.push_back(RankFlow{0, 0, 0, 0});
  p.flows_left = static_cast<int>(flows.size());
  p.bytes = 0;
  const std::vector<int>& src = disagg_->instance_gpus[static_cast<size_t>(p.prefill)];
  const std::vector<int>& dst = disagg_->instance_gpus[static_cast<size_t>(decode)];
  p.flows.clear();
  p.flows.reserve(flows.size());
  for (const RankFlow& f : flows) {
    p.bytes += f.bytes;
    TransferRecord& t = p.flows.emplace_back();
    t.id = id;
    t.src_instance = p.prefill;
    t.dst_instance = decode;
    t.src_rank = f.src_rank;
    t.dst_rank = f.dst_rank;
    t.src_gpu = src.at(static_cast<size_t>(f.src_rank));
    t.dst_gpu = dst.at(static_cast<size_t>(f.dst_rank));
    t.bytes = f.bytes;
    t.start = ctx_.now();
    const uint64_t hash = avalanche64(static_cast<uint64_t>(id.value()) * 0x9E3779B97F4A7C15ULL ^
                                      (static_cast<uint64_t>(f.dst_rank) << 32) ^ static_cast<uint64_t>(f.src_rank));
    // Descriptors are costed by the network (FlowOptions::per_descriptor).
    const size_t k = p.flows.size() - 1;
    const int64_t flow = disagg_->network->start(
        t.src_gpu, t.dst_gpu, f.bytes, hash, [this, id, k] { on_flow_done(id, k); }, 0, Duration::zero(),
        f.descriptors);
    t.links = disagg_->network->flow_links(flow);
    t.hops = static_cast<int>(t.links.size());
  }
}

void Cluster::on_flow_done(RequestId id, size_t flow) {
  auto it = pending_.find(id.value());
  KVSIM_CHECK(it != pending_.end(), "flow of request " << id.value() << " not pending");
  Pending& p = it->second;
  TransferRecord& t = p.flows.at(flow);
  t.end = ctx_.now();
  if (arrival_sink_ != nullptr) arrival_sink_->on_transfer(t);
  if (--p.flows_left > 0) return;
  p.pulled = true;
  // Layer-wise: the last layers leave the prefill side only when its step ends.
  if (p.prefill_finished) finish_pull(id.value());
}

void Cluster::finish_pull(int64_t id) {
  // Every flow ended and the prefill is done: the decode side has the blocks; the prefill side is told
  // to free them.
  auto it = pending_.find(id);
  KVSIM_CHECK(it != pending_.end(), "pull of request " << id << " not pending");
  const Pending& p = it->second;
  const int decode = p.decode, prefill = p.prefill, decode_slot = p.decode_slot, prefill_slot = p.prefill_slot;
  const SimTime start = p.start, prefill_done = p.prefill_done;
  const int64_t bytes = p.bytes;
  pending_.erase(it);
  instances_[static_cast<size_t>(prefill)]->release_held(prefill_slot);
  instances_[static_cast<size_t>(decode)]->remote_kv_loaded(decode_slot, start, ctx_.now(), bytes, prefill_done);
}

void Cluster::on_decode_done(int decode, RequestId id, bool finished) {
  auto it = pending_.find(id.value());
  if (it != pending_.end()) {
    // Refused by the decode instance before its pull: the prefill side frees at once (or, with layer-wise
    // streaming, when its prefill ends).
    KVSIM_CHECK(it->second.decode_slot < 0, "request " << id.value() << " left during its pull");
    if (it->second.prefill_finished) {
      instances_[static_cast<size_t>(it->second.prefill)]->release_held(it->second.prefill_slot);
      pending_.erase(it);
    } else {
      it->second.decode_left = true;
    }
  }
  on_done(decode, id, finished);
}

void Cluster::schedule_link_sample(SimTime at) {
  link_sample_pending_ = true;
  ctx_.queue.schedule(at, Phase::kSample, kTagLinkSample, [this] { on_link_sample(); });
}

void Cluster::on_link_sample() {
  link_sample_pending_ = false;
  const FlowNetwork& net = *disagg_->network;
  const Topology& topo = net.topology();
  if (arrival_sink_ != nullptr) {
    for (int l = 0; l < topo.num_links(); ++l) {
      const double rate = net.link_rate(l);
      if (rate <= 0) continue;
      arrival_sink_->on_link_sample(LinkSample{ctx_.now(), l, rate, rate / topo.link(l).capacity});
    }
  }
  if (submitted_ > done_)
    schedule_link_sample(ctx_.now() + duration_from_seconds(disagg_->settings.utilisation_interval_s));
}

void Cluster::on_done(int instance, RequestId id, bool finished) {
  ++done_;
  router_->on_finished(id, instance);
  if (progress_) progress_(done_, ctx_.now());
  // A conversation's next turn, sent once this one's answer is in (or none: the source decides).
  if (std::optional<RequestSpec> next = source_.follow_up(id, ctx_.now(), finished)) {
    KVSIM_CHECK(next->arrival >= ctx_.now(), "follow-up of request " << id.value() << " arrives before it ended");
    const int64_t nid = next->id.value();
    const SimTime at = next->arrival;
    KVSIM_CHECK(in_transit_.emplace(nid, std::move(*next)).second, "follow-up " << nid << " sent twice");
    ctx_.queue.schedule(at, Phase::kArrival, kTagArrival, [this, nid] { on_turnaround_done(nid); });
  }
  if (closed_loop_ > 0 && slot_free()) schedule_next_arrival();
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
  KVSIM_CHECK(source_done_ && !next_.has_value() && in_transit_.empty(), "source not drained");
  KVSIM_CHECK(delayed_.empty(), "routed requests never submitted");
  KVSIM_CHECK(done_ == submitted_, "done " << done_ << " != submitted " << submitted_);
  KVSIM_CHECK(pending_.empty(), pending_.size() << " disaggregated requests never finished their pull");
  if (disagg_ != nullptr) KVSIM_CHECK(disagg_->network->active_flows() == 0, "flows left in the network");
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
