#include "sim/metrics/run_collector.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <utility>

#include "sim/core/check.h"

namespace kvsim {
namespace {

double ms_between(SimTime from, SimTime to) { return static_cast<double>((to - from).ns()) * 1e-6; }

// When a request left the instance: its finish, or for a rejected request (finished = false) the
// rejection time the engine stores in `finish` (EngineInstance::emit_rejected). Never before arrival.
int64_t leave_ns(const RequestRow& r) { return std::max(r.finish.ns(), r.arrival.ns()); }

// Sorted arrival and leave times.
struct Sweep {
  std::vector<int64_t> arrivals;
  std::vector<int64_t> finishes;
};

Sweep make_sweep(const std::vector<RequestRow>& rows) {
  Sweep s;
  s.arrivals.reserve(rows.size());
  s.finishes.reserve(rows.size());
  for (const auto& r : rows) {
    s.arrivals.push_back(r.arrival.ns());
    s.finishes.push_back(leave_ns(r));
  }
  std::sort(s.arrivals.begin(), s.arrivals.end());
  std::sort(s.finishes.begin(), s.finishes.end());
  return s;
}

// Requests in flight at time t: arrived at or before t, not finished at or before t.
int64_t in_flight_at(const Sweep& s, int64_t t) {
  const auto a = std::upper_bound(s.arrivals.begin(), s.arrivals.end(), t) - s.arrivals.begin();
  const auto f = std::upper_bound(s.finishes.begin(), s.finishes.end(), t) - s.finishes.begin();
  return static_cast<int64_t>(a - f);
}

}  // namespace

void RunCollector::on_request_done(const RequestRecord& r) {
  RequestRow row;
  row.id = r.id.value();
  row.arrival = r.arrival;
  row.first_scheduled = r.first_scheduled;
  row.first_token = r.first_token;
  row.finish = r.finish;
  row.prompt_tokens = r.prompt_tokens;
  row.output_tokens = r.output_tokens;
  row.requested_output_tokens = r.requested_output_tokens;
  row.matched_tokens = r.matched_tokens;
  row.cached_tokens = r.cached_tokens;
  row.lost_tokens = r.lost_tokens;
  row.prefix_queries_blocks = r.prefix_queries_blocks;
  row.prefix_hits_blocks = r.prefix_hits_blocks;
  row.cause = r.cause;
  row.finished = r.finished;
  row.rejected = r.rejected;
  row.preemptions = r.preemptions;
  row.instance = r.instance;
  requests_.push_back(row);
  state_positions_.insert(state_positions_.end(), r.saved_state_positions.begin(), r.saved_state_positions.end());
  state_offsets_.push_back(static_cast<int64_t>(state_positions_.size()));
  last_delivery_.erase(row.id);
  if (r.finished) last_seen_ = std::max(last_seen_, r.finish);
}

void RunCollector::on_step(const StepRecord& s) {
  KVSIM_CHECK(s.end >= s.start, "step ends before it starts");
  steps_.push_back(s);
  last_seen_ = std::max(last_seen_, s.end);
}

void RunCollector::on_tokens(RequestId id, SimTime at, int64_t n) {
  KVSIM_CHECK(n >= 1, "on_tokens with n = " << n);
  last_seen_ = std::max(last_seen_, at);
  auto [it, first] = last_delivery_.try_emplace(id.value(), at);
  if (!first) {
    KVSIM_CHECK(at >= it->second, "tokens of request " << id.value() << " delivered back in time");
    itl_ms_.push_back(static_cast<float>(ms_between(it->second, at)));
    it->second = at;
  }
  // The extra tokens of a multi-token delivery arrive with a gap of 0.
  itl_ms_.insert(itl_ms_.end(), static_cast<size_t>(n - 1), 0.0f);
}

SimTime RunCollector::end_of_run() const {
  SimTime end = last_seen_;
  for (const auto& r : requests_) end = std::max(end, r.arrival);
  return end;
}

TimeSeries RunCollector::timeseries() const {
  TimeSeries ts;
  std::vector<size_t> order(steps_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return steps_[a].end < steps_[b].end; });
  const Sweep sweep = make_sweep(requests_);
  std::map<int, const StepRecord*> latest;  // per instance; ordered so sums are deterministic
  for (size_t i : order) {
    const StepRecord& s = steps_[i];
    latest[s.instance] = &s;
    int64_t running = 0, waiting = 0, used = 0;
    for (const auto& [instance, rec] : latest) {
      running += rec->running;
      waiting += rec->waiting;
      used += rec->kv_blocks_used;
    }
    ts.time_s.push_back(s.end.seconds());
    ts.running.push_back(running);
    ts.waiting.push_back(waiting);
    ts.kv_blocks_used.push_back(used);
    ts.concurrency.push_back(in_flight_at(sweep, s.end.ns()));
  }
  return ts;
}

RunSummary RunCollector::summarize(const RunInfo& info) const {
  RunSummary out;
  std::vector<double> ttft, tpot, e2e, queue;
  int64_t output_tokens = 0;
  bool any_finish = false;
  SimTime first_arrival, last_finish;
  auto& pc = out.prefix_cache;
  for (const auto& r : requests_) {
    ++out.requests.count;
    if (out.requests.count == 1 || r.arrival < first_arrival) first_arrival = r.arrival;
    output_tokens += r.output_tokens;
    out.preemptions += r.preemptions;
    pc.prompt_tokens += r.prompt_tokens;
    pc.hit_tokens += r.cached_tokens;
    pc.queries += r.prefix_queries_blocks;
    pc.hits += r.prefix_hits_blocks;
    if (r.cached_tokens > 0) ++pc.hit_requests;
    const auto cause = static_cast<size_t>(r.cause);
    KVSIM_CHECK(cause < pc.lost_tokens_by_cause.size(), "bad miss cause " << cause);
    pc.lost_tokens_by_cause[cause] += r.lost_tokens;
    if (!r.finished) {
      ++out.requests.unfinished;
      const auto reason = static_cast<size_t>(r.rejected);
      KVSIM_CHECK(reason < out.requests.rejected.size(), "bad reject reason " << reason);
      ++out.requests.rejected[reason];
      continue;
    }
    ++out.requests.finished;
    last_finish = any_finish ? std::max(last_finish, r.finish) : r.finish;
    any_finish = true;
    e2e.push_back(ms_between(r.arrival, r.finish));
    KVSIM_CHECK(r.first_scheduled.has_value(), "request " << r.id << " finished without being scheduled");
    queue.push_back(ms_between(r.arrival, *r.first_scheduled));
    if (r.output_tokens >= 1) ttft.push_back(ms_between(r.arrival, r.first_token));
    if (r.output_tokens > 1) {
      tpot.push_back(ms_between(r.first_token, r.finish) / static_cast<double>(r.output_tokens - 1));
    }
  }
  out.ttft_ms = summarize_in_place(ttft);
  out.tpot_ms = summarize_in_place(tpot);
  out.e2e_ms = summarize_in_place(e2e);
  out.queue_ms = summarize_in_place(queue);
  std::vector<float> itl = itl_ms_;
  out.itl_ms = summarize_in_place(itl);

  pc.token_hit_rate =
      pc.prompt_tokens > 0 ? static_cast<double>(pc.hit_tokens) / static_cast<double>(pc.prompt_tokens) : 0.0;
  pc.block_hit_rate = pc.queries > 0 ? static_cast<double>(pc.hits) / static_cast<double>(pc.queries) : 0.0;

  if (any_finish && last_finish > first_arrival) {
    const double span = (last_finish - first_arrival).seconds();
    out.throughput.duration_s = span;
    out.throughput.requests_per_s = static_cast<double>(out.requests.finished) / span;
    out.throughput.output_tokens_per_s = static_cast<double>(output_tokens) / span;
  }

  // Concurrency: sweep of +1 at arrival and -1 at finish, finishes first at equal times.
  if (!requests_.empty()) {
    std::vector<std::pair<int64_t, int>> events;
    events.reserve(requests_.size() * 2);
    for (const auto& r : requests_) {
      events.emplace_back(r.arrival.ns(), +1);
      events.emplace_back(leave_ns(r), -1);
    }
    std::sort(events.begin(), events.end());  // (time, -1) sorts before (time, +1)
    const int64_t start = events.front().first;
    const int64_t end = std::max(end_of_run().ns(), start);
    int64_t level = 0;
    int64_t prev = start;
    double area = 0;  // request-nanoseconds
    for (const auto& [t, delta] : events) {
      const int64_t clipped = std::min(t, end);
      area += static_cast<double>(level) * static_cast<double>(clipped - prev);
      prev = clipped;
      level += delta;
      out.concurrency.peak = std::max(out.concurrency.peak, level);
    }
    area += static_cast<double>(level) * static_cast<double>(end - prev);
    out.concurrency.mean = end > start ? area / static_cast<double>(end - start) : 0.0;
  }

  out.kv_blocks.total = info.kv_blocks_total;
  const TimeSeries ts = timeseries();
  for (int64_t used : ts.kv_blocks_used) out.kv_blocks.peak_used = std::max(out.kv_blocks.peak_used, used);
  out.sim.events = info.events;
  out.sim.wall_s = info.wall_s;
  out.sim.fingerprint = info.fingerprint;
  return out;
}

}  // namespace kvsim
