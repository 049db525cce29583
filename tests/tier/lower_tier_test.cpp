// Lower tiers below the host tier (rule 25, vLLM tiering/manager.py): write-through at host store
// completion, a host miss that hits the lower tier is promoted lower -> host -> GPU. Every value is
// worked out by hand: FixedLatency steps take 1 ms + 1 us per scheduled token; block size 16, chunks
// of one block; 1e6 bytes per block per GPU (TP 1); 4 usable GPU blocks (64 tokens).
#include <gtest/gtest.h>

#include "sim/tier/kv_offload.h"
#include "tests/engine/engine_test_util.h"

namespace kvsim {
namespace {

using testing::make_request;
using testing::RecordingSink;
using testing::text;

constexpr int64_t kBlockBytes = 1000000;

// Host: 4 chunks, read 2e9 B/s, write 1e9 B/s, 10 us. Lower (NVMe-like): read 1e9, write 0.5e9, 100 us.
EngineConfig engine(bool with_lower) {
  KvOffloadConfig c;
  c.enabled = true;
  c.tier = "host-dram";
  c.chunk_tokens = 16;
  c.blocks_per_chunk = 1;
  c.chunk_bytes_rank = kBlockBytes;
  c.chunk_bytes = kBlockBytes;
  c.capacity_chunks = 4;
  c.size_bytes = 4 * kBlockBytes;
  c.read_bandwidth = 2e9;
  c.write_bandwidth = 1e9;
  c.latency = Duration::us(10);
  if (with_lower) {
    KvOffloadLowerTier l;
    l.tier = "nvme-gen4";
    l.capacity_chunks = 100;
    l.size_bytes = 100 * kBlockBytes;
    l.read_bandwidth = 1e9;
    l.write_bandwidth = 0.5e9;
    l.latency = Duration::us(100);
    c.lower.push_back(l);
  }
  EngineConfig e = testing::config_for(testing::full_layout(16, 5));
  e.kv_offload = c;
  return e;
}

int64_t ms_ns(double ms) { return static_cast<int64_t>(ms * 1e6 + 0.5); }

// A (64 tokens) at 0: step 0 -> 1.064 ms; host store 10 us + 4e6 / 1e9 = 4.010 ms -> 5.074 ms; write-
// through 100 us + 4e6 / 0.5e9 = 8.100 ms -> 13.174 ms (A's host chunks pinned until then).
// C (other 64 tokens) at 14 ms evicts A from the GPU and, storing its 4 chunks, A's 4 from the host.
// B = A's prompt at 20 ms, GPU and host miss:
//  - with the lower tier: promote 100 us + 4e6 / 1e9 = 4.100 ms -> 24.100 ms, then host -> GPU
//    10 us + 4e6 / 2e9 = 2.010 ms -> 26.110 ms (load time 6.110 ms); 1 token computed: 1.001 ms ->
//    first token 27.111 ms;
//  - without: B prefills 64 tokens, 20 -> 21.064 ms; its 63 reusable tokens (a full prompt keeps one
//    to compute) were stored in the host tier and are gone from the GPU and the host: evicted_all_tiers.
TEST(LowerTier, HostMissPromotesFromTheLowerTierInTwoHops) {
  for (const bool with_lower : {true, false}) {
    RecordingSink sink;
    std::vector<RequestSpec> reqs = {make_request(1, 0, {text(7, 64)}, 1), make_request(2, 14, {text(8, 64)}, 1),
                                     make_request(3, 20, {text(7, 64)}, 1)};
    testing::run_engine(engine(with_lower), reqs, sink);
    const RequestRecord& r = sink.requests.at(3);
    ASSERT_TRUE(r.finished);
    EXPECT_EQ(r.cached_tokens, 0);
    if (with_lower) {
      EXPECT_EQ(r.tier_cached_tokens, 63);
      EXPECT_EQ(r.tier_loads, 1);
      EXPECT_EQ(r.tier_load_ns, ms_ns(6.110));
      EXPECT_EQ(r.first_token.ns(), ms_ns(27.111));
      EXPECT_EQ(r.lost_tokens, 0);
    } else {
      EXPECT_EQ(r.tier_cached_tokens, 0);
      EXPECT_EQ(r.tier_loads, 0);
      EXPECT_EQ(r.first_token.ns(), ms_ns(21.064));
      EXPECT_EQ(r.cause, MissCause::kEvictedAllTiers);
      EXPECT_EQ(r.lost_tokens, 63);
    }
  }
}

}  // namespace
}  // namespace kvsim
