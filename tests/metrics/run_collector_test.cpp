#include "sim/metrics/run_collector.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kvsim {
namespace {

SimTime at_ms(int64_t ms) { return SimTime::zero() + Duration::ms(ms); }

RequestRecord make_request(int64_t id, int64_t arrival_ms, int64_t scheduled_ms, int64_t first_ms, int64_t finish_ms,
                           int64_t output) {
  RequestRecord r;
  r.id = RequestId(id);
  r.arrival = at_ms(arrival_ms);
  r.first_scheduled = at_ms(scheduled_ms);
  r.first_token = at_ms(first_ms);
  r.finish = at_ms(finish_ms);
  r.prompt_tokens = 100;
  r.output_tokens = output;
  r.requested_output_tokens = output;
  r.finished = true;
  return r;
}

}  // namespace

// Request 1: arrival 0, scheduled 5, first token 20, finish 60, 5 output tokens.
//   TTFT 20, E2E 60, queue 5, TPOT (60 - 20) / 4 = 10.
// Request 2: arrival 10, scheduled 10, first token 40, finish 40, 1 output token.
//   TTFT 30, E2E 30, queue 0, no TPOT (output = 1).
// Records arrive in time order (request 2 leaves first), as the simulation emits them.
TEST(RunCollector, LatenciesFollowVllmDefinitions) {
  RunCollector c;
  c.on_request_done(make_request(2, 10, 10, 40, 40, 1));
  c.on_request_done(make_request(1, 0, 5, 20, 60, 5));
  const RunSummary s = c.summarize({});
  EXPECT_EQ(s.requests.count, 2);
  EXPECT_EQ(s.requests.finished, 2);
  EXPECT_EQ(s.ttft_ms.count, 2);
  EXPECT_DOUBLE_EQ(s.ttft_ms.mean, 25.0);
  EXPECT_DOUBLE_EQ(s.ttft_ms.p50, 25.0);
  EXPECT_EQ(s.tpot_ms.count, 1);
  EXPECT_DOUBLE_EQ(s.tpot_ms.p50, 10.0);
  EXPECT_DOUBLE_EQ(s.e2e_ms.mean, 45.0);
  EXPECT_DOUBLE_EQ(s.queue_ms.mean, 2.5);
  // Throughput over first arrival (0) .. last finish (60 ms): 2 / 0.06 s, 6 tokens / 0.06 s.
  EXPECT_DOUBLE_EQ(s.throughput.duration_s, 0.06);
  EXPECT_NEAR(s.throughput.requests_per_s, 2 / 0.06, 1e-9);
  EXPECT_NEAR(s.throughput.output_tokens_per_s, 6 / 0.06, 1e-9);
}

TEST(RunCollector, UnfinishedRequestsAreCountedButNotInLatencies) {
  RunCollector c;
  RequestRecord r = make_request(2, 5, 5, 15, 0, 1);
  r.finished = false;
  c.on_request_done(r);  // leaves at its arrival (5 ms)
  c.on_request_done(make_request(1, 0, 0, 10, 20, 2));
  const RunSummary s = c.summarize({});
  EXPECT_EQ(s.requests.count, 2);
  EXPECT_EQ(s.requests.finished, 1);
  EXPECT_EQ(s.requests.unfinished, 1);
  EXPECT_EQ(s.ttft_ms.count, 1);
  EXPECT_EQ(s.e2e_ms.count, 1);
}

// Deliveries for request 7: 1 token at 10 ms (TTFT, no gap), 1 at 15 (gap 5), 3 at 25 (gap 10, 0, 0).
// Request 8 interleaved: 1 at 12, 1 at 14 (gap 2).
TEST(RunCollector, ItlGapsAreZeroForExtraTokensOfOneDelivery) {
  RunCollector c;
  c.on_tokens(RequestId(7), at_ms(10), 1);
  c.on_tokens(RequestId(8), at_ms(12), 1);
  c.on_tokens(RequestId(8), at_ms(14), 1);
  c.on_tokens(RequestId(7), at_ms(15), 1);
  c.on_tokens(RequestId(7), at_ms(25), 3);
  // Gaps {2, 5, 10, 0, 0}: sorted {0, 0, 2, 5, 10}; p50 = 2, p90 at h = 3.6: 5 + 0.6 * 5 = 8.
  const RunSummary s = c.summarize({});
  EXPECT_EQ(s.itl_ms.count, 5);
  EXPECT_NEAR(s.itl_ms.mean, 17.0 / 5, 1e-6);
  EXPECT_NEAR(s.itl_ms.p50, 2.0, 1e-6);
  EXPECT_NEAR(s.itl_ms.p90, 8.0, 1e-6);
}

// A: in flight [0, 10 s); B: [2 s, 6 s). Window [0, 10 s]: area = 10 + 4 = 14 request-seconds,
// mean = 1.4, peak = 2.
TEST(RunCollector, MeanConcurrencyIsTimeWeighted) {
  RunCollector c;
  c.on_arrival(RequestId(1), at_ms(0));
  c.on_arrival(RequestId(2), at_ms(2000));
  c.on_request_done(make_request(2, 2000, 2000, 3000, 6000, 2));
  c.on_request_done(make_request(1, 0, 0, 1000, 10000, 2));
  const RunSummary s = c.summarize({});
  EXPECT_EQ(s.concurrency.peak, 2);
  EXPECT_NEAR(s.concurrency.mean, 1.4, 1e-12);
}

// B finishes exactly when C arrives: finishes apply first, so the peak stays 1, in whichever order the
// two records of that instant come (the simulation delivers arrivals first).
TEST(RunCollector, FinishBeforeArrivalAtEqualTimesKeepsPeak) {
  for (const bool arrival_first : {false, true}) {
    RunCollector c;
    c.on_arrival(RequestId(1), at_ms(0));
    if (arrival_first) c.on_arrival(RequestId(2), at_ms(5));
    c.on_request_done(make_request(1, 0, 0, 1, 5, 2));
    if (!arrival_first) c.on_arrival(RequestId(2), at_ms(5));
    c.on_request_done(make_request(2, 5, 5, 6, 10, 2));
    const RunSummary s = c.summarize({});
    EXPECT_EQ(s.concurrency.peak, 1) << arrival_first;
    EXPECT_NEAR(s.concurrency.mean, 1.0, 1e-12);
  }
}

// A rejected request (unfinished) is in flight from arrival to its rejection time, which the engine
// stores in `finish` -- not until the end of the run (the last step end, 20 ms here).
// A: [0, 10 ms); U: [0, 15 ms). Area = 10 + 15 = 25, window 20 -> mean 1.25; peak 2.
TEST(RunCollector, RejectedRequestsLeaveAtRejection) {
  RunCollector c;
  c.on_arrival(RequestId(1), at_ms(0));
  c.on_arrival(RequestId(2), at_ms(0));
  c.on_request_done(make_request(1, 0, 0, 5, 10, 2));
  RequestRecord u = make_request(2, 0, 0, 0, 15, 0);
  u.finished = false;
  u.first_scheduled.reset();
  c.on_request_done(u);
  StepRecord st;
  st.start = at_ms(15);
  st.end = at_ms(20);
  c.on_step(st);
  const RunSummary s = c.summarize({});
  EXPECT_NEAR(s.concurrency.mean, 1.25, 1e-12);
  EXPECT_EQ(s.concurrency.peak, 2);
  // Sampled at the step end (20 ms) both have left.
  EXPECT_EQ(c.timeseries().concurrency, (std::vector<int64_t>{0}));
}

// Two instances: the series sums each instance's latest step; concurrency counts requests in
// flight at each step end.
TEST(RunCollector, TimeSeriesSumsLatestStepOfEachInstance) {
  RunCollector c;
  StepRecord a;
  a.start = at_ms(0);
  a.end = at_ms(10);
  a.running = 2;
  a.waiting = 1;
  a.kv_blocks_used = 30;
  a.instance = 0;
  StepRecord b = a;
  b.start = at_ms(5);
  b.end = at_ms(12);
  b.running = 3;
  b.waiting = 0;
  b.kv_blocks_used = 50;
  b.instance = 1;
  StepRecord a2 = a;
  a2.start = at_ms(10);
  a2.end = at_ms(20);
  a2.running = 1;
  a2.kv_blocks_used = 10;
  c.on_arrival(RequestId(1), at_ms(0));
  c.on_arrival(RequestId(2), at_ms(0));
  c.on_step(a);
  c.on_request_done(make_request(1, 0, 0, 5, 11, 2));
  c.on_step(b);
  c.on_step(a2);
  c.on_request_done(make_request(2, 0, 0, 5, 30, 2));
  const TimeSeries& ts = c.timeseries();
  ASSERT_EQ(ts.time_s.size(), 3u);
  EXPECT_DOUBLE_EQ(ts.time_s[0], 0.010);
  EXPECT_EQ(ts.running, (std::vector<int64_t>{2, 5, 4}));
  EXPECT_EQ(ts.waiting, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(ts.kv_blocks_used, (std::vector<int64_t>{30, 80, 60}));
  EXPECT_EQ(ts.concurrency, (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(c.summarize({}).kv_blocks.peak_used, 80);
}

TEST(RunCollector, PrefixCacheTotalsAndLostTokensByCause) {
  RunCollector c;
  RequestRecord r1 = make_request(1, 0, 0, 1, 2, 1);
  r1.prompt_tokens = 100;
  r1.cached_tokens = 64;
  r1.prefix_queries = 100;
  r1.prefix_hits = 64;
  r1.prefix_queries_blocks = 6;
  r1.prefix_hits_blocks = 4;
  r1.lost_tokens = 16;
  r1.cause = MissCause::kPartialBlock;
  r1.saved_state_positions = {16, 48};
  RequestRecord r2 = make_request(2, 0, 0, 1, 2, 1);
  r2.prompt_tokens = 300;
  r2.cached_tokens = 0;
  r2.prefix_queries = 300;
  r2.prefix_queries_blocks = 18;
  r2.preempted_queries = 2 * 310;  // two re-admissions after a preemption, 10 tokens generated
  r2.preempted_hits = 2 * 288;
  r2.lost_tokens = 32;
  r2.cause = MissCause::kNoSavedState;
  r2.preemptions = 2;
  c.on_request_done(r1);
  c.on_request_done(r2);
  const RunSummary s = c.summarize({.events = 9, .wall_s = 0, .fingerprint = 0xabc, .kv_blocks_total = 1000});
  EXPECT_EQ(s.prefix_cache.prompt_tokens, 400);
  EXPECT_EQ(s.prefix_cache.hit_tokens, 64);
  EXPECT_DOUBLE_EQ(s.prefix_cache.token_hit_rate, 0.16);
  EXPECT_EQ(s.prefix_cache.queries, 400);
  EXPECT_EQ(s.prefix_cache.hits, 64);
  EXPECT_DOUBLE_EQ(s.prefix_cache.hit_rate, 0.16);  // 64 / 400; re-admissions are not in it
  EXPECT_EQ(s.prefix_cache.preempted_queries, 620);
  EXPECT_EQ(s.prefix_cache.preempted_hits, 576);
  EXPECT_DOUBLE_EQ(s.prefix_cache.preempted_hit_rate, 576.0 / 620.0);
  EXPECT_EQ(s.prefix_cache.queries_blocks, 24);
  EXPECT_EQ(s.prefix_cache.hits_blocks, 4);
  EXPECT_DOUBLE_EQ(s.prefix_cache.block_hit_rate, 4.0 / 24.0);
  EXPECT_EQ(s.prefix_cache.hit_requests, 1);
  EXPECT_EQ(s.prefix_cache.lost_tokens_by_cause[static_cast<size_t>(MissCause::kPartialBlock)], 16);
  EXPECT_EQ(s.prefix_cache.lost_tokens_by_cause[static_cast<size_t>(MissCause::kNoSavedState)], 32);
  EXPECT_EQ(s.preemptions, 2);
  EXPECT_EQ(s.kv_blocks.total, 1000);
  EXPECT_EQ(s.sim.events, 9u);
  EXPECT_EQ(c.saved_state_positions(), (std::vector<int64_t>{16, 48}));
  EXPECT_EQ(c.saved_state_offsets(), (std::vector<int64_t>{0, 2, 2}));
}

}  // namespace kvsim
