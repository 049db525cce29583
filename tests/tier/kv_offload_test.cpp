// Native KV offload in the engine (vLLM OffloadingConnector; cluster-offload.md A.1, rules 19-23, 27).
// Every expected value is worked out by hand in the comments: FixedLatency steps take 1 ms + 1 us per
// scheduled token; block size 16; the tier moves 1e6 bytes per block (per GPU, TP 1).
#include "sim/tier/kv_offload.h"

#include <gtest/gtest.h>

#include "tests/engine/engine_test_util.h"
#include "tests/tier/tier_test_util.h"

namespace kvsim {
namespace {

using testing::make_request;
using testing::RecordingSink;
using testing::text;
using tier_test::host_tier;
using tier_test::kBlockBytes;
using tier_test::ms_ns;
using tier_test::small_engine;

// A (64 tokens, 1 output) at 0: one step 0 -> 1.064 ms; its 4 chunks are stored in one D2H job submitted
// at the step end: 10 us + 4e6 B / 1e9 B/s = 4.010 ms, so they become hits at 5.074 ms. C (other
// content, 64 tokens) at 6 ms evicts A from the GPU (6 -> 7.064 ms; A's stores ended, so no fence); C's
// own store runs 7.064 -> 11.074 ms. B = A's prompt, GPU hit 0, tier hit 4 chunks (the full prompt):
//  - at 12 ms: load 10 us + 4e6 / 2e9 = 2.010 ms -> 14.010 ms; then one step of 1 token (a full-prompt
//    hit still computes one token): 1.001 ms -> first token 15.011 ms;
//  - at 7.1 ms: B's blocks are C's, whose store still reads them (rule 24): the load starts at 11.074 ms
//    and ends at 13.084 ms (5.984 ms after B was admitted); first token 14.085 ms.
// (A lookup while the store is pending is the HostTier test: with the fence a request can evict A's GPU
// blocks only once their store ended.)
TEST(KvOffload, StoreThenLoadRoundTripTiming) {
  for (const bool late : {true, false}) {
    RecordingSink sink;
    std::vector<RequestSpec> reqs = {make_request(1, 0, {text(7, 64)}, 1), make_request(2, 6, {text(8, 64)}, 1)};
    RequestSpec b = make_request(3, 0, {text(7, 64)}, 1);
    b.arrival = SimTime::from_ns(late ? 12000000 : 7100000);
    reqs.push_back(b);
    testing::run_engine(small_engine(host_tier(100, 2e9, 1e9)), reqs, sink);
    const RequestRecord& a = sink.requests.at(1);
    EXPECT_EQ(a.tier_stored_bytes, 4 * kBlockBytes);
    const RequestRecord& r = sink.requests.at(3);
    ASSERT_TRUE(r.finished);
    EXPECT_EQ(r.cached_tokens, 0);  // nothing on the GPU
    EXPECT_EQ(r.tier_cached_tokens, 63);
    EXPECT_EQ(r.tier_cached_tokens_by_tier[0], 63);
    EXPECT_EQ(r.tier_cached_blocks, 4);
    EXPECT_EQ(r.tier_loaded_bytes, 4 * kBlockBytes);
    EXPECT_EQ(r.tier_loads, 1);
    EXPECT_EQ(r.tier_load_ns, ms_ns(late ? 2.010 : 5.984));
    EXPECT_EQ(r.first_token.ns(), ms_ns(late ? 15.011 : 14.085));
  }
}

// Chunks of 32 tokens (2 blocks). A stores chunk 0 (tokens 0-31) and chunk 1 (32-63). B shares A's
// first 16 tokens only: less than one chunk, no hit. B2 shares A's first 32: one chunk, 32 tokens
// loaded. Both arrive at 20 ms, after C evicted A from the GPU and every store ended.
TEST(KvOffload, HitBelowOneChunkIsIgnored) {
  for (const int64_t shared : {16, 32}) {
    RecordingSink sink;
    std::vector<RequestSpec> reqs = {make_request(1, 0, {text(7, 64)}, 1), make_request(2, 10, {text(8, 64)}, 1),
                                     make_request(3, 20, {text(7, shared), text(9, 64 - shared)}, 1)};
    testing::run_engine(small_engine(host_tier(100, 2e9, 1e9, 32)), reqs, sink);
    const RequestRecord& r = sink.requests.at(3);
    EXPECT_EQ(r.cached_tokens, 0);
    EXPECT_EQ(r.tier_cached_tokens, shared == 16 ? 0 : 32);
  }
}
// Only a store's own keys are protected from eviction (vLLM CPUOffloadingManager.prepare_store:
// `protected = set(keys)`): the request's earlier chunks, once stored, make room like any other. A
// (64 tokens, chunk = block = 16 tokens, budget 16) prefills in 4 steps of 1.016 ms; each step's chunk
// is stored at its end in 10 us + 1e6 / 1e10 = 0.110 ms, so at each step's planning the previous
// step's chunk is still pending and the one before it is ready.
// Tier of 2 chunks: steps 1-2 store chunks 0-1; step 3 evicts chunk 0 (ready) for chunk 2, step 4
// chunk 1 for chunk 3: 4 stored, none skipped. D (other content) at 10 ms evicts one of A's.
// Tier of 1 chunk: step 1 stores chunk 0; step 2 finds it pending: skipped; step 3 evicts it for
// chunk 2; step 4 finds chunk 2 pending: skipped. 2 stored, 2 skipped.
TEST(KvOffload, StoreEvictsTheRequestsOwnIdleChunksOnlyItsOwnKeysAreProtected) {
  for (const int64_t chunks : {2, 1}) {
    RecordingSink sink;
    EngineConfig c = small_engine(host_tier(chunks, 2e9, 1e10));
    c.max_num_batched_tokens = 16;
    testing::run_engine(c, {make_request(1, 0, {text(7, 64)}, 1), make_request(2, 10, {text(8, 16)}, 1)}, sink);
    const RequestRecord& a = sink.requests.at(1);
    EXPECT_EQ(a.tier_stored_bytes, (chunks == 2 ? 4 : 2) * kBlockBytes) << chunks;
    EXPECT_EQ(a.tier_stores_skipped_chunks, chunks == 2 ? 0 : 2) << chunks;
    const RequestRecord& d = sink.requests.at(2);
    EXPECT_EQ(d.tier_stored_bytes, kBlockBytes) << chunks;
    EXPECT_EQ(d.tier_stores_skipped_chunks, 0) << chunks;
  }
}

// Cost policy, 4 blocks (64 tokens) to load after a GPU hit of 0, prefill chunk 8192:
// prefill = one step of 64 tokens = 1 ms + 64 us = 1.064 ms; load = 10 us + 4e6 B / bw.
// Crossover bw* = 4e6 / 1.054 ms = 3.795 GB/s. At 3.5 GB/s the load takes 1.1529 ms (recompute);
// at 4 GB/s 1.010 ms (reload). The vllm policy loads at both.
TEST(KvOffload, CostPolicyRecomputesBelowAndReloadsAboveTheCrossover) {
  SimContext ctx(1);
  testing::FixedLatency lat;
  for (const double bw : {3.5e9, 4.0e9}) {
    KvOffloadConfig c = host_tier(100, bw, 1e9);
    c.cost_policy = true;
    KvOffload o(ctx, c, 16, lat, 8192);
    EXPECT_EQ(o.worth_loading(0, 64), bw > 3.795e9) << bw;
    KvOffloadConfig v = host_tier(100, bw, 1e9);
    KvOffload ov(ctx, v, 16, lat, 8192);
    EXPECT_TRUE(ov.worth_loading(0, 64));
  }
  // The same through the engine (round-trip scenario above, B at 20 ms).
  for (const double bw : {3.5e9, 4.0e9}) {
    RecordingSink sink;
    KvOffloadConfig c = host_tier(100, bw, 1e9);
    c.cost_policy = true;
    testing::run_engine(small_engine(c),
                        {make_request(1, 0, {text(7, 64)}, 1), make_request(2, 10, {text(8, 64)}, 1),
                         make_request(3, 20, {text(7, 64)}, 1)},
                        sink);
    EXPECT_EQ(sink.requests.at(3).tier_cached_tokens, bw > 3.795e9 ? 63 : 0) << bw;
  }
}

// The saved prefill is the loaded tokens in the engine's prefill chunks: 32 tokens after 32 computed,
// chunk 16: two steps of 16 tokens = 2 x (1 ms + 16 us) = 2.032 ms, against 10 us + 2e6 B / bw.
TEST(KvOffload, CostPolicyPricesTheLoadedTokensInPrefillChunks) {
  SimContext ctx(1);
  testing::FixedLatency lat;
  KvOffloadConfig c = host_tier(100, 1e9, 1e9);  // load 2.010 ms < 2.032 ms
  c.cost_policy = true;
  KvOffload o(ctx, c, 16, lat, 16);
  EXPECT_TRUE(o.worth_loading(32, 32));
  KvOffloadConfig slow = host_tier(100, 0.98e9, 1e9);  // 10 us + 2.0408 ms = 2.0508 ms > 2.032 ms
  slow.cost_policy = true;
  KvOffload os(ctx, slow, 16, lat, 16);
  EXPECT_FALSE(os.worth_loading(32, 32));
}

}  // namespace
}  // namespace kvsim
