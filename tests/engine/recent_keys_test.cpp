// RecentKeys (recent_keys.h) and the miss attribution built on it: "seen" is exact within the
// horizon, so a trace that never repeats never reports a lost reuse.
#include "sim/engine/recent_keys.h"

#include <gtest/gtest.h>

#include "sim/engine/hash_mix.h"
#include "tests/engine/engine_test_util.h"

namespace kvsim {
namespace {
using testing::config_for;
using testing::full_layout;
using testing::make_request;
using testing::RecordingSink;
using testing::run_engine;
using testing::text;

TEST(RecentKeys, NoFalsePositivesAmongAMillionKeys) {
  // A 2^24-bit Bloom filter with 3 probes answers yes for about 0.4 % of unseen keys at 2^20 keys
  // ((1 - e^(-3 * 2^20 / 2^24))^3 = 0.0044): about 4,600 of these 2^20 would be false positives.
  RecentKeys seen(size_t{1} << 21);
  const uint64_t n = uint64_t{1} << 20;
  for (uint64_t i = 0; i < n; ++i) seen.touch(avalanche64(i));
  int64_t touched_found = 0, other_found = 0;
  for (uint64_t i = 0; i < n; ++i) {
    touched_found += seen.contains(avalanche64(i)) ? 1 : 0;
    other_found += seen.contains(avalanche64(i + (uint64_t{1} << 40))) ? 1 : 0;
  }
  EXPECT_EQ(touched_found, static_cast<int64_t>(n));
  EXPECT_EQ(other_found, 0);
  EXPECT_EQ(seen.size(), n);
}

TEST(RecentKeys, ForgetsAKeyNotTouchedInTheLastHorizonTouches) {
  // Horizon 4: a, b, c, d fill the window; touching b again moves it to the newest; e then pushes
  // out the oldest touch (a's), f the next one (b's old touch: b stays, as it was touched since).
  RecentKeys seen(4);
  for (uint64_t k : {1, 2, 3, 4}) seen.touch(k);
  EXPECT_TRUE(seen.contains(1));
  seen.touch(2);  // window: b c d b -> a is out
  EXPECT_FALSE(seen.contains(1));
  seen.touch(5);  // pushes out b's old touch: b stays
  EXPECT_TRUE(seen.contains(2));
  EXPECT_TRUE(seen.contains(3));
  seen.touch(6);  // pushes out c
  EXPECT_FALSE(seen.contains(3));
  for (uint64_t k : {2, 4, 5, 6}) EXPECT_TRUE(seen.contains(k)) << k;
  EXPECT_EQ(seen.size(), 4u);
}

TEST(MissAttribution, ATraceThatNeverRepeatsReportsNoLostReuse) {
  // 3000 prompts of 512 distinct tokens at block size 1: 1.5 M block keys, all within the horizon
  // (16 x 100,000 blocks -> 2^21). Nothing was reusable, so no request may report a lost reuse; with
  // the former Bloom filter about 1.4 % of first-block queries were false positives
  // ((1 - e^(-3 * 1.5e6 / 2^24))^3 = 0.0137), i.e. about 40 requests reported as "evicted".
  std::vector<RequestSpec> reqs;
  for (int i = 0; i < 3000; ++i) reqs.push_back(make_request(i, i, {text(1000 + static_cast<uint64_t>(i), 512)}, 1));
  RecordingSink sink;
  run_engine(config_for(full_layout(1, 100000)), std::move(reqs), sink);
  ASSERT_EQ(sink.requests.size(), 3000u);
  int64_t lost = 0, not_none = 0;
  for (const auto& [id, r] : sink.requests) {
    lost += r.lost_tokens;
    not_none += r.cause != MissCause::kNone ? 1 : 0;
  }
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(not_none, 0);
}

TEST(MissAttribution, AnEvictionBeyondTheHorizonIsNotReportedAsEvicted) {
  // Horizon: 16 x 5 blocks = 80 -> the minimum 2^16 touches. Request 1 (64 tokens, B = 16) registers
  // 4 keys; 2^14 + 1 requests of 64 other tokens register 4 keys each (65,540 > 65,536 touches), so
  // request 1's keys leave the window; its repeat at the end misses (evicted long before) and is
  // not attributed: nothing known was reusable.
  std::vector<RequestSpec> reqs{make_request(0, 0, {text(7, 64)}, 1)};
  const int fillers = (1 << 14) + 1;
  for (int i = 1; i <= fillers; ++i) reqs.push_back(make_request(i, i, {text(100 + static_cast<uint64_t>(i), 64)}, 1));
  reqs.push_back(make_request(fillers + 1, fillers + 10, {text(7, 64)}, 1));
  RecordingSink sink;
  run_engine(config_for(full_layout(16, 5)), std::move(reqs), sink);
  const RequestRecord& again = sink.requests.at(fillers + 1);
  EXPECT_EQ(again.cached_tokens, 0);
  EXPECT_EQ(again.cause, MissCause::kNone);
  EXPECT_EQ(again.lost_tokens, 0);
}

}  // namespace
}  // namespace kvsim
