// The second dense validation set models/latency/validation_vllm.csv (Qwen3-32B BF16, vLLM 0.12.0,
// H100 SXM, TP 2/4/8) stays readable and simulable. It checks the file's shape against the silicon
// sample's grid (2 isl x 3 osl x 5 concurrencies x 3 TP = 90 points) and that the smallest point runs;
// the error itself is reported in models/latency/README.md, not asserted. The third set (Llama-3.1-70B)
// is checked the same way at the end.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <utility>

#include "tests/app/validation_test_util.h"

namespace kvsim {
namespace {

const char* kPoints = "models/latency/validation_vllm.csv";

TEST(ValidationVllmSet, GridOfNinetyDensePoints) {
  const auto points = read_validation_points(kPoints, kDefaultHardwareDir);
  ASSERT_EQ(points.size(), 90u);
  std::set<int64_t> isl, osl;
  std::set<int> conc, tp;
  for (const auto& p : points) {
    EXPECT_EQ(p.model, "models/latency/configs/qwen3-32b.json") << p.line;
    EXPECT_EQ(p.engine, "vllm") << p.line;
    EXPECT_EQ(p.gpu, "h100-sxm") << p.line;
    isl.insert(p.isl);
    osl.insert(p.osl);
    conc.insert(p.concurrency);
    tp.insert(p.tp);
    // aiconfigurator's vLLM agg rule: max_num_tokens = max_batch_size + isl + 1500.
    ASSERT_TRUE(p.max_num_batched_tokens.has_value()) << p.line;
    EXPECT_EQ(*p.max_num_batched_tokens, p.concurrency + p.isl + 1500) << p.line;
    EXPECT_GT(p.ttft_ms, 0) << p.line;
    EXPECT_GT(p.tpot_ms, 0) << p.line;
  }
  EXPECT_EQ(isl, (std::set<int64_t>{1024, 4096}));
  EXPECT_EQ(osl, (std::set<int64_t>{128, 512, 1024}));
  EXPECT_EQ(conc, (std::set<int>{8, 16, 32, 64, 128}));
  EXPECT_EQ(tp, (std::set<int>{2, 4, 8}));
}

// isl 1024, osl 128, concurrency 8, TP 8 with one request per slot and no warm-up: all 8 finish.
TEST(ValidationVllmSet, SmallestPointSimulates) {
  const auto points = read_validation_points(kPoints, kDefaultHardwareDir);
  const ValidationPoint* pick = nullptr;
  for (const auto& p : points)
    if (p.isl == 1024 && p.osl == 128 && p.concurrency == 8 && p.tp == 8) pick = &p;
  ASSERT_NE(pick, nullptr);
  const PointMeans m = simulate_one_request_per_client(*pick);
  EXPECT_EQ(m.requests, 8);
  EXPECT_TRUE(std::isfinite(m.ttft_ms) && m.ttft_ms > 0);
  EXPECT_TRUE(std::isfinite(m.tpot_ms) && m.tpot_ms > 0);
}

// The third dense set models/latency/validation_vllm_llama70b.csv (Llama-3.1-70B FP8): 3 (isl, osl)
// pairs x 5 concurrencies x (3 TP on H100 + 4 TP on H200) = 105 points.
TEST(ValidationVllmSet, Llama70BGridOf105Points) {
  const auto points = read_validation_points("models/latency/validation_vllm_llama70b.csv", kDefaultHardwareDir);
  ASSERT_EQ(points.size(), 105u);
  std::set<std::pair<int64_t, int64_t>> lengths;
  std::set<int> conc, tp_h100, tp_h200;
  for (const auto& p : points) {
    EXPECT_EQ(p.model, "models/latency/configs/llama-3.1-70b.json") << p.line;
    EXPECT_EQ(p.engine, "vllm") << p.line;
    EXPECT_EQ(p.dtype, "fp8") << p.line;
    lengths.insert({p.isl, p.osl});
    conc.insert(p.concurrency);
    (p.gpu == "h200" ? tp_h200 : tp_h100).insert(p.tp);
    ASSERT_TRUE(p.max_num_batched_tokens.has_value()) << p.line;
    EXPECT_EQ(*p.max_num_batched_tokens, p.concurrency + p.isl + 1500) << p.line;
  }
  EXPECT_EQ(lengths, (std::set<std::pair<int64_t, int64_t>>{{1024, 1024}, {1024, 8192}, {8192, 1024}}));
  EXPECT_EQ(conc, (std::set<int>{4, 8, 16, 32, 64}));
  EXPECT_EQ(tp_h100, (std::set<int>{2, 4, 8}));
  EXPECT_EQ(tp_h200, (std::set<int>{1, 2, 4, 8}));
}

}  // namespace
}  // namespace kvsim
