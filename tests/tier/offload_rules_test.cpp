// KV offload rules 24, 26, 28 and hybrids (cluster-offload.md A.1, A.2, G): the store fence, the I/O
// servers of a lower tier, LMCache's write to every tier and tiered prefix, saved states with their chunks.
// Every expected value is worked out by hand in the comments: FixedLatency steps take 1 ms + 1 us per
// scheduled token; block size 16; 1e6 bytes per block (and per saved state) per GPU, TP 1.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/tier/io_station.h"
#include "sim/tier/kv_offload.h"
#include "tests/engine/engine_test_util.h"
#include "tests/engine/hybrid_test_util.h"
#include "tests/tier/tier_test_util.h"

namespace kvsim {
namespace {

using testing::make_request;
using testing::RecordingSink;
using testing::text;
using tier_test::host_tier;
using tier_test::kBlockBytes;
using tier_test::ms_ns;
using tier_test::nvme_tier;
using tier_test::small_engine;

// Rule 24. A (64 tokens, 1 output) at 0: step 0 -> 1.064 ms; its 4 chunks go out in one D2H job at the
// step end: 10 us + 4e6 / 1e9 = 4.010 ms -> 5.074 ms. C (other 64 tokens) at 2 ms needs all 4 GPU blocks,
// which are A's, their store still running: the step waits until 5.074 ms, then computes 1.064 ms ->
// C's first token 6.138 ms, a wait of 3.074 ms. With a write bandwidth of 1e12 B/s the store ends at
// 1.064 + 0.010 + 0.004 = 1.078 ms, before C arrives: no wait, C's first token 3.064 ms.
TEST(StoreFence, AStepReusingABlockWithAPendingStoreWaitsForIt) {
  for (const bool slow : {true, false}) {
    RecordingSink sink;
    testing::run_engine(small_engine(host_tier(100, 2e9, slow ? 1e9 : 1e12)),
                        {make_request(1, 0, {text(7, 64)}, 1), make_request(2, 2, {text(8, 64)}, 1)}, sink);
    const RequestRecord& c = sink.requests.at(2);
    ASSERT_TRUE(c.finished);
    EXPECT_EQ(c.first_token.ns(), ms_ns(slow ? 6.138 : 3.064)) << slow;
    int64_t waited = 0, wait_ns = 0;
    for (const StepRecord& s : sink.steps) {
      waited += s.store_wait_ns > 0;
      wait_ns += s.store_wait_ns;
    }
    EXPECT_EQ(waited, slow ? 1 : 0);
    EXPECT_EQ(wait_ns, slow ? ms_ns(3.074) : 0);
  }
}

// Rule 24, preemption. A and B (other 32-token prompts, 3 outputs) at 0 fill the 4 GPU blocks: step 1
// 0 -> 1.064 ms. Their stores go out at its end in scheduling order: A's 2 chunks 10 us + 2e6 / 1e9 ->
// 3.074 ms, then B's -> 5.084 ms. Step 2 (planned at 1.064 ms): A's 33rd token needs a block, none is
// free, B is preempted (its store still running) and A takes one of B's blocks: both fence rules ask for
// B's store, so the forward pass starts at 5.084 ms and the step (1 token: 1.001 ms) ends at 6.085 ms,
// a wait of 4.020 ms. Without offload the same step ends at 1.064 + 1.001 = 2.065 ms.
TEST(StoreFence, AStepThatPreemptsARequestWithAPendingStoreWaitsForIt) {
  for (const bool offload : {true, false}) {
    EngineConfig e = small_engine(host_tier(100, 2e9, 1e9));
    if (!offload) e.kv_offload = KvOffloadConfig{};
    RecordingSink sink;
    testing::run_engine(e, {make_request(1, 0, {text(7, 32)}, 3), make_request(2, 0, {text(8, 32)}, 3)}, sink);
    ASSERT_GE(sink.steps.size(), 2u);
    EXPECT_EQ(sink.steps[0].end.ns(), ms_ns(1.064));
    EXPECT_EQ(sink.steps[1].preemptions, 1);
    EXPECT_EQ(sink.steps[1].end.ns(), ms_ns(offload ? 6.085 : 2.065)) << offload;
    EXPECT_EQ(sink.steps[1].store_wait_ns, offload ? ms_ns(4.020) : 0) << offload;
    EXPECT_TRUE(sink.requests.at(1).finished);
    EXPECT_TRUE(sink.requests.at(2).finished);
  }
}

// Rule 24, hybrids: the GPU block that holds a stored state is fenced like the chunk's blocks. One chunk
// (block 7) whose end holds a state (block 42): the job copies 1e6 + 1e6 B, 10 us + 2e6 / 1e9 = 2.010 ms
// from its submission at 0, so a step handing out block 7 or 42 waits until 2.010 ms; block 43 is free.
TEST(StoreFence, HybridStateBlocksAreFencedWithTheirChunk) {
  SimContext ctx(1);
  testing::FixedLatency lat;
  KvOffloadConfig c = host_tier(100, 2e9, 1e9);
  c.state_bytes_rank = kBlockBytes;
  c.state_slots = 1;
  KvOffload o(ctx, c, 16, lat, 8192);
  const std::vector<uint64_t> hashes = {0x1234};
  const std::vector<int32_t> blocks = {7};
  int64_t next = 0;
  RequestRecord rec;
  o.offer_store(
      RequestId(1), hashes, blocks, next, 16, rec, [](int64_t pos) { return pos == 16; },
      [](int64_t pos, std::vector<int32_t>& out) {
        if (pos == 16) out.push_back(42);
      });
  EXPECT_EQ(rec.tier_stored_bytes, 2 * kBlockBytes);
  o.submit_stores();
  const std::vector<int32_t> chunk = {7}, state = {42}, other = {43};
  EXPECT_EQ(o.store_fence(chunk, {}).at.ns(), ms_ns(2.010));
  EXPECT_EQ(o.store_fence(state, {}).at.ns(), ms_ns(2.010));
  EXPECT_EQ(o.store_fence(other, {}).at.ns(), 0);
  const std::vector<RequestId> preempted = {RequestId(1)};
  EXPECT_EQ(o.store_fence({}, preempted).at.ns(), ms_ns(2.010));
}

// Rule 26. Two read servers and one write server, 10 us per job, read 1e9 B/s, write 0.5e9 B/s. Three
// reads of 1e6 B at 0: two start on the read servers, the third on the idle write server (the write
// queue is empty), each 10 us + 1 ms = 1.010 ms of the read direction. A write of 1e6 B at 0 finds every
// server busy and queues; the first server to finish (read server 0, at 1.010 ms) takes it (its own
// queue is empty): 10 us + 2 ms -> 3.020 ms.
TEST(IoStation, ReadAndWriteServersWithFallback) {
  SimContext ctx(1);
  IoStation io(ctx, 2, 1, Duration::us(10), 1e9, 0.5e9);
  std::vector<int64_t> ends;
  for (int k = 0; k < 3; ++k) io.submit(IoStation::Dir::kRead, kBlockBytes, [&](SimTime t) { ends.push_back(t.ns()); });
  int64_t write_end = 0;
  io.submit(IoStation::Dir::kWrite, kBlockBytes, [&](SimTime t) { write_end = t.ns(); });
  EXPECT_EQ(io.busy(), 3);
  while (ctx.queue.run_one()) {
  }
  ASSERT_EQ(ends.size(), 3u);
  for (int64_t e : ends) EXPECT_EQ(e, ms_ns(1.010));
  EXPECT_EQ(write_end, ms_ns(3.020));
  // 16 + 16 servers (vLLM's default threads): 20 reads at once all start, 16 + 4, and end together.
  IoStation wide(ctx, 16, 16, Duration::us(10), 1e9, 0.5e9);
  const SimTime t0 = ctx.now();
  std::vector<int64_t> wide_ends;
  for (int k = 0; k < 20; ++k)
    wide.submit(IoStation::Dir::kRead, kBlockBytes, [&](SimTime t) { wide_ends.push_back((t - t0).ns()); });
  EXPECT_EQ(wide.busy(), 20);
  while (ctx.queue.run_one()) {
  }
  ASSERT_EQ(wide_ends.size(), 20u);
  for (int64_t e : wide_ends) EXPECT_EQ(e, ms_ns(1.010));
}

// Rule 28, write to every tier. Host tier of 2 chunks, NVMe below. A (64 tokens = 4 chunks) at 0: the host
// cannot take 4 chunks (nothing evictable): skipped. LMCache still puts them to NVMe: the D2H copy 10 us +
// 4e6 / 1e9 = 4.010 ms (1.064 -> 5.074 ms), then the NVMe write 100 us + 4e6 / 0.5e9 = 8.1 ms -> 13.174 ms.
// C (other 64 tokens) at 14 ms evicts A from the GPU. B = A's prompt at 20 ms: GPU and host miss, NVMe
// hit of 4 chunks: read 100 us + 4e6 / 1e9 = 4.1 ms -> 24.1 ms (the write-back to the 2-chunk host tier
// cannot make room), then host -> GPU 10 us + 4e6 / 2e9 = 2.010 ms -> 26.110 ms; one token 1.001 ms ->
// first token 27.111 ms. Native: the host skipped the store, so nothing was written through; B
// prefills 64 tokens, 20 -> 21.064 ms.
TEST(LmCache, WritesEveryTierEvenWhenTheHostSkipsAndReadsBackFromTheLowerTier) {
  for (const bool lmcache : {true, false}) {
    KvOffloadConfig c = host_tier(2, 2e9, 1e9);
    c.lower.push_back(nvme_tier());
    c.lmcache = lmcache;
    RecordingSink sink;
    testing::run_engine(small_engine(c),
                        {make_request(1, 0, {text(7, 64)}, 1), make_request(2, 14, {text(8, 64)}, 1),
                         make_request(3, 20, {text(7, 64)}, 1)},
                        sink);
    const RequestRecord& b = sink.requests.at(3);
    ASSERT_TRUE(b.finished);
    EXPECT_EQ(b.cached_tokens, 0);
    EXPECT_EQ(sink.requests.at(1).tier_stores_skipped_chunks, 4);
    if (lmcache) {
      EXPECT_EQ(b.tier_cached_tokens, 63);
      EXPECT_EQ(b.tier_cached_tokens_by_tier[0], 0);
      EXPECT_EQ(b.tier_cached_tokens_by_tier[1], 63);
      EXPECT_EQ(b.tier_load_ns, ms_ns(6.110));
      EXPECT_EQ(b.first_token.ns(), ms_ns(27.111));
    } else {
      EXPECT_EQ(b.tier_cached_tokens, 0);
      EXPECT_EQ(b.first_token.ns(), ms_ns(21.064));
    }
  }
}

// Rule 28, tiered prefix. Host tier of 2 chunks. A1 (32 tokens) at 0 fills it with chunks 0-1 (and NVMe).
// A2 (A1's 32 + 32 more) at 10 ms hits A1's blocks on the GPU and stores chunks 2-3: the host is full of
// A2's own chunks (protected), so only NVMe takes them (written by 17.142 ms: A2's step 10 -> 11.032,
// D2H 10 us + 2e6 / 1e9 -> 13.042, NVMe 100 us + 2e6 / 0.5e9 -> 17.142). C (other 64 tokens) at 20 ms
// takes every GPU block; the host cannot take its 4 chunks (2 evictable, 4 needed). B = A2's prompt at
// 30 ms: host run chunks 0-1 (32 tokens), NVMe run chunks 2-3 (31 tokens: the last prompt token is
// computed). Loads: NVMe read of 2 chunks 100 us + 2e6 / 1e9 = 2.1 ms -> 32.1 ms (the write-back finds
// the host full of B's own chunks), then host -> GPU 10 us + 4e6 / 2e9 = 2.010 ms -> 34.110 ms; one
// token -> first token 35.111 ms.
TEST(LmCache, TieredPrefixTakesTheHostRunThenTheLowerTierRun) {
  KvOffloadConfig c = host_tier(2, 2e9, 1e9);
  c.lower.push_back(nvme_tier());
  c.lmcache = true;
  RecordingSink sink;
  testing::run_engine(small_engine(c),
                      {make_request(1, 0, {text(7, 32)}, 1), make_request(2, 10, {text(7, 64)}, 1),
                       make_request(3, 20, {text(8, 64)}, 1), make_request(4, 30, {text(7, 64)}, 1)},
                      sink);
  EXPECT_EQ(sink.requests.at(2).cached_tokens, 32);
  const RequestRecord& b = sink.requests.at(4);
  ASSERT_TRUE(b.finished);
  EXPECT_EQ(b.cached_tokens, 0);
  EXPECT_EQ(b.tier_cached_tokens, 63);
  EXPECT_EQ(b.tier_cached_tokens_by_tier[0], 32);
  EXPECT_EQ(b.tier_cached_tokens_by_tier[1], 31);
  EXPECT_EQ(b.tier_cached_blocks_by_tier[0], 2);
  EXPECT_EQ(b.tier_cached_blocks_by_tier[1], 2);
  EXPECT_EQ(b.first_token.ns(), ms_ns(35.111));
}

// Hybrids: the saved state goes to the tier with its chunk, and a tier hit ends where the tier holds a
// state. Budget 32 tokens, mamba_cache_mode align, every saved state kept: A (64 tokens) runs in chunks
// [0, 32) and [32, 64), so states are saved at 32 and 64 only. Two other prompts evict A from the GPU.
// B shares A's first 48 tokens: its tier attention run is 3 chunks (48 tokens) but there is no state at
// 48, so the hit ends at 32. The same run without state groups loads the 48 tokens. With `lower`, the
// host tier holds 1 chunk (every store skipped there) and LMCache puts chunks and states to NVMe only:
// the hit, state included, comes from NVMe.
TEST(HybridOffload, TierHitEndsAtTheLastChunkBoundaryWithASavedState) {
  for (const bool lower : {false, true}) {
    for (const bool hybrid : {true, false}) {
      SCOPED_TRACE(std::string(hybrid ? "hybrid" : "attention only") + (lower ? ", NVMe" : ", host"));
      EngineConfig e = testing::config_for(hybrid ? testing::hybrid_layout(16, 9, 1) : testing::full_layout(16, 9));
      e.max_num_batched_tokens = 32;
      if (hybrid) {
        e.mamba_cache_mode = MambaCacheMode::kAlign;
        e.prefix_cache_retention_interval = kRetentionDense;
      }
      KvOffloadConfig c = host_tier(lower ? 1 : 100, 2e9, 1e9);
      if (lower) {
        c.lower.push_back(nvme_tier());
        c.lmcache = true;
      }
      if (hybrid) {
        c.state_bytes_rank = kBlockBytes;
        c.state_slots = 1;
      }
      e.kv_offload = c;
      RecordingSink sink;
      testing::run_engine(e,
                          {make_request(1, 0, {text(7, 64)}, 1), make_request(2, 10, {text(8, 64)}, 1),
                           make_request(3, 20, {text(9, 64)}, 1), make_request(4, 30, {text(7, 48), text(10, 40)}, 1)},
                          sink);
      if (hybrid) {
        const auto& saved = sink.requests.at(1).saved_state_positions;
        ASSERT_NE(std::find(saved.begin(), saved.end(), 32), saved.end());
        ASSERT_EQ(std::find(saved.begin(), saved.end(), 48), saved.end());
      }
      const RequestRecord& b = sink.requests.at(4);
      ASSERT_TRUE(b.finished);
      ASSERT_EQ(b.cached_tokens, 0) << "A must be gone from the GPU";
      EXPECT_EQ(b.tier_cached_tokens, hybrid ? 32 : 48);
      EXPECT_EQ(b.tier_cached_tokens_by_tier[lower ? 1 : 0], hybrid ? 32 : 48);
      // Bytes loaded: the chunks, plus one saved state for the hybrid.
      EXPECT_EQ(b.tier_loaded_bytes, hybrid ? 2 * kBlockBytes + kBlockBytes : 3 * kBlockBytes);
    }
  }
}

}  // namespace
}  // namespace kvsim
