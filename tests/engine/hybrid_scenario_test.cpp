// The four vLLM issue #45238 scenarios end to end (load_scenario + run_simulation).
#include <gtest/gtest.h>

#include <map>

#include "sim/app/simulation.h"
#include "sim/core/errors.h"
#include "sim/model/config_reader.h"
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

EngineConfig resolved(const std::string& file, const std::vector<std::string>& overrides) {
  const Scenario s = load_scenario(file, overrides);
  return resolve_engine_config(s, read_model_config(s.model));
}

TEST(HybridScenario, MambaCacheModeResolvesAsVllm) {
  const std::string nemo = "scenarios/hybrid/nemotron-h-8b-shared-prefix.yaml";
  const std::string qwen = "scenarios/hybrid/qwen35-4b-1600-later.yaml";
  EXPECT_EQ(resolved(qwen, {}).mamba_cache_mode, MambaCacheMode::kAlign);
  EXPECT_EQ(resolved(qwen, {"engine.enable_prefix_caching=false"}).mamba_cache_mode, MambaCacheMode::kNone);
  EXPECT_EQ(resolved(qwen, {"engine.mamba_cache_mode=none"}).mamba_cache_mode, MambaCacheMode::kAlign);
  // Qwen3.5 lacks SupportsMambaPrefixCaching: "all" falls back to align, block stays 528.
  const EngineConfig qa = resolved(qwen, {"engine.mamba_cache_mode=all"});
  EXPECT_EQ(qa.mamba_cache_mode, MambaCacheMode::kAlign);
  EXPECT_EQ(qa.layout.block_size, 528);
  // Nemotron-H "all": chunk 128, lcm(128, 16) = 128; ceil(P / p) = ceil(4,255,744 / 4,096) = 1039;
  // B = 128 * ceil(1039 / 128) = 128 * 9 = 1152 (align: 1040).
  const EngineConfig na = resolved(nemo, {"engine.mamba_cache_mode=all"});
  EXPECT_EQ(na.mamba_cache_mode, MambaCacheMode::kAll);
  EXPECT_EQ(na.layout.block_size, 128 * ((4255744 / 4096 + 127) / 128));
  EXPECT_EQ(resolved(nemo, {}).layout.block_size, 1040);
  EXPECT_EQ(resolved(qwen, {"engine.prefix_cache_retention_interval=dense"}).prefix_cache_retention_interval,
            kRetentionDense);
  EXPECT_EQ(resolved(qwen, {"engine.prefix_match_unit=16"}).prefix_match_unit, 16);
  EXPECT_EQ(resolved(qwen, {"engine.prefix_match_unit=528"}).prefix_match_unit, 528);
  // 528 = 2^4 * 3 * 11: 32 does not divide it.
  try {
    resolved(qwen, {"engine.prefix_match_unit=32"});
    ADD_FAILURE() << "prefix_match_unit 32 accepted with block 528";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("engine.prefix_match_unit"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("528"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resolved(qwen, {"engine.prefix_cache_retention_interval=1000"}), InputError);
  EXPECT_THROW(load_scenario(qwen, {"engine.mamba_cache_mode=sometimes"}), InputError);
}

TEST(HybridScenario, AllModeSavesAStateAtEveryBoundary) {
  // Nemotron-H in "all" mode: every boundary a step crosses gets its own hashed state, so hits do not
  // depend on where chunks end; the run keeps its invariants.
  Scenario s = load_scenario("scenarios/hybrid/nemotron-h-8b-shared-prefix.yaml",
                             {"engine.mamba_cache_mode=all", "workload.synthetic.groups=4"});
  const SimulationResult res = run_simulation(s);
  EXPECT_EQ(res.summary.requests.finished, 32);
  // 3000-token prefix, B = 1152: attention and state both reach floor(3000 / 1152) * 1152 = 2304.
  for (const auto& row : res.collector->requests())
    if (row.cached_tokens > 0) {
      EXPECT_EQ(row.cached_tokens, 3000 / 1152 * 1152) << row.id;
    }
  EXPECT_GE(res.summary.prefix_cache.hit_requests, 4 * 6);
}

TEST(HybridScenario, PrefixMatchUnitLetsChatTurnsResumeAtThePreviousPromptEnd) {
  // Multi-turn chat: with unit 16 each turn can resume at the previous prompt's last 16-token
  // boundary instead of its last block-aligned state, so more tokens are reused and fewer attention
  // matches go without a state.
  const std::string mt = "scenarios/hybrid/qwen35-4b-multiturn.yaml";
  const SimulationResult off = run_simulation(load_scenario(mt, {}));
  const SimulationResult on = run_simulation(load_scenario(mt, {"engine.prefix_match_unit=16"}));
  EXPECT_EQ(on.engine.prefix_match_unit, 16);
  EXPECT_EQ(off.summary.requests.finished, 128);
  EXPECT_EQ(on.summary.requests.finished, 128);
  EXPECT_GT(on.summary.prefix_cache.hit_tokens, off.summary.prefix_cache.hit_tokens);
  const auto no_state = static_cast<size_t>(MissCause::kNoSavedState);
  EXPECT_LT(on.summary.prefix_cache.lost_tokens_by_cause[no_state],
            off.summary.prefix_cache.lost_tokens_by_cause[no_state]);
}

TEST(HybridScenario, BlockSizeMultiplierScalesTheRuleBlock) {
  const std::string qwen = "scenarios/hybrid/qwen35-4b-1600-later.yaml";
  // vLLM's rule gives 528 (= 16 x 33) for Qwen3.5-4B; the multiplier takes whole multiples of it.
  EXPECT_EQ(resolved(qwen, {}).layout.block_size, 528);
  EXPECT_EQ(resolved(qwen, {}).default_block_size, 528);
  const EngineConfig twice = resolved(qwen, {"engine.block_size_multiplier=2"});
  EXPECT_EQ(twice.layout.block_size, 2 * 528);
  EXPECT_EQ(twice.default_block_size, 528);  // the roofline's reference stays the rule's block
  EXPECT_EQ(resolved(qwen, {"engine.block_size_multiplier=1"}).layout.block_size, 528);
  // The unit still has to divide the block: 16 divides 1056; 1056 divides 2112 but not 1584.
  EXPECT_EQ(resolved(qwen, {"engine.block_size_multiplier=4", "engine.prefix_match_unit=1056"}).prefix_match_unit,
            1056);
  EXPECT_THROW(resolved(qwen, {"engine.block_size_multiplier=3", "engine.prefix_match_unit=1056"}), InputError);
  // A dense model: 16 x 4 = 64.
  const EngineConfig dense = resolved("scenarios/quickstart.yaml", {"engine.block_size_multiplier=4"});
  EXPECT_EQ(dense.layout.block_size, 64);
  EXPECT_EQ(dense.default_block_size, 16);
  try {
    load_scenario(qwen, {"engine.block_size_multiplier=0"});
    ADD_FAILURE() << "multiplier 0 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("engine.block_size_multiplier"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("qwen35-4b-1600-later.yaml"), std::string::npos) << e.what();
  }
  // Past 2^24 tokens a block: refused at resolution, naming the key.
  try {
    resolved(qwen, {"engine.block_size_multiplier=40000"});
    ADD_FAILURE() << "a block of 528 x 40000 tokens accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("engine.block_size_multiplier"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvsim
