// ARC eviction for the offload tier, vLLM cpu/policies/arc.py (cluster-offload.md A.1, rule 21):
// T1/T2 with ghost lists B1/B2 and an adaptive T1 target that starts at 0. Each access below mirrors
// KvOffload: a lookup touches the key; on a miss the key is stored (prepare_store, the store's own
// touch while pending, complete_store).
#include "sim/tier/impl/arc_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/tier/host_tier.h"

namespace kvsim {
namespace {

using Keys = std::vector<uint64_t>;

bool access(HostTier& t, uint64_t k) {
  t.touch(Keys{k});
  if (t.state(k) == HostTier::State::kReady) return true;
  int64_t ins = 0, ev = 0;
  if (t.prepare_store(Keys{k}, Keys{k}, &ins, &ev)) {
    t.touch(Keys{k});
    t.complete_store(Keys{k});
  }
  return false;
}

int64_t hits(const std::string& eviction, const Keys& trace) {
  HostTier t(2, eviction);
  int64_t n = 0;
  for (uint64_t k : trace) n += access(t, k) ? 1 : 0;
  return n;
}

// A hot chunk H reused between scans of two one-off chunks, capacity 2.
// LRU: after H,H (hit 1) each pair of new chunks pushes H out before it returns: 1 hit.
// ARC: the second use moves H to T2; with target 0 every victim comes from T1 (|T1| >= 0), so the
// scan chunks only replace each other and H hits on each of its 3 returns: 1 + 3 = 4 hits.
TEST(ArcPolicy, ScanDoesNotEvictAFrequentlyReusedChunkWhereLruDoes) {
  constexpr uint64_t H = 100;
  const Keys trace{H, H, 1, 2, H, 3, 4, H, 5, 6, H};
  EXPECT_EQ(hits("lru", trace), 1);
  EXPECT_EQ(hits("arc", trace), 4);
}

// Adaptation: a hit in B1 raises the T1 target by max(1, |B2|/|B1|); once |T1| < target the victim
// comes from T2; a hit in B2 lowers the target by max(1, |B1|/|B2|).
TEST(ArcPolicy, GhostHitsMoveTheTargetBetweenRecencyAndFrequency) {
  HostTier t(2, "arc");
  const auto& arc = dynamic_cast<const ArcPolicy&>(t.policy());
  access(t, 1);
  access(t, 1);  // 1 -> T2
  access(t, 2);  // T1 = [2]
  access(t, 3);  // |T1| = 1 >= 0: 2 -> B1; T1 = [3]
  EXPECT_EQ(t.state(2), HostTier::State::kAbsent);
  EXPECT_EQ(arc.b1_size(), 1);
  access(t, 2);  // B1 hit: target 0 + max(1, 0/1) = 1; |T1| = 1 >= 1: 3 -> B1; T1 = [2]
  EXPECT_DOUBLE_EQ(arc.target_t1(), 1.0);
  EXPECT_EQ(t.state(3), HostTier::State::kAbsent);
  EXPECT_EQ(t.state(1), HostTier::State::kReady);
  access(t, 3);  // B1 hit: target 2; |T1| = 1 < 2: the T2 chunk 1 -> B2; T1 = [2, 3]
  EXPECT_DOUBLE_EQ(arc.target_t1(), 2.0);
  EXPECT_EQ(t.state(1), HostTier::State::kAbsent);
  EXPECT_EQ(arc.t1_size(), 2);
  EXPECT_EQ(arc.b2_size(), 1);
  access(t, 1);  // B2 hit: target 2 - max(1, 0/1) = 1; |T1| = 2 >= 1: 2 (T1's least recent) -> B1
  EXPECT_DOUBLE_EQ(arc.target_t1(), 1.0);
  EXPECT_EQ(t.state(2), HostTier::State::kAbsent);
  EXPECT_EQ(t.state(3), HostTier::State::kReady);
  EXPECT_EQ(t.state(1), HostTier::State::kReady);
}

// Rule 21 under ARC: busy (loading) and protected chunks are skipped; too few candidates -> skip.
TEST(ArcPolicy, EvictionSkipsBusyAndProtectedChunksAllOrNothing) {
  HostTier t(2, "arc");
  access(t, 1);
  access(t, 2);
  t.begin_load(Keys{1});
  int64_t ins = 0, ev = 0;
  EXPECT_FALSE(t.prepare_store(Keys{3}, Keys{2, 3}, &ins, &ev));  // 1 loading, 2 protected
  EXPECT_EQ(t.state(3), HostTier::State::kAbsent);
  ASSERT_TRUE(t.prepare_store(Keys{3}, Keys{3}, &ins, &ev));  // 2 is the only candidate
  EXPECT_EQ(ev, 1);
  EXPECT_EQ(t.state(2), HostTier::State::kAbsent);
  EXPECT_EQ(t.state(1), HostTier::State::kReady);
  t.end_load(Keys{1});
}

// vLLM's evict tries T1 only while |T1| >= int(target); below it T2 alone: with no evictable chunk there
// the store fails whole, even if T1 has one (T1 is not the fallback; T2 is T1's).
TEST(ArcPolicy, BelowTheTargetOnlyT2IsTriedAndNothingThereSkipsTheStore) {
  HostTier t(2, "arc");
  const auto& arc = dynamic_cast<const ArcPolicy&>(t.policy());
  access(t, 1);
  access(t, 2);  // T1 = [1, 2]
  access(t, 3);  // |T1| = 2 >= 0: 1 -> B1; T1 = [2, 3]
  access(t, 1);  // B1 hit: target 1; |T1| = 2 >= 1: 2 -> B1; T1 = [3, 1]
  access(t, 2);  // B1 hit: target 1 + max(1, 0 / 1) = 2; |T1| = 2 >= 2: 3 -> B1; T1 = [1, 2]
  ASSERT_DOUBLE_EQ(arc.target_t1(), 2.0);
  access(t, 3);  // B1 hit: target 3 (capacity 2 caps it at 2); |T1| = 2 >= 2: 1 -> B1; T1 = [2, 3]
  ASSERT_EQ(arc.t2_size(), 0);
  // Target 2 with |T1| = 2: T1 is tried. Protect T1's victim candidate 2 and 3: nothing evictable.
  int64_t ins = 0, ev = 0;
  EXPECT_FALSE(t.prepare_store(Keys{9}, Keys{2, 3, 9}, &ins, &ev));
  // One chunk goes to T2 (|T1| = 1 < target 2): a store must come from T2, whose only chunk is protected;
  // T1's chunk 3 is free but not taken, and the store is skipped.
  t.touch(Keys{2});  // 2 -> T2
  ASSERT_EQ(arc.t1_size(), 1);
  EXPECT_FALSE(t.prepare_store(Keys{9}, Keys{2, 9}, &ins, &ev));
  EXPECT_EQ(t.state(3), HostTier::State::kReady);
  // Unprotected, T2's chunk 2 goes.
  ASSERT_TRUE(t.prepare_store(Keys{9}, Keys{9}, &ins, &ev));
  EXPECT_EQ(t.state(2), HostTier::State::kAbsent);
  EXPECT_EQ(t.state(3), HostTier::State::kReady);
}

}  // namespace
}  // namespace kvsim
