#include "sim/metrics/run_collector.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "sim/core/check.h"

namespace kvsim {
namespace {

double ms_between(SimTime from, SimTime to) { return static_cast<double>((to - from).ns()) * 1e-6; }

template <typename T>
void append(std::vector<T>& to, const std::vector<T>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

RunCollector::RunCollector(CollectorOptions options)
    : opt_(options),
      ttft_(options.exact_request_samples),
      tpot_(options.exact_request_samples),
      e2e_(options.exact_request_samples),
      queue_(options.exact_request_samples),
      itl_(options.exact_itl_samples) {
  KVSIM_CHECK(opt_.chunk_rows > 0, "chunk_rows must be positive");
  KVSIM_CHECK(opt_.offload_tiers >= 0 && opt_.offload_tiers <= kMaxOffloadTiers, "bad offload tier count");
  if (opt_.timeseries_interval_s > 0)
    sample_interval_ns_ = std::max<int64_t>(duration_from_seconds(opt_.timeseries_interval_s).ns(), 1);
  KVSIM_CHECK(opt_.steps.mode != StepsOutput::Mode::kEvery || opt_.steps.every >= 1, "steps every N needs N >= 1");
}

// The simulation emits records in time order. A record from before the latest instant seen (only
// hand-built record lists do that) counts at that instant: concurrency is then approximate, nothing else
// depends on the order.
void RunCollector::advance(int64_t t) {
  if (t <= now_ns_) return;
  level_ += pending_;
  pending_ = 0;
  peak_ = std::max(peak_, level_);
  now_ns_ = t;
}

void RunCollector::on_arrival(RequestId, SimTime at) {
  advance(at.ns());
  ++pending_;
  arrival_ns_in_flight_ += at.ns();
  if (!any_arrival_ || at < first_arrival_) first_arrival_ = at;
  any_arrival_ = true;
  last_seen_ = std::max(last_seen_, at);
}

void RunCollector::on_request_done(const RequestRecord& r) {
  // Leaving: a finish, or the rejection time of a rejected request (never before its arrival).
  const SimTime leave = std::max(r.finish, r.arrival);
  advance(leave.ns());
  --level_;  // before arrivals pending at this instant: leaves count first
  arrival_ns_in_flight_ -= r.arrival.ns();
  area_left_ += (leave - r.arrival).ns();
  if (!any_arrival_ || r.arrival < first_arrival_) first_arrival_ = r.arrival;
  any_arrival_ = true;

  ++count_;
  output_tokens_ += r.output_tokens;
  if (r.output_tokens >= 1) prompt_tokens_prefilled_ += r.prompt_tokens;  // vLLM: counted at the first token
  preemptions_ += r.preemptions;
  prefix_.prompt_tokens += r.prompt_tokens;
  prefix_.hit_tokens += r.cached_tokens;
  prefix_.queries += r.prefix_queries;
  prefix_.hits += r.prefix_hits;
  prefix_.preempted_queries += r.preempted_queries;
  prefix_.preempted_hits += r.preempted_hits;
  prefix_.queries_blocks += r.prefix_queries_blocks;
  prefix_.hits_blocks += r.prefix_hits_blocks;
  if (r.cached_tokens > 0) ++prefix_.hit_requests;
  offload_.hit_tokens += r.tier_cached_tokens;
  offload_.hit_blocks += r.tier_cached_blocks;
  if (r.tier_cached_tokens > 0) ++offload_.hit_requests;
  offload_.loads += r.tier_loads;
  offload_.loaded_bytes += r.tier_loaded_bytes;
  offload_.stored_bytes += r.tier_stored_bytes;
  offload_.stores_skipped_chunks += r.tier_stores_skipped_chunks;
  if (r.tier_loads > 0) tier_load_.add(static_cast<double>(r.tier_load_ns) * 1e-6);
  for (size_t t = 0; t < tier_hit_tokens_.size(); ++t) {
    tier_hit_tokens_[t] += r.tier_cached_tokens_by_tier[t];
    tier_hit_blocks_[t] += r.tier_cached_blocks_by_tier[t];
  }
  const auto cause = static_cast<size_t>(r.cause);
  KVSIM_CHECK(cause < prefix_.lost_tokens_by_cause.size(), "bad miss cause " << cause);
  prefix_.lost_tokens_by_cause[cause] += r.lost_tokens;

  KVSIM_CHECK(r.instance >= 0 && r.pool >= 0, "negative instance or pool");
  if (static_cast<size_t>(r.instance) >= instances_.size()) instances_.resize(static_cast<size_t>(r.instance) + 1);
  while (static_cast<size_t>(r.pool) >= pools_.size()) pools_.emplace_back(opt_.exact_request_samples);
  // A disaggregated request's prefix reuse (cached_tokens) happened on its prefill instance; its decode
  // instance reused decode_cached_tokens of its own (blocks it did not pull).
  const bool remote = r.prefill_instance >= 0;
  const int64_t local_hit = remote ? r.decode_cached_tokens : r.cached_tokens;
  if (remote) {
    if (static_cast<size_t>(r.prefill_instance) >= instances_.size())
      instances_.resize(static_cast<size_t>(r.prefill_instance) + 1);
    InstanceAgg& pi = instances_[static_cast<size_t>(r.prefill_instance)];
    ++pi.requests;
    pi.prompt += r.prompt_tokens;
    pi.hit += r.cached_tokens;
  }
  InstanceAgg& ia = instances_[static_cast<size_t>(r.instance)];
  ++ia.requests;
  ia.prompt += r.prompt_tokens;
  ia.hit += local_hit;
  ia.preemptions += r.preemptions;
  PoolAgg& pa = pools_[static_cast<size_t>(r.pool)];
  ++pa.requests;
  pa.prompt += r.prompt_tokens;
  pa.hit += local_hit;
  pa.preemptions += r.preemptions;
  if (remote) {
    ++disagg_requests_;
    if (r.finished && r.output_tokens >= 1) {
      // TTFT = router + prefill queue + prefill + decode queue (before and after the pull) + pull + first step.
      const SimTime first = r.first_scheduled.value_or(r.prefill_done);
      ttft_router_.add(ms_between(r.arrival, r.prefill_submitted));
      ttft_prefill_queue_.add(ms_between(r.prefill_submitted, first));
      ttft_prefill_.add(ms_between(first, r.prefill_done));
      // With layer-wise streaming the pull starts before the prefill ends: only its part after the
      // prefill is TTFT's transfer part.
      const SimTime visible_start = std::max(r.transfer_start, r.prefill_done);
      ttft_decode_queue_.add(ms_between(r.prefill_done, visible_start) +
                             ms_between(r.transfer_end, r.decode_scheduled));
      ttft_pull_.add(ms_between(visible_start, r.transfer_end));
      ttft_first_step_.add(ms_between(r.decode_scheduled, r.first_token));
    }
    if (r.transfer_end >= r.transfer_start && r.transfer_end > SimTime::zero())
      transfer_.add(ms_between(r.transfer_start, r.transfer_end));
  }

  if (!r.finished) {
    const auto reason = static_cast<size_t>(r.rejected);
    KVSIM_CHECK(reason < rejected_.size(), "bad reject reason " << reason);
    ++rejected_[reason];
  } else {
    ++finished_;
    last_finish_ = any_finish_ ? std::max(last_finish_, r.finish) : r.finish;
    any_finish_ = true;
    last_seen_ = std::max(last_seen_, r.finish);
    KVSIM_CHECK(r.first_scheduled.has_value(), "request " << r.id.value() << " finished without being scheduled");
    const double e2e = ms_between(r.arrival, r.finish);
    e2e_.add(e2e);
    queue_.add(ms_between(r.arrival, *r.first_scheduled));
    ++pa.finished;
    pa.e2e.add(e2e);
    if (r.output_tokens >= 1) {
      const double ttft = ms_between(r.arrival, r.first_token);
      ttft_.add(ttft);
      pa.ttft.add(ttft);
    }
    if (r.output_tokens > 1) {
      const double tpot = ms_between(r.first_token, r.finish) / static_cast<double>(r.output_tokens - 1);
      tpot_.add(tpot);
      pa.tpot.add(tpot);
    }
  }
  const int32_t slot = delivery_slot_.find(static_cast<uint64_t>(r.id.value()), 0);
  if (slot != FlatMap::kAbsent) {
    delivery_slot_.erase(static_cast<uint64_t>(r.id.value()), 0);
    free_delivery_slots_.push_back(slot);
  }

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
  row.prefix_queries = r.prefix_queries;
  row.prefix_hits = r.prefix_hits;
  row.preempted_queries = r.preempted_queries;
  row.preempted_hits = r.preempted_hits;
  row.prefix_queries_blocks = r.prefix_queries_blocks;
  row.prefix_hits_blocks = r.prefix_hits_blocks;
  row.prefill_instance = r.prefill_instance;
  row.prefill_done = r.prefill_done;
  row.transfer_start = r.transfer_start;
  row.transfer_end = r.transfer_end;
  row.decode_scheduled = r.decode_scheduled;
  row.transfer_bytes = r.transfer_bytes;
  row.tier_cached_tokens = r.tier_cached_tokens;
  row.tier_load_ns = r.tier_load_ns;
  row.tier_cached_tokens_by_tier = r.tier_cached_tokens_by_tier;
  row.cause = r.cause;
  row.finished = r.finished;
  row.rejected = r.rejected;
  row.preemptions = r.preemptions;
  row.instance = r.instance;
  row.pool = r.pool;
  if (opt_.keep_records) {
    requests_.push_back(row);
    append(state_positions_, r.saved_state_positions);
    state_offsets_.push_back(static_cast<int64_t>(state_positions_.size()));
  }
  if (opt_.stream != nullptr) {
    chunk_requests_.push_back(row);
    append(chunk_positions_, r.saved_state_positions);
    chunk_offsets_.push_back(positions_written_ + static_cast<int64_t>(chunk_positions_.size()));
    if (chunk_requests_.size() >= opt_.chunk_rows) {
      opt_.stream->write_requests(chunk_requests_, chunk_positions_, chunk_offsets_);
      positions_written_ += static_cast<int64_t>(chunk_positions_.size());
      chunk_requests_.clear();
      chunk_positions_.clear();
      chunk_offsets_.clear();
    }
  }
}

void RunCollector::on_step(const StepRecord& s) {
  KVSIM_CHECK(s.end >= s.start, "step ends before it starts");
  KVSIM_CHECK(s.instance >= 0, "negative instance");
  advance(s.end.ns());
  last_seen_ = std::max(last_seen_, s.end);
  const auto i = static_cast<size_t>(s.instance);
  if (i >= instances_.size()) instances_.resize(i + 1);
  if (i >= latest_.size()) latest_.resize(i + 1);
  instances_[i].busy_ns += (s.end - s.start).ns();
  instances_[i].peak_used = std::max(instances_[i].peak_used, s.kv_blocks_used);
  Latest& l = latest_[i];
  sum_running_ += s.running - l.running;
  sum_waiting_ += s.waiting - l.waiting;
  sum_used_ += s.kv_blocks_used - l.used;
  for (size_t t = 0; t < sum_tier_used_.size(); ++t) sum_tier_used_[t] += s.tier_used_bytes[t] - l.tier_used[t];
  l = {s.running, s.waiting, s.kv_blocks_used, true, s.tier_used_bytes};
  if (s.store_wait_ns > 0) {
    ++store_wait_steps_;
    store_wait_ns_ += s.store_wait_ns;
  }
  peak_used_ = std::max(peak_used_, sum_used_);

  const bool keep_step = opt_.steps.mode == StepsOutput::Mode::kAll ||
                         (opt_.steps.mode == StepsOutput::Mode::kEvery && num_steps_ % opt_.steps.every == 0);
  ++num_steps_;
  if (keep_step) {
    if (opt_.keep_records) steps_.push_back(s);
    if (opt_.stream != nullptr) {
      chunk_steps_.push_back(s);
      if (chunk_steps_.size() >= opt_.chunk_rows) {
        opt_.stream->write_steps(chunk_steps_);
        chunk_steps_.clear();
      }
    }
  }
  if (opt_.timeseries_interval_s <= 0) {
    sample(s.end, &s);
  } else if (s.end.ns() >= next_sample_ns_) {
    sample(s.end, nullptr);
    next_sample_ns_ = (s.end.ns() / sample_interval_ns_ + 1) * sample_interval_ns_;
  }
}

// One aggregate sample, and per-instance rows: `only`'s instance, or every instance seen so far.
void RunCollector::sample(SimTime at, const StepRecord* only) {
  const auto into = [&](TimeSeries& ts, InstanceSeries& is) {
    ts.time_s.push_back(at.seconds());
    ts.running.push_back(sum_running_);
    ts.waiting.push_back(sum_waiting_);
    ts.kv_blocks_used.push_back(sum_used_);
    ts.concurrency.push_back(level_ + pending_);
    for (size_t t = 0; t < static_cast<size_t>(opt_.offload_tiers); ++t)
      ts.tier_used_bytes[t].push_back(sum_tier_used_[t]);
    const auto row = [&](size_t i) {
      is.time_s.push_back(at.seconds());
      is.instance.push_back(static_cast<int64_t>(i));
      is.running.push_back(latest_[i].running);
      is.waiting.push_back(latest_[i].waiting);
      is.kv_blocks_used.push_back(latest_[i].used);
    };
    if (only != nullptr) {
      row(static_cast<size_t>(only->instance));
    } else {
      for (size_t i = 0; i < latest_.size(); ++i)
        if (latest_[i].seen) row(i);
    }
  };
  if (opt_.keep_records) into(series_, instance_series_);
  if (opt_.stream == nullptr) return;
  into(chunk_series_, chunk_instance_series_);
  if (chunk_series_.size() >= opt_.chunk_rows || chunk_instance_series_.size() >= opt_.chunk_rows) {
    opt_.stream->write_samples(chunk_series_, chunk_instance_series_);
    chunk_series_.clear();
    chunk_instance_series_.clear();
  }
}

void RunCollector::on_tokens(RequestId id, SimTime at, int64_t n) {
  KVSIM_CHECK(n >= 1, "on_tokens with n = " << n);
  last_seen_ = std::max(last_seen_, at);
  const int32_t slot = delivery_slot_.find(static_cast<uint64_t>(id.value()), 0);
  if (slot == FlatMap::kAbsent) {
    int32_t fresh;
    if (!free_delivery_slots_.empty()) {
      fresh = free_delivery_slots_.back();
      free_delivery_slots_.pop_back();
      last_delivery_[static_cast<size_t>(fresh)] = at;
    } else {
      fresh = static_cast<int32_t>(last_delivery_.size());
      last_delivery_.push_back(at);
    }
    delivery_slot_.put(static_cast<uint64_t>(id.value()), 0, fresh);
  } else {
    SimTime& last = last_delivery_[static_cast<size_t>(slot)];
    KVSIM_CHECK(at >= last, "tokens of request " << id.value() << " delivered back in time");
    itl_.add(static_cast<float>(ms_between(last, at)));
    last = at;
  }
  // The extra tokens of a multi-token delivery arrive with a gap of 0.
  for (int64_t k = 1; k < n; ++k) itl_.add(0.0f);
}

void RunCollector::on_transfer(const TransferRecord& t) {
  ++flows_;
  flow_bytes_ += static_cast<double>(t.bytes);
  if (opt_.keep_records) transfers_.push_back(t);
  if (opt_.stream != nullptr) {
    chunk_transfers_.push_back(t);
    if (chunk_transfers_.size() >= opt_.chunk_rows) {
      opt_.stream->write_transfers(chunk_transfers_);
      chunk_transfers_.clear();
    }
  }
}

void RunCollector::on_link_sample(const LinkSample& ls) {
  KVSIM_CHECK(ls.link >= 0, "negative link id");
  if (static_cast<size_t>(ls.link) >= link_peak_.size()) link_peak_.resize(static_cast<size_t>(ls.link) + 1, 0.0);
  link_peak_[static_cast<size_t>(ls.link)] = std::max(link_peak_[static_cast<size_t>(ls.link)], ls.utilisation);
  if (opt_.keep_records) link_samples_.push_back(ls);
  if (opt_.stream != nullptr) {
    chunk_link_samples_.push_back(ls);
    if (chunk_link_samples_.size() >= opt_.chunk_rows) {
      opt_.stream->write_link_samples(chunk_link_samples_);
      chunk_link_samples_.clear();
    }
  }
}

void RunCollector::flush() {
  if (opt_.stream == nullptr) return;
  if (!chunk_transfers_.empty()) opt_.stream->write_transfers(chunk_transfers_);
  chunk_transfers_.clear();
  if (!chunk_link_samples_.empty()) opt_.stream->write_link_samples(chunk_link_samples_);
  chunk_link_samples_.clear();
  if (!chunk_requests_.empty()) {
    opt_.stream->write_requests(chunk_requests_, chunk_positions_, chunk_offsets_);
    positions_written_ += static_cast<int64_t>(chunk_positions_.size());
    chunk_requests_.clear();
    chunk_positions_.clear();
    chunk_offsets_.clear();
  }
  if (!chunk_steps_.empty()) opt_.stream->write_steps(chunk_steps_);
  chunk_steps_.clear();
  if (chunk_series_.size() > 0 || chunk_instance_series_.size() > 0)
    opt_.stream->write_samples(chunk_series_, chunk_instance_series_);
  chunk_series_.clear();
  chunk_instance_series_.clear();
}

SimTime RunCollector::end_of_run() const { return last_seen_; }

std::vector<LinkTotal> RunCollector::link_totals(const std::vector<LinkTotal>& links) const {
  std::vector<LinkTotal> out;
  const double span = any_arrival_ ? (end_of_run() - first_arrival_).seconds() : 0.0;
  for (size_t l = 0; l < links.size(); ++l) {
    LinkTotal t = links[l];
    if (t.bytes <= 0) continue;
    // The network's exact peak when the caller gives one; the sampled peak can only be lower (a pull
    // shorter than the sample interval read a peak of 0 beside a mean above it).
    t.peak_utilisation = std::max(t.peak_utilisation, l < link_peak_.size() ? link_peak_[l] : 0.0);
    t.mean_utilisation = span > 0 && t.capacity > 0 ? t.bytes / (t.capacity * span) : 0.0;
    out.push_back(std::move(t));
  }
  std::stable_sort(out.begin(), out.end(), [](const LinkTotal& a, const LinkTotal& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
  });
  return out;
}

RunSummary RunCollector::summarize(const RunInfo& info) const {
  RunSummary out;
  // Requests that arrived and never left (only an interrupted run has any) are unfinished: counted here,
  // though they have no record (and so no pool) yet.
  out.requests.in_flight = std::max<int64_t>(level_ + pending_, 0);
  out.requests.count = count_ + out.requests.in_flight;
  out.requests.finished = finished_;
  out.requests.unfinished = out.requests.count - finished_;
  out.requests.rejected = rejected_;
  out.requests.skipped_trace_lines = info.skipped_trace_lines;
  out.preemptions = preemptions_;
  out.prompt_tokens_prefilled = prompt_tokens_prefilled_;
  out.generated_tokens = output_tokens_;
  out.ttft_ms = ttft_.summarize();
  out.tpot_ms = tpot_.summarize();
  out.e2e_ms = e2e_.summarize();
  out.queue_ms = queue_.summarize();
  out.itl_ms = itl_.summarize();
  out.prefix_cache = prefix_;
  auto& pc = out.prefix_cache;
  pc.token_hit_rate =
      pc.prompt_tokens > 0 ? static_cast<double>(pc.hit_tokens) / static_cast<double>(pc.prompt_tokens) : 0.0;
  const auto rate = [](int64_t hits, int64_t queries) {
    return queries > 0 ? static_cast<double>(hits) / static_cast<double>(queries) : 0.0;
  };
  pc.hit_rate = rate(pc.hits, pc.queries);
  pc.preempted_hit_rate = rate(pc.preempted_hits, pc.preempted_queries);
  pc.block_hit_rate = rate(pc.hits_blocks, pc.queries_blocks);
  if (any_finish_ && last_finish_ > first_arrival_) {
    const double span = (last_finish_ - first_arrival_).seconds();
    out.throughput.duration_s = span;
    out.throughput.requests_per_s = static_cast<double>(finished_) / span;
    out.throughput.output_tokens_per_s = static_cast<double>(output_tokens_) / span;
  }
  if (any_arrival_) {
    out.concurrency.peak = std::max(peak_, level_ + pending_);
    const int64_t start = first_arrival_.ns();
    const int64_t end = std::max(end_of_run().ns(), start);
    // Requests still in flight (an interrupted run) count until the end.
    const __int128 area = area_left_ + static_cast<__int128>(level_ + pending_) * end - arrival_ns_in_flight_;
    out.concurrency.mean = end > start ? static_cast<double>(area) / static_cast<double>(end - start) : 0.0;
  }
  out.kv_blocks.total = info.kv_blocks_total;
  out.kv_blocks.peak_used = peak_used_;
  out.router = info.router;
  out.pools = summarize_pools(info.pools);
  if (info.disaggregated) {
    auto& d = out.disaggregation;
    d.present = true;
    d.requests = disagg_requests_;
    d.flows = flows_;
    d.bytes = flow_bytes_;
    d.transfer_ms = transfer_.summarize();
    d.router_ms = ttft_router_.summarize();
    d.prefill_queue_ms = ttft_prefill_queue_.summarize();
    d.prefill_ms = ttft_prefill_.summarize();
    d.decode_queue_ms = ttft_decode_queue_.summarize();
    d.pull_ms = ttft_pull_.summarize();
    d.first_decode_step_ms = ttft_first_step_.summarize();
    d.links = link_totals(info.links);
  }
  if (info.kv_offload) {
    auto& o = out.kv_offload;
    o = offload_;
    o.present = true;
    if (!info.disaggregated) o.links = link_totals(info.links);
    o.tier = info.offload_tier;
    o.size_bytes = info.offload_size_bytes;
    o.policy = info.offload_policy;
    o.token_hit_rate = out.prefix_cache.prompt_tokens > 0
                           ? static_cast<double>(o.hit_tokens) / static_cast<double>(out.prefix_cache.prompt_tokens)
                           : 0.0;
    o.combined_token_hit_rate = out.prefix_cache.prompt_tokens > 0
                                    ? static_cast<double>(o.hit_tokens + out.prefix_cache.hit_tokens) /
                                          static_cast<double>(out.prefix_cache.prompt_tokens)
                                    : 0.0;
    o.load_ms = tier_load_.summarize();
    o.backend = info.offload_backend;
    o.store_wait_steps = store_wait_steps_;
    o.store_wait_ms = static_cast<double>(store_wait_ns_) * 1e-6;
    o.tiers = info.offload_tiers;
    for (size_t t = 0; t < o.tiers.size() && t < tier_hit_tokens_.size(); ++t) {
      o.tiers[t].hit_tokens = tier_hit_tokens_[t];
      o.tiers[t].hit_blocks = tier_hit_blocks_[t];
    }
  }
  out.sim.events = info.events;
  out.sim.wall_s = info.wall_s;
  out.sim.fingerprint = info.fingerprint;
  return out;
}

std::vector<PoolSummary> RunCollector::summarize_pools(const std::vector<PoolInfo>& pools) const {
  std::vector<PoolSummary> out;
  // max / mean over the pool's instances.
  const auto imbalance = [](const std::vector<double>& v) {
    double sum = 0, top = 0;
    for (double x : v) {
      sum += x;
      top = std::max(top, x);
    }
    const double m = v.empty() ? 0.0 : sum / static_cast<double>(v.size());
    return m > 0 ? top / m : std::numeric_limits<double>::quiet_NaN();
  };
  for (size_t pi = 0; pi < pools.size(); ++pi) {
    const PoolInfo& info = pools[pi];
    PoolSummary p;
    p.info = info;
    if (pi < pools_.size()) {
      const PoolAgg& a = pools_[pi];
      p.requests = a.requests;
      p.finished = a.finished;
      p.prompt_tokens = a.prompt;
      p.hit_tokens = a.hit;
      p.preemptions = a.preemptions;
      p.ttft_ms = a.ttft.summarize();
      p.tpot_ms = a.tpot.summarize();
      p.e2e_ms = a.e2e.summarize();
    }
    if (info.role == "prefill") {
      // Its prefills are counted on its instances (the records belong to the decode pools), and so are
      // requests rejected on them (records of this pool, counted on the instance they left): from the
      // instances alone, or those rejected would count twice.
      p.requests = p.prompt_tokens = p.hit_tokens = 0;
      for (int k = 0; k < info.instances; ++k) {
        const auto i = static_cast<size_t>(info.first_instance + k);
        if (i >= instances_.size()) continue;
        p.requests += instances_[i].requests;
        p.prompt_tokens += instances_[i].prompt;
        p.hit_tokens += instances_[i].hit;
      }
    }
    p.token_hit_rate =
        p.prompt_tokens > 0 ? static_cast<double>(p.hit_tokens) / static_cast<double>(p.prompt_tokens) : 0.0;
    std::vector<double> reqs, busy;
    for (int k = 0; k < info.instances; ++k) {
      const auto i = static_cast<size_t>(info.first_instance + k);
      const InstanceAgg a = i < instances_.size() ? instances_[i] : InstanceAgg{};
      InstanceSummary s;
      s.instance = static_cast<int>(i);
      s.requests = a.requests;
      s.preemptions = a.preemptions;
      s.busy_s = static_cast<double>(a.busy_ns) * 1e-9;
      s.token_hit_rate = a.prompt > 0 ? static_cast<double>(a.hit) / static_cast<double>(a.prompt) : 0.0;
      s.peak_kv_usage =
          info.usable_blocks > 0 ? static_cast<double>(a.peak_used) / static_cast<double>(info.usable_blocks) : 0.0;
      p.peak_kv_usage = std::max(p.peak_kv_usage, s.peak_kv_usage);
      reqs.push_back(static_cast<double>(s.requests));
      busy.push_back(s.busy_s);
      p.per_instance.push_back(s);
    }
    p.requests_imbalance = imbalance(reqs);
    p.busy_imbalance = imbalance(busy);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace kvsim
