// Scenario YAML: keys, units, overrides, and errors that name the file and the key path.
#include "sim/scenario/scenario.h"

#include <gtest/gtest.h>

#include "sim/core/errors.h"

namespace kvsim {
namespace {

const char* kBase = R"(
model: models/qwen3-8b.json
gpu: h100-sxm
seed: 7
engine:
  block_size: 16
  max_num_batched_tokens: 8192
  enable_prefix_caching: true
  gpu_memory_utilization: 0.92
  activation_reserve: 2GiB
workload:
  synthetic: {kind: shared_prefix, groups: 8, requests_per_group: 8, prefix_tokens: 1600,
              suffix_tokens: 600, output_tokens: 1, concurrency: 1, order: interleaved}
)";

std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    parse_scenario(text, "s.yaml", overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Scenario, ReadsKeysAndUnits) {
  Scenario s = parse_scenario(kBase, "s.yaml");
  EXPECT_EQ(s.model, "models/qwen3-8b.json");
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.engine.block_size, 16);
  EXPECT_EQ(*s.engine.max_num_batched_tokens, 8192);
  EXPECT_EQ(*s.engine.activation_reserve, 2LL * 1024 * 1024 * 1024);  // 2GiB
  ASSERT_TRUE(s.workload.synthetic);
  EXPECT_EQ(s.workload.synthetic->prefix_tokens, 1600);
  EXPECT_EQ(s.workload.synthetic->concurrency, 1);
}

TEST(Scenario, SetOverridesAnyKey) {
  Scenario s = parse_scenario(kBase, "s.yaml", {"engine.block_size=528", "workload.synthetic.prefix_tokens=1500"});
  EXPECT_EQ(s.engine.block_size, 528);
  EXPECT_EQ(s.workload.synthetic->prefix_tokens, 1500);
  EXPECT_NE(s.resolved_yaml.find("528"), std::string::npos);  // /meta stores the resolved tree
}

TEST(Scenario, UnknownKeyNamesFileAndPath) {
  const std::string e = error_of(kBase, {"engine.blocksize=16"});
  EXPECT_NE(e.find("s.yaml: engine.blocksize: unknown key"), std::string::npos) << e;
}

TEST(Scenario, WrongUnitNamesKey) {
  const std::string e = error_of(kBase, {"engine.activation_reserve=2 parsecs"});
  EXPECT_NE(e.find("engine.activation_reserve"), std::string::npos) << e;
}

TEST(Scenario, BadValuesAreRejectedWithTheirKey) {
  EXPECT_NE(error_of(kBase, {"engine.block_size=0"}).find("engine.block_size: must be >= 1 (got 0)"),
            std::string::npos);
  EXPECT_NE(error_of(kBase, {"engine.gpu_memory_utilization=1.5"}).find("engine.gpu_memory_utilization"),
            std::string::npos);
  EXPECT_NE(error_of(kBase, {"engine.enable_prefix_caching=maybe"}).find("engine.enable_prefix_caching"),
            std::string::npos);
  EXPECT_NE(error_of(kBase, {"workload.synthetic.kind=bursty"}).find("workload.synthetic.kind"), std::string::npos);
}

TEST(Scenario, NumGpuBlocksFitsABlockId) {
  // Block ids are int32 with one extra sentinel id: 2 .. 2^31 - 1 blocks (the null block included).
  EXPECT_EQ(error_of(kBase, {"engine.num_gpu_blocks=2"}), "");
  EXPECT_EQ(error_of(kBase, {"engine.num_gpu_blocks=2147483647"}), "");
  EXPECT_NE(error_of(kBase, {"engine.num_gpu_blocks=2147483648"}).find("engine.num_gpu_blocks: must be <= 2147483647"),
            std::string::npos);
  EXPECT_NE(error_of(kBase, {"engine.num_gpu_blocks=1"}).find("engine.num_gpu_blocks: must be >= 2"),
            std::string::npos);
}

TEST(Scenario, MissingRequiredKeys) {
  EXPECT_NE(error_of("gpu: h100-sxm\nworkload: {synthetic: {kind: poisson, rate: 1}}\n").find("model: missing"),
            std::string::npos);
  EXPECT_NE(error_of("model: m.json\ngpu: h100-sxm\n").find("workload: missing"), std::string::npos);
}

TEST(Scenario, InvalidYamlGivesLine) {
  const std::string e = error_of("model: a\ngpu: [h100\n");
  EXPECT_NE(e.find("s.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("invalid YAML"), std::string::npos) << e;
}

}  // namespace
}  // namespace kvsim
