// The cluster: section end to end: parsing, pool overrides, errors naming file and key path, per-pool
// summaries, the run file's pool columns, and that a cluster of one changes nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sim/app/simulation.h"
#include "sim/core/errors.h"
#include "sim/metrics/hdf5_writer.h"
#include "sim/scenario/scenario.h"
#include "tests/app/cli_runner.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

const std::string kBase = R"(
model: models/qwen3-8b.json
gpu: h100-sxm
seed: 3
engine: {block_size: 16, max_num_seqs: 64}
workload:
  synthetic: {kind: poisson, rate: 20, num_requests: 10, input_tokens: 300, output_tokens: 20}
)";

std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    run_simulation(parse_scenario(text, "c.yaml", overrides));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ClusterScenario, WithoutAClusterSectionOneDefaultPoolOfOne) {
  const Scenario s = parse_scenario(kBase, "c.yaml");
  EXPECT_FALSE(s.cluster.present);
  ASSERT_EQ(s.cluster.pools.size(), 1u);
  EXPECT_EQ(s.cluster.pools[0].name, "default");
  EXPECT_EQ(s.cluster.pools[0].instances, 1);
  EXPECT_EQ(s.cluster.pools[0].gpu, "h100-sxm");
  EXPECT_EQ(*s.cluster.pools[0].engine.max_num_seqs, 64);
  EXPECT_EQ(s.cluster.router.policy, "round_robin");
}

TEST(ClusterScenario, PoolEngineOverridesApplyOnTopOfTheTopLevelEngine) {
  const Scenario s = parse_scenario(kBase + R"(
cluster:
  pools:
    - {name: small, instances: 2}
    - {name: big, instances: 1, gpu: h200, engine: {tensor_parallel_size: 2, max_num_seqs: 8}}
  router: {policy: llm_d, queue_weight: 1, precise: true, report_interval: 500ms}
)",
                                    "c.yaml");
  ASSERT_EQ(s.cluster.pools.size(), 2u);
  EXPECT_EQ(s.cluster.pools[0].gpu, "h100-sxm");
  EXPECT_EQ(*s.cluster.pools[0].engine.max_num_seqs, 64);
  EXPECT_EQ(s.cluster.pools[0].engine.tensor_parallel_size, 1);
  EXPECT_EQ(s.cluster.pools[1].gpu, "h200");
  EXPECT_EQ(*s.cluster.pools[1].engine.max_num_seqs, 8);
  EXPECT_EQ(s.cluster.pools[1].engine.tensor_parallel_size, 2);
  EXPECT_EQ(s.cluster.pools[1].engine.block_size, 16);  // inherited
  EXPECT_EQ(s.cluster.router.queue_weight, 1.0);
  EXPECT_EQ(s.cluster.router.prefix_weight, 3.0);  // llm-d's default
  EXPECT_TRUE(s.cluster.router.precise);
  EXPECT_DOUBLE_EQ(s.cluster.router.report_interval_s, 0.5);
  // --set reaches list elements by index.
  const Scenario t = parse_scenario(kBase + "cluster: {pools: [{name: a, instances: 2}]}\n", "c.yaml",
                                    {"cluster.pools.0.instances=5", "cluster.router.policy=sglang"});
  EXPECT_EQ(t.cluster.pools[0].instances, 5);
  EXPECT_EQ(t.cluster.router.policy, "sglang");
  EXPECT_NE(error_of(kBase + "cluster: {pools: [{name: a, instances: 2}]}\n", {"cluster.pools.3.instances=5"})
                .find("'3' is not an index of the list (0..0)"),
            std::string::npos);
}

TEST(ClusterScenario, BadInputNamesTheFileAndKeyPath) {
  const auto pools = [](const std::string& p) { return kBase + "cluster:\n  pools: [" + p + "]\n"; };
  struct Case {
    std::string text;
    std::string needle;
  } cases[] = {
      {pools("{name: a, instances: 2}") + "  router: {policy: fastest}\n",
       "c.yaml: cluster.router.policy: unknown router 'fastest' (known: dynamo, least_loaded, llm_d, random, "
       "round_robin, session_affinity, sglang, vllm_dp)"},
      {pools("{name: a, instances: 0}"), "c.yaml: cluster.pools[0].instances: must be >= 1 (got 0)"},
      {pools("{name: a, instances: 1}, {name: b, instances: 1, engine: {max_num_seq: 3}}"),
       "c.yaml: cluster.pools[1].engine.max_num_seq: unknown key"},
      {pools("{name: a, instances: 1, gpu: h900}"), "c.yaml: cluster.pools[0].gpu: unknown GPU 'h900'"},
      {pools("{name: a, instances: 1}, {name: b, instances: 1, gpu: l40s, engine: {gpu_memory_utilization: 0.1}}"),
       "c.yaml: cluster.pools[1].engine.gpu_memory_utilization: qwen3-8b does not fit on l40s"},
      {pools("{name: a, instances: 1, role: decode}"), "c.yaml: cluster.pools: decode pools need a prefill pool"},
      {pools("{name: a, instances: 1}, {name: a, instances: 1}"), "c.yaml: cluster.pools[1].name: duplicate pool name"},
      {pools("{name: a, instances: 1}") + "  router: {policy: round_robin, precise: true}\n",
       "c.yaml: cluster.router.precise: an option of policy llm_d, not of round_robin"},
      {pools("{name: a, instances: 1}") + "  router: {policy: sglang, cache_threshold: 2}\n",
       "c.yaml: cluster.router.cache_threshold: must be in [0, 1]"},
      {kBase + "cluster: {pools: []}\n", "c.yaml: cluster.pools: must be a non-empty list"},
      {pools("{name: a, instances: 2}") + "  router: {policy: least_loaded, report_interval: 1ns}\n",
       "c.yaml: cluster.router.report_interval: must be 0 (live) or at least 1ms (got '1ns')"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.needle), std::string::npos) << "expected '" << c.needle << "' in '" << e << "'";
  }
}

TEST(ClusterScenario, BadClusterInputExitsTwoWithOneLine) {
  const fs::path dir = fs::temp_directory_path() / ("kvsim_cluster_cli_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "bad.yaml";
  std::ofstream(file) << kBase << "cluster: {pools: [{name: a, instances: 2}], router: {policy: fastest}}\n";
  const testing::CliResult r = testing::run_kvsim("run " + file.string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(testing::count_lines(r.out), 1) << r.out;
  EXPECT_NE(r.out.find("bad.yaml: cluster.router.policy: unknown router 'fastest'"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(ClusterScenario, AClusterOfOneKeepsTheSingleEngineFingerprint) {
  const SimulationResult plain = run_simulation(parse_scenario(kBase, "c.yaml"));
  const SimulationResult one =
      run_simulation(parse_scenario(kBase + "cluster: {pools: [{name: only, instances: 1}]}\n", "c.yaml"));
  EXPECT_EQ(one.fingerprint, plain.fingerprint);
  EXPECT_EQ(one.summary.ttft_ms.p99, plain.summary.ttft_ms.p99);
  EXPECT_TRUE(plain.summary.pools.empty());
  ASSERT_EQ(one.summary.pools.size(), 1u);
  EXPECT_EQ(summary_to_json(plain.summary, {false}).find("\"cluster\""), std::string::npos);
  EXPECT_NE(summary_to_json(one.summary, {false}).find("\"cluster\""), std::string::npos);
}

// Ten requests round robin over four instances: 3, 3, 2, 2; mean 2.5, so max / mean = 1.2.
TEST(ClusterScenario, PoolSummaryCountsAndImbalance) {
  const SimulationResult r =
      run_simulation(parse_scenario(kBase + "cluster: {pools: [{name: p, instances: 4}]}\n", "c.yaml"));
  ASSERT_EQ(r.summary.pools.size(), 1u);
  const PoolSummary& p = r.summary.pools[0];
  EXPECT_EQ(p.requests, 10);
  EXPECT_EQ(p.finished, 10);
  ASSERT_EQ(p.per_instance.size(), 4u);
  EXPECT_EQ(p.per_instance[0].requests, 3);
  EXPECT_EQ(p.per_instance[1].requests, 3);
  EXPECT_EQ(p.per_instance[2].requests, 2);
  EXPECT_EQ(p.per_instance[3].requests, 2);
  EXPECT_DOUBLE_EQ(p.requests_imbalance, 1.2);
  EXPECT_EQ(p.ttft_ms.count, 10);
  EXPECT_EQ(r.summary.kv_blocks.total, 4 * r.engine.layout.num_blocks);
  for (const InstanceSummary& s : p.per_instance) EXPECT_GT(s.busy_s, 0.0);
  EXPECT_GE(p.busy_imbalance, 1.0);
}

// H100 TP1 next to H200 TP2: each pool resolves its own engine. Per GPU the H200 (141 GB) holds half
// the weights and more memory, so its instances get more than twice the blocks of an H100 (80 GB).
TEST(ClusterScenario, HeterogeneousPoolsResolveTheirOwnEngines) {
  const SimulationResult r = run_simulation(parse_scenario(kBase + R"(
cluster:
  pools:
    - {name: h100, instances: 2}
    - {name: h200, instances: 1, gpu: h200, engine: {tensor_parallel_size: 2}}
  router: {policy: least_loaded}
)",
                                                           "c.yaml"));
  ASSERT_EQ(r.pools.size(), 2u);
  EXPECT_EQ(r.pools[0].info.gpu, "h100-sxm");
  EXPECT_EQ(r.pools[1].info.gpu, "h200");
  EXPECT_EQ(r.pools[1].info.first_instance, 2);
  EXPECT_GT(r.pools[1].engine.layout.num_blocks, 2 * r.pools[0].engine.layout.num_blocks);
  ASSERT_EQ(r.summary.pools.size(), 2u);
  EXPECT_EQ(r.summary.pools[0].requests + r.summary.pools[1].requests, 10);
  EXPECT_EQ(r.summary.pools[1].info.tensor_parallel_size, 2);
}

// Same scenario and seed: the same assignment (per-instance counts) and the same summary, byte for byte,
// under each router that draws random numbers or keeps state.
TEST(ClusterScenario, SameSeedSameSummaryBytes) {
  for (const char* policy : {"random", "llm_d", "dynamo", "sglang"}) {
    const std::string text = kBase + "cluster: {pools: [{name: a, instances: 3}], router: {policy: " + policy + "}}\n";
    const SimulationResult a = run_simulation(parse_scenario(text, "c.yaml"));
    const SimulationResult b = run_simulation(parse_scenario(text, "c.yaml"));
    EXPECT_EQ(summary_to_json(a.summary, {false}), summary_to_json(b.summary, {false})) << policy;
  }
}

TEST(ClusterScenario, RunFileHasThePoolOfEachRequestAndPerInstanceSeries) {
  const SimulationResult r = run_simulation(parse_scenario(kBase + R"(
cluster:
  pools: [{name: a, instances: 2}, {name: b, instances: 1}]
)",
                                                           "c.yaml"));
  const fs::path file = fs::temp_directory_path() / ("kvsim_cluster_run_" + std::to_string(getpid()) + ".h5");
  RunMeta meta;
  write_run_file(file.string(), *r.collector, r.summary, meta);
  RunFileReader in(file.string());
  const std::vector<int64_t> pool = in.read_ints("/requests/pool");
  const std::vector<int64_t> instance = in.read_ints("/requests/instance");
  ASSERT_EQ(pool.size(), 10u);
  for (size_t i = 0; i < pool.size(); ++i) EXPECT_EQ(pool[i], instance[i] < 2 ? 0 : 1) << "row " << i;
  EXPECT_EQ(in.read_string_attribute("/requests/pool", "names"), "a,b");
  const std::vector<double> usage = in.read_doubles("/timeseries/per_instance/kv_usage");
  EXPECT_EQ(usage.size(), in.read_ints("/steps/instance").size());
  for (double u : usage) EXPECT_TRUE(u >= 0.0 && u <= 1.0) << u;
  fs::remove(file);
}

}  // namespace
}  // namespace kvsim
