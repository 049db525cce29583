// The comparison set models/latency/comparison.csv (gpt-oss-120b: MoE + sliding window;
// Qwen3.5-397B-A17B: MoE + gated DeltaNet hybrid) stays readable and simulable. It checks the file's
// shape and that one small point of each model runs; it does not check the error (README table).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "tests/app/validation_test_util.h"

namespace kvsim {
namespace {

const char* kPoints = "models/latency/comparison.csv";

TEST(ComparisonSet, ReadsEveryPointWithKnownModelGpuAndEngine) {
  const auto points = read_validation_points(kPoints, kDefaultHardwareDir);
  std::map<std::string, int> per_model;
  for (const auto& p : points) {
    ++per_model[p.model];
    EXPECT_TRUE(p.engine == "vllm" || p.engine == "sglang" || p.engine == "trtllm") << p.line;
    EXPECT_GT(p.ttft_ms, 0) << p.line;
    EXPECT_GT(p.tpot_ms, 0) << p.line;
  }
  EXPECT_EQ(points.size(), 100u);
  EXPECT_EQ(per_model["models/gpt-oss-120b.json"], 55);
  EXPECT_EQ(per_model["models/latency/configs/qwen3.5-397b-a17b.json"], 45);
}

// The smallest point of each model (isl 1024, osl 1024, concurrency 4) with one request per slot and
// no warm-up: every request finishes and the means are positive.
TEST(ComparisonSet, SmallestPointOfEachModelSimulates) {
  const auto points = read_validation_points(kPoints, kDefaultHardwareDir);
  for (const char* model : {"models/gpt-oss-120b.json", "models/latency/configs/qwen3.5-397b-a17b.json"}) {
    const ValidationPoint* pick = nullptr;
    for (const auto& p : points)
      if (p.model == model && p.isl == 1024 && p.osl == 1024 && p.concurrency == 4) {
        pick = &p;
        break;
      }
    ASSERT_NE(pick, nullptr) << model;
    const PointMeans m = simulate_one_request_per_client(*pick);
    EXPECT_EQ(m.requests, 4) << model;
    EXPECT_GT(m.ttft_ms, 0) << model;
    EXPECT_GT(m.tpot_ms, 0) << model;
    EXPECT_TRUE(std::isfinite(m.ttft_ms) && std::isfinite(m.tpot_ms)) << model;
  }
}

}  // namespace
}  // namespace kvsim
