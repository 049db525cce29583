// Lower tiers below the host tier (rule 25, vLLM tiering/manager.py): write-through at host store
// completion, a host miss that hits the lower tier is promoted lower -> host -> GPU. Every value is
// worked out by hand: FixedLatency steps take 1 ms + 1 us per scheduled token; block size 16, chunks
// of one block; 1e6 bytes per block per GPU (TP 1); 4 usable GPU blocks (64 tokens).
#include <gtest/gtest.h>

#include "sim/tier/kv_offload.h"
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
using tier_test::nvme_tier;
using tier_test::small_engine;

// Host: 4 chunks, read 2e9 B/s, write 1e9 B/s, 10 us. Lower: tier_test::nvme_tier().
EngineConfig engine(bool with_lower) {
  KvOffloadConfig c = host_tier(4, 2e9, 1e9);
  if (with_lower) c.lower.push_back(nvme_tier());
  return small_engine(c);
}

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
