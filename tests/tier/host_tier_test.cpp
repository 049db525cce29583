// HostTier: vLLM CPUOffloadingManager + LRU policy (vllm/v1/kv_offload/cpu/manager.py,
// cpu/policies/lru.py; cluster-offload.md rules 21-22). Keys are arbitrary chunk hashes here.
#include "sim/tier/host_tier.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvsim {
namespace {

using Keys = std::vector<uint64_t>;

TEST(HostTier, StoreIsPendingUntilCompleteThenAHit) {
  HostTier t(4);
  int64_t ins = 0, ev = 0;
  ASSERT_TRUE(t.prepare_store(Keys{1, 2}, Keys{1, 2}, &ins, &ev));
  EXPECT_EQ(ins, 2);
  EXPECT_EQ(ev, 0);
  EXPECT_EQ(t.state(1), HostTier::State::kPending);
  EXPECT_EQ(t.ready_run(Keys{1, 2}), 0);  // pending chunks are no hit
  t.complete_store(Keys{1, 2});
  EXPECT_EQ(t.ready_run(Keys{1, 2, 3}), 2);
  // Keys already present are dropped: nothing new to insert.
  ASSERT_TRUE(t.prepare_store(Keys{1, 2}, Keys{1, 2}, &ins, &ev));
  EXPECT_EQ(ins, 0);
  EXPECT_EQ(t.size(), 2);
}

// Rule 21: a full tier evicts idle chunks not used by the storing request; if it cannot, the store is
// skipped and nothing changes.
TEST(HostTier, StoreSkippedWhenFullOfTheRequestsOwnChunks) {
  HostTier t(2);
  int64_t ins = 0, ev = 0;
  ASSERT_TRUE(t.prepare_store(Keys{1, 2}, Keys{1, 2}, &ins, &ev));
  t.complete_store(Keys{1, 2});
  // The same request's third chunk: both resident chunks are its own (protected).
  EXPECT_FALSE(t.prepare_store(Keys{3}, Keys{1, 2, 3}, &ins, &ev));
  EXPECT_EQ(t.state(3), HostTier::State::kAbsent);
  EXPECT_EQ(t.size(), 2);
  EXPECT_EQ(t.ready_run(Keys{1, 2}), 2);
  // Another request (protects only its own key): the LRU chunk goes.
  ASSERT_TRUE(t.prepare_store(Keys{3}, Keys{3}, &ins, &ev));
  EXPECT_EQ(ev, 1);
  EXPECT_EQ(t.state(1), HostTier::State::kAbsent);  // 1 completed first: least recently used
  EXPECT_EQ(t.state(2), HostTier::State::kReady);
  EXPECT_EQ(t.size(), 2);
}

TEST(HostTier, PendingAndLoadingChunksAreNotEvicted) {
  HostTier t(2);
  int64_t ins = 0, ev = 0;
  ASSERT_TRUE(t.prepare_store(Keys{1}, Keys{1}, &ins, &ev));  // pending
  ASSERT_TRUE(t.prepare_store(Keys{2}, Keys{2}, &ins, &ev));
  t.complete_store(Keys{2});
  t.begin_load(Keys{2});
  EXPECT_FALSE(t.prepare_store(Keys{3}, Keys{3}, &ins, &ev));  // 1 pending, 2 loading
  t.end_load(Keys{2});
  EXPECT_TRUE(t.prepare_store(Keys{3}, Keys{3}, &ins, &ev));
  EXPECT_EQ(t.state(2), HostTier::State::kAbsent);
  EXPECT_EQ(t.state(1), HostTier::State::kPending);
}

// Rule 22: touch walks keys in reverse, so the first chunk of a prefix ends most recent and the tail
// is evicted first.
TEST(HostTier, TouchLeavesThePrefixHeadMostRecent) {
  HostTier t(3);
  int64_t ins = 0, ev = 0;
  ASSERT_TRUE(t.prepare_store(Keys{1, 2, 3}, Keys{}, &ins, &ev));
  t.complete_store(Keys{1, 2, 3});  // LRU order 1, 2, 3
  t.touch(Keys{1, 2, 3});           // reverse walk: 3, 2, 1 -> LRU order 3, 2, 1
  ASSERT_TRUE(t.prepare_store(Keys{4}, Keys{}, &ins, &ev));
  EXPECT_EQ(t.state(3), HostTier::State::kAbsent);
  EXPECT_EQ(t.state(1), HostTier::State::kReady);
}

}  // namespace
}  // namespace kvsim
