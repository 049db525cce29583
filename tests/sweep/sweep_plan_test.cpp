// Sweep files and point expansion: grid and zip order, variants and repeats, seeds from point keys,
// every point validated before anything runs, errors naming the file, point and key.
#include "sim/sweep/sweep_plan.h"

#include <gtest/gtest.h>

#include <set>

#include "sim/core/errors.h"
#include "sim/sweep/point_result.h"
#include "tests/sweep/sweep_test_util.h"

namespace kvsim {
namespace {

using testing::SweepDir;

std::string error_of(const SweepDir& d, const std::string& text) {
  try {
    plan_sweep(load_sweep_file(d.write("s.yaml", text)));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SweepPlan, GridRunsFirstAxisSlowestAndZipPairsValues) {
  SweepDir d("plan_grid");
  const SweepPlan g = plan_sweep(load_sweep_file(d.write(
      "g.yaml", "base: base.yaml\naxes:\n  engine.block_size: [16, 32]\n  engine.max_num_seqs: [8, 16, 32]\n")));
  ASSERT_EQ(g.points.size(), 6u);
  EXPECT_EQ(g.columns, (std::vector<std::string>{"engine.block_size", "engine.max_num_seqs"}));
  EXPECT_EQ(g.points[0].values, (std::vector<std::string>{"16", "8"}));
  EXPECT_EQ(g.points[2].values, (std::vector<std::string>{"16", "32"}));
  EXPECT_EQ(g.points[3].values, (std::vector<std::string>{"32", "8"}));
  EXPECT_EQ(g.points[5].key, "engine.block_size=32,engine.max_num_seqs=32");

  const SweepPlan z = plan_sweep(load_sweep_file(d.write(
      "z.yaml",
      "base: base.yaml\ncombine: zip\naxes:\n  engine.block_size: [16, 32]\n  engine.max_num_seqs: [8, 16]\n")));
  ASSERT_EQ(z.points.size(), 2u);
  EXPECT_EQ(z.points[1].values, (std::vector<std::string>{"32", "16"}));
  EXPECT_EQ(point_scenario(z, z.points[1]).engine.max_num_seqs, 16);
}

TEST(SweepPlan, VariantsAreOuterAndRepeatsInner) {
  SweepDir d("plan_variants");
  const SweepPlan p = plan_sweep(
      load_sweep_file(d.write("v.yaml",
                              "base: base.yaml\naxes: {engine.block_size: [16, 32]}\nseeds: 2\n"
                              "variants:\n  cached: []\n  uncached: [engine.enable_prefix_caching=false]\n")));
  ASSERT_EQ(p.points.size(), 8u);
  EXPECT_EQ(p.columns, (std::vector<std::string>{"variant", "engine.block_size", "repeat"}));
  EXPECT_EQ(p.points[1].values, (std::vector<std::string>{"cached", "16", "1"}));
  EXPECT_EQ(p.points[4].values, (std::vector<std::string>{"uncached", "16", "0"}));
  EXPECT_TRUE(point_scenario(p, p.points[0]).engine.enable_prefix_caching);
  EXPECT_FALSE(point_scenario(p, p.points[4]).engine.enable_prefix_caching);
}

TEST(SweepPlan, SeedDerivesFromBaseSeedAndKeyNotFromOrder) {
  SweepDir d("plan_seed");
  const SweepPlan a =
      plan_sweep(load_sweep_file(d.write("a.yaml", "base: base.yaml\naxes: {engine.block_size: [16, 32, 64]}\n")));
  const SweepPlan b =
      plan_sweep(load_sweep_file(d.write("b.yaml", "base: base.yaml\naxes: {engine.block_size: [64, 16]}\n")));
  EXPECT_EQ(a.base_seed, 7u);
  EXPECT_EQ(a.points[2].seed, b.points[0].seed);  // block size 64 in both, at another index
  EXPECT_EQ(a.points[0].seed, b.points[1].seed);
  EXPECT_EQ(a.points[0].seed, sweep_point_seed(7, "engine.block_size=16"));
  EXPECT_EQ(point_scenario(a, a.points[0]).seed, a.points[0].seed);
  std::set<uint64_t> seeds;
  for (const SweepPoint& p : a.points) seeds.insert(p.seed);
  EXPECT_EQ(seeds.size(), 3u);
  // Another base seed gives other point seeds.
  const SweepPlan c = plan_sweep(
      load_sweep_file(d.write("c.yaml", "base: base.yaml\nset: [seed=8]\naxes: {engine.block_size: [16]}\n")));
  EXPECT_NE(c.points[0].seed, a.points[0].seed);
  // seed_key: repeat gives every point of one repeat the same seed.
  const SweepPlan r = plan_sweep(load_sweep_file(
      d.write("r.yaml", "base: base.yaml\nseed_key: repeat\nseeds: 2\naxes: {engine.block_size: [16, 32]}\n")));
  EXPECT_EQ(r.points[0].seed, r.points[2].seed);
  EXPECT_NE(r.points[0].seed, r.points[1].seed);
}

TEST(SweepPlan, InlineBaseIsAScenarioMapping) {
  SweepDir d("plan_inline");
  std::string inline_base = "base:\n";
  std::stringstream ss(testing::kSweepBase);
  for (std::string line; std::getline(ss, line);) inline_base += "  " + line + "\n";
  const SweepPlan p = plan_sweep(load_sweep_file(d.write("i.yaml", inline_base + "axes: {engine.block_size: [32]}\n")));
  ASSERT_EQ(p.points.size(), 1u);
  EXPECT_EQ(point_scenario(p, p.points[0]).engine.block_size, 32);
}

TEST(SweepPlan, AxesReachListElementsByIndexAndTakeStructuredValues) {
  SweepDir d("plan_cluster");
  d.write("cluster.yaml", std::string(testing::kSweepBase) +
                              "cluster:\n  pools:\n    - {name: a, instances: 1}\n    - {name: b, instances: 1}\n"
                              "  router: {policy: round_robin}\n");
  const SweepPlan p =
      plan_sweep(load_sweep_file(d.write("c.yaml",
                                         "base: cluster.yaml\naxes:\n  cluster.pools.1.instances: [1, 3]\n"
                                         "  cluster.router: [{policy: round_robin}, {policy: llm_d}]\n")));
  ASSERT_EQ(p.points.size(), 4u);
  EXPECT_EQ(p.points[3].values, (std::vector<std::string>{"3", "{policy: llm_d}"}));
  const Scenario s = point_scenario(p, p.points[3]);
  EXPECT_EQ(s.cluster.pools[1].instances, 3);
  EXPECT_EQ(s.cluster.pools[0].instances, 1);
  EXPECT_EQ(s.cluster.router.policy, "llm_d");
  const std::string e = error_of(d, "base: cluster.yaml\naxes:\n  cluster.pools.2.instances: [1]\n");
  EXPECT_NE(e.find("point 0 (cluster.pools.2.instances=1)"), std::string::npos) << e;
}

TEST(SweepPlan, AnInvalidPointNamesThePointAndKeyBeforeAnythingRuns) {
  SweepDir d("plan_errors");
  const std::string e = error_of(d, "base: base.yaml\naxes: {engine.block_size: [16, 0]}\n");
  EXPECT_NE(e.find("point 1 (engine.block_size=0)"), std::string::npos) << e;
  EXPECT_NE(e.find("engine.block_size"), std::string::npos) << e;
  EXPECT_NE(error_of(d, "base: base.yaml\naxes: {engine.blok_size: [16]}\n").find("engine.blok_size"),
            std::string::npos);
  const std::string missing = error_of(d, "base: nope.yaml\n");
  EXPECT_NE(missing.find("s.yaml: base: "), std::string::npos) << missing;
  EXPECT_NE(missing.find("nope.yaml: cannot open scenario file"), std::string::npos) << missing;
  const std::string junk = error_of(d, "base: base.yaml\n\"a\\nb\": 1\n");
  EXPECT_EQ(junk.find('\n'), std::string::npos) << junk;  // a key with a newline stays on one line
  EXPECT_NE(error_of(d, "base: base.yaml\naxes: {engine.block_size: []}\n").find("axes.engine.block_size"),
            std::string::npos);
  EXPECT_NE(error_of(d, "base: base.yaml\ncombine: zip\naxes: {engine.block_size: [16], engine.max_num_seqs: [1, 2]}\n")
                .find("one length"),
            std::string::npos);
  EXPECT_NE(error_of(d, "base: base.yaml\ncombine: mesh\n").find("combine"), std::string::npos);
  EXPECT_NE(error_of(d, "base: base.yaml\nseeds: 0\n").find("seeds"), std::string::npos);
  EXPECT_NE(error_of(d, "base: base.yaml\naxis: {}\n").find("axis: unknown key"), std::string::npos);
  EXPECT_NE(error_of(d, "base: base.yaml\nvariants: {a: [nonsense]}\n").find("variants.a[0]"), std::string::npos);
  const std::string v = error_of(d, "base: base.yaml\nvariants: {a: [], b: [engine.max_num_seqs=-1]}\n");
  EXPECT_NE(v.find("point 1 (variant=b)"), std::string::npos) << v;
  // A variant and an axis on one key (or one inside the other): the axis would win without a word.
  EXPECT_NE(error_of(d, "base: base.yaml\nvariants: {a: [engine.block_size=32]}\naxes: {engine.block_size: [16]}\n")
                .find("s.yaml: variants.a: sets engine.block_size, which the axis engine.block_size also sets"),
            std::string::npos);
  EXPECT_NE(error_of(d,
                     "base: base.yaml\nvariants: {a: [\"engine={block_size: 32}\"]}\n"
                     "axes: {engine.max_num_seqs: [8]}\n")
                .find("variants.a: sets engine, which the axis engine.max_num_seqs also sets"),
            std::string::npos);
  // Two axes, one inside the other: the later replaced the earlier's value while the table showed both.
  EXPECT_NE(error_of(d, "base: base.yaml\naxes:\n  engine.max_num_seqs: [8, 16]\n  engine: [{block_size: 16}]\n")
                .find("s.yaml: axes.engine: overlaps the axis engine.max_num_seqs"),
            std::string::npos);
  // A variant's seed lost to each point's own seed.
  EXPECT_NE(error_of(d, "base: base.yaml\nvariants: {a: [seed=5]}\n").find("s.yaml: variants.a: sets seed"),
            std::string::npos);
}

TEST(SweepPlan, ACommandLineSetOnAnAxisOrVariantKeyIsRefused) {
  // --set comes before the axes' and variants' overrides: it would lose to them in every point.
  SweepDir d("plan_cli_set");
  const SweepFile f = load_sweep_file(d.write(
      "s.yaml", "base: base.yaml\nvariants: {a: [engine.max_num_seqs=4]}\naxes: {engine.block_size: [16, 32]}\n"));
  const auto error = [&](const std::string& set) {
    try {
      plan_sweep(f, {set});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error("engine.block_size=64").find("--set engine.block_size: the axis engine.block_size of"),
            std::string::npos);
  EXPECT_NE(error("engine={block_size: 64}").find("--set engine: the axis engine.block_size"), std::string::npos);
  EXPECT_NE(error("engine.max_num_seqs=8").find("--set engine.max_num_seqs: the variant a of"), std::string::npos);
  EXPECT_EQ(error("engine.max_num_batched_tokens=4096"), "");
  EXPECT_EQ(plan_sweep(f, {"engine.max_num_batched_tokens=4096"}).points.size(), 2u);
}

TEST(SweepPlan, ASetOnAnAxisKeyIsRefusedAParentOfItIsNot) {
  // set: applies before the axis: on the axis's own key (or one inside it) it is lost in every point; a
  // parent builds the structure whose one field the axis then changes.
  SweepDir d("plan_file_set");
  EXPECT_NE(error_of(d, "base: base.yaml\nset: [engine.block_size=32]\naxes: {engine.block_size: [16, 64]}\n")
                .find("set: engine.block_size: the axis engine.block_size sets it in every point"),
            std::string::npos);
  const SweepPlan p = plan_sweep(load_sweep_file(d.write(
      "p.yaml", "base: base.yaml\nset: [\"engine={max_num_seqs: 8}\"]\naxes: {engine.max_num_seqs: [4, 16]}\n")));
  ASSERT_EQ(p.points.size(), 2u);
  EXPECT_EQ(point_scenario(p, p.points[0]).engine.max_num_seqs, 4);
}

TEST(SweepFigures, PeakKvUsageCountsTheUsableBlocks) {
  // Two instances of 24,812 blocks each (one null block each): 49,624 in all, 49,622 usable. A peak of
  // 49,622 used is a full cache: 1, not 49,622 / 49,624. One instance: 24,811 / 24,811.
  RunSummary s;
  s.kv_blocks.total = 49624;
  s.kv_blocks.peak_used = 49622;
  s.pools.resize(1);
  s.pools[0].info.instances = 2;
  const auto figure = [](const RunSummary& r, const std::string& name) {
    for (const auto& [k, v] : sweep_figures(r))
      if (k == name) return v;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(figure(s, "peak_kv_usage"), 1.0);
  RunSummary one;
  one.kv_blocks.total = 24812;
  one.kv_blocks.peak_used = 24811;
  EXPECT_DOUBLE_EQ(figure(one, "peak_kv_usage"), 1.0);
}

}  // namespace
}  // namespace kvsim
