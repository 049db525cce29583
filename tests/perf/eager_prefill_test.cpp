// The eager-prefill floor of models/latency/overhead.csv (SGLang before piecewise CUDA graphs became its
// default): a step with prefill tokens of a MoE model takes at least layers x eager_prefill_ms_per_layer
// before the per-step overhead; decode steps, dense models and releases from eager_prefill_before on do not.
#include <gtest/gtest.h>

#include "sim/model/config_reader.h"
#include "sim/perf/calibrated_model.h"
#include "sim/perf/latency_tables.h"
#include "sim/scenario/hardware_catalog.h"

namespace kvsim {
namespace {

const std::string kRoot = KVSIM_SOURCE_DIR;

TEST(EngineVersion, ReleasesCompareByTheirLeadingNumbers) {
  EXPECT_TRUE(version_before("0.5.9", "0.5.10"));  // 9 < 10, not "9" > "1"
  EXPECT_TRUE(version_before("0.5.1.post1", "0.5.10"));
  EXPECT_TRUE(version_before("0.5.6.post2", "0.5.10"));
  EXPECT_TRUE(version_before("0.4", "0.5.10"));
  EXPECT_FALSE(version_before("0.5.10", "0.5.10"));
  EXPECT_FALSE(version_before("0.5.10.post1", "0.5.10"));
  EXPECT_FALSE(version_before("0.6.0", "0.5.10"));
  // Not a release number: taken as a current build.
  EXPECT_FALSE(version_before("nightly-dev-20260402-d7256eb6", "0.5.10"));
  EXPECT_FALSE(version_before("glm5-hopper", "0.5.10"));
  EXPECT_FALSE(version_before("", "0.5.10"));
}

TEST(EngineVersion, TheSglangRowHoldsTheFloorOfItsSourceForOlderReleasesOnly) {
  const EngineOverhead sg = engine_overhead(kRoot + "/models/latency", "sglang");
  // sgl-project/sglang#12160: a one-token DeepSeek-V3 prefill forward, 61 layers, 82.6 ms eager.
  EXPECT_NEAR(sg.eager_prefill_per_layer_s, 82.6e-3 / 61, 1e-6);
  EXPECT_EQ(sg.eager_prefill_before, "0.5.10");
  EXPECT_EQ(overhead_for_version(sg, "0.5.9").eager_prefill_per_layer_s, sg.eager_prefill_per_layer_s);
  EXPECT_EQ(overhead_for_version(sg, "0.5.10.post1").eager_prefill_per_layer_s, 0.0);
  EXPECT_EQ(overhead_for_version(sg, "").eager_prefill_per_layer_s, 0.0);
  EXPECT_EQ(engine_overhead(kRoot + "/models/latency", "vllm").eager_prefill_per_layer_s, 0.0);
}

BatchShape one_token_prefill() {
  BatchShape b;
  b.num_tokens = b.num_prefill_tokens = 1;
  b.num_prefill_requests = 1;
  b.prefill_attn_pairs = b.prefill_attn_pairs_windowed = 1;
  b.prefill_context_tokens = b.prefill_context_tokens_windowed = 1;
  return b;
}

BatchShape one_decode(int64_t context) {
  BatchShape b;
  b.num_tokens = 1;
  b.num_decode_requests = 1;
  b.decode_context_tokens = b.decode_context_tokens_windowed = context;
  return b;
}

// Qwen3-30B-A3B (48 layers, all MoE; its config.json) on H100 at TP 1 with a floor of 2 ms per layer and no
// other overhead: a one-token prefill takes 48 x 2 = 96 ms (its kernels take far less), a decode step what
// its kernels take; the same model without the floor prices the prefill at its kernels.
TEST(EagerPrefill, AOneTokenPrefillOfAMoeModelTakesLayersTimesTheFloor) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const ModelSpec moe = read_model_config(kRoot + "/models/qwen3-30b-a3b.json");
  ASSERT_EQ(moe.layers.size(), 48u);
  const LatencyTables tables = load_latency_tables(kRoot + "/models/latency", "h100-sxm");
  EngineOverhead eager;
  eager.eager_prefill_per_layer_s = 2e-3;
  eager.eager_prefill_before = "0.5.10";
  const GpuSpec& g = hw.gpu("h100-sxm");
  const CalibratedLatencyModel with(moe, g, 1, DType::kBf16, DType::kBf16, tables, eager);
  const CalibratedLatencyModel without(moe, g, 1, DType::kBf16, DType::kBf16, tables, EngineOverhead{});
  ASSERT_LT(without.step_time(one_token_prefill()).ns(), 96'000'000);
  EXPECT_EQ(with.step_time(one_token_prefill()).ns(), 96'000'000);
  EXPECT_GT(with.breakdown(one_token_prefill()).eager_floor_s, 0.0);
  EXPECT_EQ(with.step_time(one_decode(1000)), without.step_time(one_decode(1000)));
  // A dense model (Qwen3-8B) has no floor: the only measurement is of a MoE model.
  const ModelSpec dense = read_model_config(kRoot + "/models/qwen3-8b.json");
  const CalibratedLatencyModel dense_with(dense, g, 1, DType::kBf16, DType::kBf16, tables, eager);
  const CalibratedLatencyModel dense_without(dense, g, 1, DType::kBf16, DType::kBf16, tables, EngineOverhead{});
  EXPECT_EQ(dense_with.step_time(one_token_prefill()), dense_without.step_time(one_token_prefill()));
}

}  // namespace
}  // namespace kvsim
