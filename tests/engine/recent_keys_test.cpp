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

TEST(RecentKeys, RemembersAKeyForHorizonDistinctKeysAndForgetsItAfterTwice) {
  // Horizon 4, two generations. 1 2 3 4 fill generation A, which becomes the previous one. 5 6 go
  // into generation B; touching 1 again re-inserts it into B (refresh, not a new key for A).
  RecentKeys seen(4);
  for (uint64_t k : {1, 2, 3, 4}) seen.touch(k);
  for (uint64_t k : {1, 2, 3, 4}) EXPECT_TRUE(seen.contains(k)) << k;
  seen.touch(5);
  seen.touch(6);
  seen.touch(1);  // B = {5, 6, 1}
  EXPECT_EQ(seen.size(), 6u);
  seen.touch(6);  // already in B: nothing changes
  EXPECT_EQ(seen.size(), 6u);
  seen.touch(7);  // B = {5, 6, 1, 7} is full: it becomes the previous one, A = {1, 2, 3, 4} is dropped
  EXPECT_FALSE(seen.contains(2));
  EXPECT_FALSE(seen.contains(3));
  EXPECT_FALSE(seen.contains(4));
  for (uint64_t k : {1, 5, 6, 7}) EXPECT_TRUE(seen.contains(k)) << k;  // 1 survived by its refresh
  EXPECT_EQ(seen.size(), 4u);
  // 2 was followed by 6 other distinct keys (3 4 5 6 1 7): more than the horizon, less than twice it.
  // A key followed by 8 = 2 x horizon distinct keys is always gone: 5 is after 6 1 7 8 9 10 11 12.
  for (uint64_t k : {8, 9, 10, 11, 12}) seen.touch(k);
  EXPECT_FALSE(seen.contains(5));
  EXPECT_TRUE(seen.contains(12));
}

TEST(RecentKeys, KeyZeroIsAKeyLikeAnyOther) {
  // Slot value 0 marks an empty slot; the key 0 is kept apart, not confused with emptiness.
  RecentKeys seen(2);
  EXPECT_FALSE(seen.contains(0));
  seen.touch(0);
  EXPECT_TRUE(seen.contains(0));
  EXPECT_FALSE(seen.contains(1));
  seen.touch(1);  // generation {0, 1} full -> previous
  seen.touch(2);
  seen.touch(3);  // {2, 3} full -> previous; {0, 1} forgotten
  EXPECT_FALSE(seen.contains(0));
  EXPECT_TRUE(seen.contains(3));
}

TEST(MissAttribution, ATraceThatNeverRepeatsReportsNoLostReuse) {
  // 3000 prompts of 512 distinct tokens at block size 1: 1.5 M block keys, within the horizon
  // (8 x 100,000 blocks -> 2^20 keys; forgetting could only turn a yes into a no anyway). Nothing was reusable, so no
  // request may report a lost reuse; with the former Bloom filter about 1.4 % of first-block queries were false
  // positives
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

// Request 0 (64 tokens of content 7, B = 16: 4 block keys), then `fillers` requests of 64 other
// tokens (4 distinct keys each), then request 0's prompt again; a 4-block cache (5 with the null
// block) has evicted request 0's blocks long before. Returns the repeat's record.
RequestRecord repeat_after_fillers(int fillers, bool attribution = true) {
  std::vector<RequestSpec> reqs{make_request(0, 0, {text(7, 64)}, 1)};
  for (int i = 1; i <= fillers; ++i) reqs.push_back(make_request(i, i, {text(100 + static_cast<uint64_t>(i), 64)}, 1));
  reqs.push_back(make_request(fillers + 1, fillers + 10, {text(7, 64)}, 1));
  RecordingSink sink;
  EngineConfig config = config_for(full_layout(16, 5));
  config.miss_attribution = attribution;
  run_engine(config, std::move(reqs), sink);
  return sink.requests.at(fillers + 1);
}

TEST(MissAttribution, AnEvictionBeyondTheHorizonIsNotReportedAsEvicted) {
  // Horizon: 8 x 5 blocks = 40 -> the minimum 2^14 distinct keys. 2^13 + 1 fillers register 32,772 >
  // 2 x 2^14 = 32,768 keys, so request 0's keys are forgotten; its repeat misses and is not
  // attributed: nothing known was reusable.
  const RequestRecord again = repeat_after_fillers((1 << 13) + 1);
  EXPECT_EQ(again.cached_tokens, 0);
  EXPECT_EQ(again.cause, MissCause::kNone);
  EXPECT_EQ(again.lost_tokens, 0);
}

TEST(MissAttribution, AnEvictionWithinTheHorizonIsReportedAsEvicted) {
  // 2^11 fillers (8,192 keys < 2^14): request 0's keys are remembered, so the repeat's 63 reusable
  // tokens (L - 1) are lost to eviction.
  const RequestRecord again = repeat_after_fillers(1 << 11);
  EXPECT_EQ(again.cached_tokens, 0);
  EXPECT_EQ(again.cause, MissCause::kEvicted);
  EXPECT_EQ(again.lost_tokens, 63);
}

TEST(MissAttribution, OffReportsNothingAndSchedulesTheSame) {
  // engine.miss_attribution: false: the same repeat is served the same way (a miss, the same first
  // token), only its cause and lost tokens are not computed.
  const RequestRecord on = repeat_after_fillers(1 << 11);
  const RequestRecord off = repeat_after_fillers(1 << 11, false);
  EXPECT_EQ(on.cause, MissCause::kEvicted);
  EXPECT_EQ(off.cause, MissCause::kNone);
  EXPECT_EQ(off.lost_tokens, 0);
  EXPECT_EQ(off.cached_tokens, on.cached_tokens);
  EXPECT_EQ(off.first_token, on.first_token);
  EXPECT_EQ(off.finish, on.finish);
}

}  // namespace
}  // namespace kvsim
