// vLLM's prefix-cache counters (vllm/v1/metrics/stats.py PrefixCacheStats.record, called from
// vllm/v1/core/sched/scheduler.py Scheduler.schedule after allocate_slots succeeded: "Record at
// admission so unscheduled lookups are not counted"). Counts are tokens: num_tokens = request.num_tokens,
// hits = the local prefix hit; a request with num_preemptions > 0 goes to preempted_queries / _hits.
// Expected values are computed by hand in each test from the block-pool rules (LRU free queue, a
// request's blocks freed tail first, hits capped at num_tokens - 1 and block-aligned).
#include <gtest/gtest.h>

#include "sim/metrics/run_collector.h"
#include "tests/engine/engine_test_util.h"

namespace kvsim {
namespace {
using testing::config_for;
using testing::full_layout;
using testing::make_request;
using testing::RecordingSink;
using testing::run_engine;
using testing::text;

TEST(PrefixCacheStats, CountsTokensNotBlocks) {
  // L = 100, B = 16: the second request hits floor(99 / 16) * 16 = 96 tokens = 6 blocks of 6 queried.
  RecordingSink sink;
  run_engine(config_for(full_layout(16, 1000)),
             {make_request(1, 0, {text(7, 100)}, 1), make_request(2, 1000, {text(7, 100)}, 1)}, sink);
  const RequestRecord& r = sink.requests.at(2);
  EXPECT_EQ(r.prefix_queries, 100);
  EXPECT_EQ(r.prefix_hits, 96);
  EXPECT_EQ(r.prefix_queries_blocks, 6);  // floor(100 / 16)
  EXPECT_EQ(r.prefix_hits_blocks, 6);
  EXPECT_EQ(sink.requests.at(1).prefix_queries, 100);
  EXPECT_EQ(sink.requests.at(1).prefix_hits, 0);
}

TEST(PrefixCacheStats, AnAdmissionRetriedBecauseItsBlocksDidNotFitCountsOnce) {
  // 8 usable blocks, B = 16, budget 16 tokens per step. Request 1: 64-token prompt, 40 outputs; it
  // prefills in 4 steps (4.064 ms) and holds 5 blocks from position 64, 7 at the end (104 tokens).
  // Request 2 (arrives at 10 ms, 1 output: it never needs more than 8 blocks) = request 1's 64 tokens
  // + 64 others = 128 tokens: it hits request
  // 1's 4 prompt blocks (64 tokens; cap floor(127 / 16) * 16 = 112 does not bind) and, with
  // scheduler_reserve_full_isl, needs 8 - 4 = 4 new blocks while at most 3 are free: every step
  // until request 1 finishes its lookup succeeds and its allocation fails. Once request 1 is done,
  // its 4 prompt blocks are still cached: hit 64, 4 new blocks of 8 free, admitted.
  // vLLM records the stats once, at that admission: queries 128, hits 64 (before, kvsim counted
  // floor(128 / 16) = 8 query blocks at every failed attempt).
  auto cfg = config_for(full_layout(16, 9));
  cfg.max_num_batched_tokens = 16;
  RecordingSink sink;
  run_engine(cfg, {make_request(1, 0, {text(1, 64)}, 40), make_request(2, 10, {text(1, 64), text(2, 64)}, 1)}, sink);
  const RequestRecord& r2 = sink.requests.at(2);
  ASSERT_TRUE(r2.first_scheduled.has_value());
  EXPECT_GE(*r2.first_scheduled, sink.requests.at(1).finish);  // it was retried until then
  EXPECT_EQ(r2.preemptions, 0);
  EXPECT_EQ(r2.prefix_queries, 128);
  EXPECT_EQ(r2.prefix_hits, 64);
  EXPECT_EQ(r2.prefix_queries_blocks, 8);
  EXPECT_EQ(r2.prefix_hits_blocks, 4);
  EXPECT_EQ(r2.preempted_queries, 0);
  EXPECT_EQ(r2.cached_tokens, 64);

  // The run's totals: request 1 queried 64 tokens and hit none; hit rate = 64 / (64 + 128).
  RunCollector c;
  for (const auto& [id, rec] : sink.requests) c.on_request_done(rec);
  const RunSummary s = c.summarize({});
  EXPECT_EQ(s.prefix_cache.queries, 192);
  EXPECT_EQ(s.prefix_cache.hits, 64);
  EXPECT_DOUBLE_EQ(s.prefix_cache.hit_rate, 64.0 / 192.0);
}

TEST(PrefixCacheStats, APreemptedRequestsReadmissionGoesToPreemptedQueries) {
  // 8 usable blocks (free queue 1..8), B = 16, two 48-token prompts of different text, 60 outputs.
  // Step 1 admits both: request 1 takes blocks 1-3, request 2 blocks 4-6 (queries 48, hits 0 each).
  // At position 48 each takes a 4th block (7, 8). At position 64 request 1 needs a 5th with none
  // free: request 2 (num_tokens = 48 + 17 generated = 65) is preempted and frees tail first: free
  // queue [8, 6, 5, 4] (its hashed blocks 3, 2, 1, 0). Request 1 takes 8 (evicting block 3).
  // From the next step request 2's lookup finds blocks 0-2 (48 tokens, cap floor(64 / 16) * 16 = 64),
  // but needs 2 new blocks + the 3 evictable hit blocks > 3 free: its allocation fails every step.
  // Request 1 takes 6 at position 80 and 5 at 96 (evicting request 2's blocks 2 and 1) and finishes
  // at 108 tokens holding 7 blocks. Then request 2 hits only block 0 = 16 tokens and is admitted.
  // vLLM: the first admission counts in queries / hits (48 / 0); the re-admission once, in
  // preempted_queries / preempted_hits (65 / 16), not at each failed attempt and not in the hit rate.
  RecordingSink sink;
  run_engine(config_for(full_layout(16, 9)),
             {make_request(1, 0, {text(1, 48)}, 60), make_request(2, 0, {text(2, 48)}, 60)}, sink);
  const RequestRecord& r1 = sink.requests.at(1);
  const RequestRecord& r2 = sink.requests.at(2);
  ASSERT_EQ(r2.preemptions, 1);
  EXPECT_EQ(r1.prefix_queries, 48);
  EXPECT_EQ(r1.prefix_hits, 0);
  EXPECT_EQ(r1.preempted_queries, 0);
  EXPECT_EQ(r2.prefix_queries, 48);
  EXPECT_EQ(r2.prefix_hits, 0);
  EXPECT_EQ(r2.preempted_queries, 65);
  EXPECT_EQ(r2.preempted_hits, 16);
  EXPECT_EQ(r2.cached_tokens, 0);  // the first admission's hit: the own re-hit is not a prefix hit
  EXPECT_TRUE(r2.finished);

  RunCollector c;
  for (const auto& [id, rec] : sink.requests) c.on_request_done(rec);
  const RunSummary s = c.summarize({});
  EXPECT_EQ(s.prefix_cache.queries, 96);
  EXPECT_EQ(s.prefix_cache.hits, 0);
  EXPECT_EQ(s.prefix_cache.preempted_queries, 65);
  EXPECT_EQ(s.prefix_cache.preempted_hits, 16);
  EXPECT_EQ(s.prefix_cache.hit_tokens, 0);
}

}  // namespace
}  // namespace kvsim
