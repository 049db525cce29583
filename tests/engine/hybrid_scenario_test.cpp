// The four vLLM issue #45238 scenarios end to end (load_scenario + run_simulation).
#include <gtest/gtest.h>

#include <map>

#include "sim/app/simulation.h"
#include "sim/scenario/scenario.h"

namespace kvsim {
namespace {

struct Issue45238Case {
  const char* file;
  int prefix;
  bool later;
};

TEST(HybridScenario, Issue45238HitsPerGroupFollowTheCheckpointRule) {
  // 8 groups x 8 requests, interleaved, concurrency 1, B = 528, budget 2048, prompts of 2200 tokens.
  // Every request saves states at its chunk ends: 1584 (= 3 blocks, budget floor) and 2112 (prompt cut)
  // unless a junction stop comes first. Attention matches floor(prefix / 528) * 528: 1584 or 1056.
  //  - 1600 / June (dense): request 1 keeps 1584 -> requests 2..8 hit 1584: 7 per group.
  //  - 1500 / June: states 1584 and 2112 lie past the 1056 match -> 0 hits.
  //  - 1600 / later (retention 0): request 1 keeps only 2112; request 2 misses, its junction stop at
  //    1584 (= its chunk end) is kept; requests 3..8 hit 1584: 6 per group.
  //  - 1500 / later: request 2 stops at the junction 1056 and keeps it; requests 3..8 hit 1056: 6.
  const Issue45238Case cases[] = {{"scenarios/hybrid/qwen35-4b-1600-june.yaml", 1600, false},
                                  {"scenarios/hybrid/qwen35-4b-1500-june.yaml", 1500, false},
                                  {"scenarios/hybrid/qwen35-4b-1600-later.yaml", 1600, true},
                                  {"scenarios/hybrid/qwen35-4b-1500-later.yaml", 1500, true}};
  const int64_t b = 528;
  for (const Issue45238Case& ic : cases) {
    SCOPED_TRACE(ic.file);
    const SimulationResult res = run_simulation(load_scenario(ic.file));
    ASSERT_EQ(res.engine.layout.block_size, b);
    const int64_t match = ic.prefix / b * b;
    const bool state_in_match = ic.later || (2048 / b * b) <= match;  // June: only the chunk end 1584
    const int hits_per_group = !state_in_match ? 0 : (ic.later ? 6 : 7);
    std::map<int64_t, int> hits;
    for (const auto& row : res.collector->requests()) {
      if (row.cached_tokens > 0) {
        ++hits[row.id % 8];
        EXPECT_EQ(row.cached_tokens, match) << row.id;
      }
    }
    for (int g = 0; g < 8; ++g) EXPECT_EQ(hits[g], hits_per_group) << "group " << g;
    EXPECT_EQ(res.summary.prefix_cache.hit_requests, 8 * hits_per_group);
    // Lost to a missing state: June 1500: 7 x 8 requests x 1056; later: the 2nd request of each group.
    const int64_t lost_no_state =
        res.summary.prefix_cache.lost_tokens_by_cause[static_cast<size_t>(MissCause::kNoSavedState)];
    EXPECT_EQ(lost_no_state, !state_in_match ? 56 * match : (ic.later ? 8 * match : 0));
    EXPECT_EQ(res.summary.requests.finished, 64);
  }
}

}  // namespace
}  // namespace kvsim
