// Offload scenarios end to end (load_scenario + run_simulation, scenarios/offload/): determinism, the
// invariants of issue 12 (a tier's bytes never exceed its size; a chunk is held once per tier, so the
// per-tier hits add up to the total), and both backends on a host + NVMe hierarchy.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/app/simulation.h"
#include "sim/scenario/scenario.h"

namespace kvsim {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;
const char* const kNvme = "scenarios/offload/qwen3-8b-h100-host-64g-nvme.yaml";

SimulationResult run(const std::vector<std::string>& overrides) {
  std::vector<std::string> o = {"workload.trace.limit=300"};
  o.insert(o.end(), overrides.begin(), overrides.end());
  return run_simulation(load_scenario(kNvme, o), RunOptions{});
}

TEST(OffloadScenario, SameScenarioAndSeedGiveIdenticalResults) {
  for (const char* backend : {"native", "lmcache"}) {
    SCOPED_TRACE(backend);
    const std::vector<std::string> o = {std::string("engine.kv_offload.backend=") + backend};
    const SimulationResult a = run(o), b = run(o);
    EXPECT_EQ(a.fingerprint, b.fingerprint);
    EXPECT_EQ(a.events, b.events);
    const SummaryJsonOptions no_wall{false};
    EXPECT_EQ(summary_to_json(a.summary, no_wall), summary_to_json(b.summary, no_wall));
  }
}

TEST(OffloadScenario, TierBytesNeverExceedTheTierSizeAndHitsAddUp) {
  for (const char* backend : {"native", "lmcache"}) {
    SCOPED_TRACE(backend);
    const SimulationResult r = run({std::string("engine.kv_offload.backend=") + backend});
    const auto& o = r.summary.kv_offload;
    ASSERT_TRUE(o.present);
    ASSERT_EQ(o.tiers.size(), 2u);
    // The sizes the scenario file states.
    EXPECT_EQ(o.tiers[0].size_bytes, 64 * kGiB);
    EXPECT_EQ(o.tiers[1].size_bytes, 2048 * kGiB);
    const int64_t size[2] = {64 * kGiB, 2048 * kGiB};
    ASSERT_FALSE(r.collector->steps().empty());
    for (const StepRecord& s : r.collector->steps())
      for (size_t t = 0; t < 2; ++t) {
        ASSERT_GE(s.tier_used_bytes[t], 0);
        ASSERT_LE(s.tier_used_bytes[t], size[t]);
      }
    for (size_t t = 0; t < 2; ++t) EXPECT_LE(o.tiers[t].peak_used_bytes, size[t]);
    // Every prompt chunk is offered once: the host stores something, and a write-through / put reaches NVMe.
    EXPECT_GT(o.tiers[0].stored_bytes, 0);
    EXPECT_GT(o.tiers[1].stored_bytes, 0);
    EXPECT_EQ(o.tiers[0].hit_tokens + o.tiers[1].hit_tokens, o.hit_tokens);
    EXPECT_EQ(o.backend, backend);
  }
}

// A pool of 15 usable blocks of 128 tokens and 35 requests of 1,023 + 170 tokens (at most
// ceil(1,193 / 128) = 10 blocks each), 4 at a time: two requests whose 7-block tier hits (896 tokens) were
// loaded side by side hold 14 blocks, and the first needs 2 more for the rest of its 1,025 tokens after a
// preemption. vLLM stalls there (a waiting request is never preempted); kvsim used to reject the first as
// "does not fit even in the empty KV cache". Now the second goes back to waiting: every request finishes,
// and every preemption is in the steps of the run file, also those of rounds that scheduled nothing.
TEST(OffloadScenario, LoadedRequestsBehindAStuckHeadAreNotCalledUnfittable) {
  const Scenario s = parse_scenario(R"(
model: models/qwen3-8b.json
gpu: h100-sxm
seed: 1
engine:
  block_size: 128
  max_model_len: 1816
  num_gpu_blocks: 16
  kv_offload: {tiers: [{tier: host_dram, size: 64GiB}]}
workload:
  synthetic: {kind: shared_prefix, groups: 5, requests_per_group: 7, prefix_tokens: 933, suffix_tokens: 90,
              concurrency: 4, output_tokens: 170}
)",
                                    "stuck.yaml");
  const SimulationResult r = run_simulation(s, RunOptions{});
  EXPECT_EQ(r.summary.requests.finished, 35);
  EXPECT_GT(r.summary.kv_offload.hit_tokens, 0);
  ASSERT_GT(r.summary.preemptions, 0);
  int64_t in_steps = 0;
  for (const StepRecord& step : r.collector->steps()) in_steps += step.preemptions;
  EXPECT_EQ(in_steps, r.summary.preemptions);
}

// The time series of the run file carries each tier's occupancy, /requests the hits by tier.
TEST(OffloadScenario, RunFileHasTierColumns) {
  const SimulationResult r = run({});
  const TimeSeries& ts = r.collector->timeseries();
  ASSERT_EQ(ts.tier_used_bytes[0].size(), ts.time_s.size());
  ASSERT_EQ(ts.tier_used_bytes[1].size(), ts.time_s.size());
  EXPECT_TRUE(ts.tier_used_bytes[2].empty());
  int64_t by_tier = 0, total = 0;
  for (const RequestRow& row : r.collector->requests()) {
    by_tier += row.tier_cached_tokens_by_tier[0] + row.tier_cached_tokens_by_tier[1];
    total += row.tier_cached_tokens;
  }
  EXPECT_EQ(by_tier, total);
}

// Hybrids (Qwen3.5-4B, block 528, states saved at chunk ends): on a 60-block GPU pool the turns lose their
// history on the GPU; with the host tier, GPU + tier reuse equals the reuse of a 400-block pool that never
// evicts (its tier gets no hit), and every tier hit ends on a block boundary (where a state was saved).
TEST(OffloadScenario, HybridTierHitsRestoreTheReuseOfAPoolThatNeverEvicts) {
  const char* file = "scenarios/offload/qwen35-4b-multiturn-host.yaml";
  const SimulationResult small = run_simulation(load_scenario(file), RunOptions{});
  const SimulationResult big = run_simulation(load_scenario(file, {"engine.num_gpu_blocks=400"}), RunOptions{});
  EXPECT_EQ(big.summary.kv_offload.hit_tokens, 0);
  EXPECT_LT(small.summary.prefix_cache.hit_tokens, big.summary.prefix_cache.hit_tokens / 2);
  EXPECT_EQ(small.summary.prefix_cache.hit_tokens + small.summary.kv_offload.hit_tokens,
            big.summary.prefix_cache.hit_tokens);
  int64_t tier_hits = 0;
  for (const RequestRow& row : small.collector->requests()) {
    if (row.tier_cached_tokens == 0) continue;
    ++tier_hits;
    EXPECT_EQ((row.cached_tokens + row.tier_cached_tokens) % 528, 0) << row.id;
  }
  EXPECT_GT(tier_hits, 50);
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

// scenarios/offload/qwen3-8b-1p1d-ib-host.yaml: a prefill instance on node0/gpu0 and a decode instance on
// node1/gpu0, both with a host tier, on a topology: every store leaves its GPU over gpu0 -> pcie0, every
// load enters over pcie0 -> gpu0, and the pulls cross the prefill side's gpu0 -> pcie0 and the decode
// side's pcie0 -> gpu0. So, from two separate accounts (the network's link bytes, the tiers' totals):
// bytes out of the two GPUs over PCIe = pulled + stored, bytes into them = pulled + loaded. And the pulls,
// sharing the prefill GPU's PCIe link with its stores, take longer than without the tier.
TEST(OffloadScenario, OnATopologyTierCopiesCrossThePcieLinksWithThePulls) {
  const std::vector<std::string> small = {"workload.trace.limit=300"};
  const SimulationResult r =
      run_simulation(load_scenario("scenarios/offload/qwen3-8b-1p1d-ib-host.yaml", small), RunOptions{});
  const auto& d = r.summary.disaggregation;
  ASSERT_TRUE(d.present);
  ASSERT_TRUE(r.summary.kv_offload.present);
  const KvOffloadTier& host = r.summary.kv_offload.tiers.at(0);
  ASSERT_GT(host.stored_bytes, 0);
  double out = 0, in = 0;
  for (const LinkTotal& l : d.links) {
    if (l.name == "node0/gpu0->node0/pcie0" || l.name == "node1/gpu0->node1/pcie0") out += l.bytes;
    if (l.name == "node0/pcie0->node0/gpu0" || l.name == "node1/pcie0->node1/gpu0") in += l.bytes;
  }
  EXPECT_NEAR(out, d.bytes + static_cast<double>(host.stored_bytes), 1.0);
  // The requests' own account (a pulled request carries its prefill side's copies) matches the tier's.
  EXPECT_EQ(r.summary.kv_offload.stored_bytes, host.stored_bytes);
  EXPECT_EQ(r.summary.kv_offload.loaded_bytes, host.loaded_bytes);
  EXPECT_NEAR(in, d.bytes + static_cast<double>(host.loaded_bytes), 1.0);
  // Same scenario and seed, same results (flows, store fences as events and all).
  const SimulationResult again =
      run_simulation(load_scenario("scenarios/offload/qwen3-8b-1p1d-ib-host.yaml", small), RunOptions{});
  EXPECT_EQ(again.fingerprint, r.fingerprint);
  const SummaryJsonOptions no_wall{false};
  EXPECT_EQ(summary_to_json(again.summary, no_wall), summary_to_json(r.summary, no_wall));
  // The same cluster without the tier (scenarios/disagg, placed the same way).
  const SimulationResult none = run_simulation(
      load_scenario("scenarios/disagg/qwen3-8b-1p1d-nvlink.yaml",
                    {"workload.trace.limit=300", "workload.trace.time_scale=4",
                     "cluster.topology=hgx-h100-2node-ib-ndr", "cluster.pools.1.placement=[node1/gpu0]"}),
      RunOptions{});
  EXPECT_GT(d.transfer_ms.mean, none.summary.disaggregation.transfer_ms.mean);
}

}  // namespace
}  // namespace kvsim

namespace kvsim {
namespace {

// A colocated engine on a topology: the summary lists the links its tier copies crossed, and the GPU's
// PCIe link out carried exactly what the tier stored (a store is the only flow out of the GPU here).
TEST(OffloadScenario, AColocatedRunOnATopologyReportsTheLinksItsCopiesCrossed) {
  const SimulationResult r =
      run_simulation(load_scenario("scenarios/offload/qwen3-8b-h100-host-64g.yaml",
                                   {"workload.trace.limit=300", "cluster.topology=hgx-h100-1node",
                                    "cluster.pools=[{name: main, instances: 1}]"}),
                     RunOptions{});
  ASSERT_TRUE(r.summary.kv_offload.present);
  EXPECT_FALSE(r.summary.disaggregation.present);
  const auto& links = r.summary.kv_offload.links;
  const auto it =
      std::find_if(links.begin(), links.end(), [](const LinkTotal& l) { return l.name == "node0/gpu0->node0/pcie0"; });
  ASSERT_NE(it, links.end());
  EXPECT_NEAR(it->bytes, static_cast<double>(r.summary.kv_offload.tiers.at(0).stored_bytes), 1.0);
  EXPECT_GT(it->mean_utilisation, 0.0);
}

}  // namespace
}  // namespace kvsim
