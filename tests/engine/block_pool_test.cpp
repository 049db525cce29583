#include "sim/engine/block_pool.h"

#include <gtest/gtest.h>

#include "sim/engine/kv_cache_coordinator.h"
#include "tests/engine/engine_test_util.h"

namespace kvsim {
namespace {

TEST(BlockPool, NullBlockIsNeverAllocatedSoUsableIsNMinusOne) {
  BlockPool pool(5, true);
  EXPECT_EQ(pool.num_free_blocks(), 4);
  std::vector<BlockId> got;
  pool.get_new_blocks(4, got);
  EXPECT_EQ(got, (std::vector<BlockId>{1, 2, 3, 4}));  // initial queue ordered by id, block 0 excluded
  EXPECT_EQ(pool.num_free_blocks(), 0);
  EXPECT_DOUBLE_EQ(pool.usage(), 1.0);
}

TEST(BlockPool, FreedUnhashedBlocksArePrependedAndReusedFirst) {
  BlockPool pool(6, true);  // usable 1..5
  std::vector<BlockId> got;
  pool.get_new_blocks(3, got);  // 1,2,3; queue [4,5]
  const std::vector<BlockId> two{2};
  pool.free_blocks(two);  // no hash: to the front -> [2,4,5]
  EXPECT_EQ(pool.free_queue(), (std::vector<BlockId>{2, 4, 5}));
  std::vector<BlockId> next;
  pool.get_new_blocks(1, next);
  EXPECT_EQ(next[0], 2);
}

TEST(BlockPool, HashedBlocksAreAppendedAndEvictedOldestFreedFirst) {
  BlockPool pool(6, true);  // usable 1..5
  std::vector<BlockId> got;
  pool.get_new_blocks(4, got);  // 1..4, queue [5]
  for (BlockId b : got) pool.cache_block(b, 100 + static_cast<uint64_t>(b));
  const std::vector<BlockId> first{1, 2}, second{3, 4};
  pool.free_blocks(first);   // hashed: appended -> [5,1,2]
  pool.free_blocks(second);  // -> [5,1,2,3,4]
  EXPECT_EQ(pool.free_queue(), (std::vector<BlockId>{5, 1, 2, 3, 4}));
  EXPECT_EQ(pool.num_cached_free_blocks(), 4);
  std::vector<BlockId> next;
  pool.get_new_blocks(2, next);  // 5 (unhashed), then 1: the oldest freed hashed block is evicted
  EXPECT_EQ(next, (std::vector<BlockId>{5, 1}));
  EXPECT_EQ(pool.evictions(), 1);
  EXPECT_EQ(pool.get_cached_block(101), kNoBlock);
  EXPECT_EQ(pool.get_cached_block(102), 2);
}

TEST(BlockPool, TouchTakesAFreeCachedBlockOutOfTheQueue) {
  BlockPool pool(4, true);
  std::vector<BlockId> got;
  pool.get_new_blocks(1, got);  // block 1
  pool.cache_block(1, 7);
  pool.free_blocks(got);
  EXPECT_EQ(pool.num_free_blocks(), 3);
  const std::vector<BlockId> hit{pool.get_cached_block(7)};
  pool.touch(hit);
  EXPECT_EQ(pool.ref_cnt(1), 1);
  EXPECT_EQ(pool.num_free_blocks(), 2);
  EXPECT_FALSE(pool.in_free_queue(1));
}

TEST(BlockPool, ARequestsTailBlocksAreEvictedBeforeItsHead) {
  // One request of 64 tokens at B = 16 holds blocks 1..4 (head to tail); freeing goes tail first,
  // so the free queue after it is [5, 4, 3, 2, 1] and block 4 (the tail) is evicted first.
  KvCacheCoordinator kv(testing::full_layout(16, 6), true, 8192, 1 << 20);
  ASSERT_TRUE(kv.allocate_slots(0, 0, 64, nullptr, 0, 0));
  std::vector<uint64_t> hashes{11, 12, 13, 14};
  kv.cache_blocks(0, hashes, 64);
  kv.free(0);
  EXPECT_EQ(kv.pool().free_queue(), (std::vector<BlockId>{5, 4, 3, 2, 1}));
  std::vector<BlockId> next;
  kv.pool().get_new_blocks(2, next);
  EXPECT_EQ(next, (std::vector<BlockId>{5, 4}));
  EXPECT_EQ(kv.pool().get_cached_block(cache_key(14, 0)), kNoBlock);  // tail evicted
  EXPECT_EQ(kv.pool().get_cached_block(cache_key(11, 0)), 1);         // head kept
}

TEST(BlockPool, SameHashInTwoBlocksIsKeptAndLookupReturnsTheFirst) {
  BlockPool pool(4, true);
  std::vector<BlockId> got;
  pool.get_new_blocks(2, got);
  pool.cache_block(1, 9);
  pool.cache_block(2, 9);
  EXPECT_EQ(pool.get_cached_block(9), 1);
  pool.free_blocks(got);  // hashed -> appended [3,1,2]
  std::vector<BlockId> next;
  pool.get_new_blocks(2, next);  // 3, then 1 evicted: 2 still answers the key
  EXPECT_EQ(pool.get_cached_block(9), 2);
}

TEST(BlockPool, NeverUsedBlocksStayOneRunInTheQueueAndCostNothing) {
  // A pool of 2^30 blocks (an SGLang page-1 pool is ~3.3e7) keeps records only for the blocks handed out.
  BlockPool big(int64_t{1} << 30, true);
  EXPECT_EQ(big.num_free_blocks(), (int64_t{1} << 30) - 1);
  EXPECT_EQ(big.num_materialised_blocks(), 0);
  std::vector<BlockId> got;
  big.get_new_blocks(3, got);
  EXPECT_EQ(got, (std::vector<BlockId>{1, 2, 3}));
  EXPECT_EQ(big.num_materialised_blocks(), 3);
  EXPECT_TRUE(big.in_free_queue(1 << 29));
  EXPECT_EQ(big.ref_cnt(1 << 29), 0);
  // vLLM's order around the run: an unhashed free goes before it, a hashed one after it.
  BlockPool pool(8, true);  // usable 1..7
  std::vector<BlockId> three;
  pool.get_new_blocks(3, three);  // 1, 2, 3; queue [4..7]
  pool.cache_block(3, 33);
  const std::vector<BlockId> hashed{3}, plain{1};
  pool.free_blocks(hashed);  // appended: [4, 5, 6, 7, 3]
  pool.free_blocks(plain);   // prepended: [1, 4, 5, 6, 7, 3]
  EXPECT_EQ(pool.free_queue(), (std::vector<BlockId>{1, 4, 5, 6, 7, 3}));
  std::vector<BlockId> next;
  pool.get_new_blocks(6, next);  // 1, then the run 4..7, then 3 (evicting its hash)
  EXPECT_EQ(next, (std::vector<BlockId>{1, 4, 5, 6, 7, 3}));
  EXPECT_EQ(pool.evictions(), 1);
  EXPECT_EQ(pool.get_cached_block(33), kNoBlock);
  EXPECT_EQ(pool.num_materialised_blocks(), 7);
}

TEST(BlockHashIndex, GrowsPastItsFirstSizeAndKeepsEveryKey) {
  BlockHashIndex index(4);  // 16 slots at first
  for (uint64_t k = 1; k <= 5000; ++k) index.find_or_insert(k * 7919).head = static_cast<BlockId>(k);
  for (uint64_t k = 1; k <= 5000; k += 2) index.erase(index.find(k * 7919));
  for (uint64_t k = 1; k <= 5000; ++k) {
    const BlockHashIndex::Entry* e = index.find(k * 7919);
    if (k % 2 == 1) {
      EXPECT_EQ(e, nullptr) << k;
    } else {
      ASSERT_NE(e, nullptr) << k;
      EXPECT_EQ(e->head, static_cast<BlockId>(k));
    }
  }
}

}  // namespace
}  // namespace kvsim
