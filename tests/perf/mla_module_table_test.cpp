// MLA attention-module rows (engine.mla_attention module_rows): the table's interpolation on a hand-made
// grid, the rows of aiconfigurator's vLLM 0.19.0 module collections quoted below
// (h200_sxm/mla/vllm/0.19.0/mla_{generation,context}_module_perf.parquet, DeepSeek-V3, mla_dtype bfloat16),
// and which models and settings get them.
#include "sim/perf/mla_module_table.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/core/errors.h"
#include "sim/model/config_reader.h"
#include "sim/perf/calibrated_model.h"
#include "sim/scenario/hardware_catalog.h"

namespace kvsim {
namespace {

const std::string kRoot = KVSIM_SOURCE_DIR;

// A grid of two batches; batch 8 stops at length 100 (as the context rows stop at fewer sequences for
// longer prompts).
std::vector<MlaModulePoint> grid() {
  return {{"bf16", "bf16", 16, 1, 100, 1e-3}, {"bf16", "bf16", 16, 1, 200, 3e-3}, {"bf16", "bf16", 16, 4, 100, 2e-3},
          {"bf16", "bf16", 16, 4, 200, 6e-3}, {"bf16", "bf16", 16, 8, 100, 5e-3}, {"bf16", "fp8", 16, 1, 100, 9e-3},
          {"bf16", "bf16", 32, 1, 100, 9e-3}};
}

TEST(MlaModuleTable, InterpolatesInLengthThenBatch) {
  const MlaModuleTable t(grid(), "bf16", "bf16", 16);
  ASSERT_FALSE(t.empty());
  EXPECT_DOUBLE_EQ(t.seconds(4, 200), 6e-3);  // a measured point
  // Length 150 at batch 1: (1 + 3) / 2 = 2 ms; at batch 4: (2 + 6) / 2 = 4 ms. Batch 8 does not reach 150,
  // so batch 2 lies between 1 and 4: 2 + (2 - 1) / 3 x (4 - 2) = 2.6667 ms.
  EXPECT_NEAR(t.seconds(2, 150), 2e-3 + 2e-3 / 3, 1e-12);
  // Batch 8's rows stop at length 100 (5 ms); batch 4, the largest reaching 150, grows from 2 ms at 100 to
  // 4 ms at 150, so batch 8 at 150 is 5 x 4 / 2 = 10 ms; batch 6 lies between 4 and 8: 4 + 2 / 4 x 6 = 7 ms;
  // batch 16, beyond the grid, 10 ms x 16 / 8 = 20 ms.
  EXPECT_NEAR(t.seconds(6, 150), 7e-3, 1e-12);
  EXPECT_NEAR(t.seconds(16, 150), 20e-3, 1e-12);
  // Length 100 is reached by batch 8: batch 6 between 4 and 8, 2 + 2 / 4 x 3 = 3.5 ms.
  EXPECT_NEAR(t.seconds(6, 100), 3.5e-3, 1e-12);
  // Below the shortest length: its value; beyond the longest: the last segment extended (1 + 2 x 2 = 5 ms).
  EXPECT_DOUBLE_EQ(t.seconds(1, 10), 1e-3);
  EXPECT_NEAR(t.seconds(1, 300), 5e-3, 1e-12);
  EXPECT_TRUE(MlaModuleTable(grid(), "fp8_block", "bf16", 16).empty());
  EXPECT_TRUE(MlaModuleTable(grid(), "bf16", "bf16", 8).empty());
}

TEST(MlaModuleTable, ALargerBatchBorrowsOnlyTheShapeAlongTheLength) {
  // Rows of b200/dsa_generation.csv (GLM-5-FP8, fp8_block, FP8 cache, 8 heads): 64 sequences at 1,024 and
  // 2,048 cached tokens 0.0891 and 0.1113 ms, 128 sequences at 1,024 0.1063 ms. Without the 128 x 2,048 row
  // (measured 0.1282 ms) the table gives 0.1063 x 0.1113 / 0.0891 = 0.1328 ms, 3.6 % above it; scaling
  // batch 64 linearly (0.1113 x 2 = 0.2226 ms) would be 74 % above.
  const std::vector<MlaModulePoint> rows = {{"fp8_block", "fp8", 8, 64, 1024, 0.0891e-3},
                                            {"fp8_block", "fp8", 8, 64, 2048, 0.1113e-3},
                                            {"fp8_block", "fp8", 8, 128, 1024, 0.1063e-3}};
  const MlaModuleTable t(rows, "fp8_block", "fp8", 8);
  EXPECT_NEAR(t.seconds(128, 2048), 0.1063e-3 * 0.1113 / 0.0891, 1e-12);
  EXPECT_LT(std::abs(t.seconds(128, 2048) / 0.1282e-3 - 1), 0.04);
}

TEST(MlaModuleTable, ShapeIsDeepSeekV3sAndKimis) {
  const ModelSpec r1 = read_model_config(kRoot + "/models/latency/configs/deepseek-r1.json");
  const ModelSpec kimi = read_model_config(kRoot + "/models/latency/configs/kimi-k2.5.json");
  const ModelSpec glm = read_model_config(kRoot + "/models/latency/configs/glm-5.json");  // hidden 6144, DSA
  const ModelSpec v32 = read_model_config(kRoot + "/models/deepseek-v3.2.json");          // DSA
  EXPECT_TRUE(mla_module_shape(r1, r1.layers[0]));
  EXPECT_TRUE(mla_module_shape(kimi, kimi.layers[0]));
  EXPECT_FALSE(mla_module_shape(glm, glm.layers[0]));
  EXPECT_FALSE(mla_module_shape(v32, v32.layers[0]));
}

// DeepSeek-R1 (61 MLA layers, FP8 block-scaled checkpoint) on H200 at TP 8 = 16 local heads, FP8 cache:
// generation rows (fp8_block, fp8, 16 heads) batch 64 at 2048 cached tokens 0.1665 ms, batch 1 at 2 tokens
// 0.1125 ms; context row batch 8 of 1024 tokens 1.1997 ms.
TEST(MlaModuleTable, StepModelPricesDeepSeekMlaFromTheRows) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = with_mla_module_rows(load_latency_tables(kRoot + "/models/latency", "h200"));
  ASSERT_TRUE(load_latency_tables(kRoot + "/models/latency", "h200").mla_generation.empty());  // not read by default
  const ModelSpec r1 = read_model_config(kRoot + "/models/latency/configs/deepseek-r1.json");
  const GpuSpec& g = hw.gpu("h200");
  const CalibratedLatencyModel rows(r1, g, 8, DType::kFp8, DType::kFp8, t, {}, {}, {}, {}, 0, false, true);
  ASSERT_TRUE(rows.uses_mla_module_table());
  BatchShape decode;
  decode.num_tokens = decode.num_decode_requests = 64;
  decode.decode_context_tokens = 64 * 2048;
  EXPECT_NEAR(rows.breakdown(decode).decode_attention_s, 61 * 0.1665e-3, 1e-12);

  BatchShape prefill;
  prefill.num_tokens = prefill.num_prefill_tokens = 8 * 1024;
  prefill.num_prefill_requests = 8;
  prefill.prefill_attn_pairs = 8 * 1024.0 * 1025.0 / 2;  // no cached prefix: nothing beyond the row
  EXPECT_NEAR(rows.breakdown(prefill).prefill_attention_s, 61 * 1.1997e-3, 1e-12);

  // Both in one step: the decodes add what their row costs above the one-request row.
  BatchShape mixed = prefill;
  mixed.num_tokens += 64;
  mixed.num_decode_requests = 64;
  mixed.decode_context_tokens = 64 * 2048;
  EXPECT_NEAR(rows.breakdown(mixed).decode_attention_s, 61 * (0.1665e-3 - 0.1125e-3), 1e-12);

  // Off by default, and never for a shape the rows were not measured at.
  const CalibratedLatencyModel roofline(r1, g, 8, DType::kFp8, DType::kFp8, t, {});
  EXPECT_FALSE(roofline.uses_mla_module_table());
  EXPECT_NE(roofline.breakdown(decode).decode_attention_s, rows.breakdown(decode).decode_attention_s);
  const ModelSpec glm = read_model_config(kRoot + "/models/latency/configs/glm-5.json");
  EXPECT_FALSE(CalibratedLatencyModel(glm, g, 8, DType::kFp8, DType::kFp8, t, {}, {}, {}, {}, 0, false, true)
                   .uses_mla_module_table());
}

// MLA prefill on the roofline (the default): vLLM runs a dense MLA layer's prefill as MHA on the
// up-projected keys and values (MLACommonImpl._forward_prefill), head size qk_nope + rope = 128 + 64, values
// 128: 2 x 192 + 2 x 128 = 640 FLOPs per head and query-key pair, 16 heads a GPU at TP 8: 10,240 (the
// absorbed decode form would be 16 x (2 x 576 + 2 x 512) = 34,816). Between two chunks without a cached
// prefix the floor cancels: 61 layers x 10,240 x (pairs difference) / (eta x BF16 peak).
TEST(MlaModuleTable, DenseMlaPrefillIsPricedAsMhaOnTheUpProjectedHeads) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "h200");
  const ModelSpec r1 = read_model_config(kRoot + "/models/latency/configs/deepseek-r1.json");
  const GpuSpec& g = hw.gpu("h200");
  const CalibratedLatencyModel m(r1, g, 8, DType::kFp8, DType::kFp8, t, {});
  const auto prefill = [](double n) {
    BatchShape b;
    b.num_tokens = b.num_prefill_tokens = static_cast<int64_t>(n);
    b.num_prefill_requests = 1;
    b.prefill_attn_pairs = n * (n + 1) / 2;
    return b;
  };
  const double pairs = 8192.0 * 8193 / 2 - 4096.0 * 4097 / 2;
  const double expect = 61 * 10240 * pairs / (m.calibration().attention_prefill_eta * g.bf16_flops);
  EXPECT_NEAR(m.breakdown(prefill(8192)).prefill_attention_s - m.breakdown(prefill(4096)).prefill_attention_s, expect,
              1e-12);
}

// Kimi-K2.5 keeps attention in BF16 (compressed-tensors quantises the experts only): B200 rows bf16 / bf16
// at 64 / 8 = 8 local heads, batch 16 at 2048 cached tokens 0.104 ms.
TEST(MlaModuleTable, KimiUsesTheBf16RowsAtItsLocalHeads) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = with_mla_module_rows(load_latency_tables(kRoot + "/models/latency", "b200"));
  const ModelSpec kimi = read_model_config(kRoot + "/models/latency/configs/kimi-k2.5.json");
  const CalibratedLatencyModel m(kimi, hw.gpu("b200"), 8, DType::kInt4, DType::kBf16, t, {}, {}, {}, {}, 0, true, true);
  ASSERT_TRUE(m.uses_mla_module_table());
  BatchShape decode;
  decode.num_tokens = decode.num_decode_requests = 16;
  decode.decode_context_tokens = 16 * 2048;
  EXPECT_NEAR(m.breakdown(decode).decode_attention_s, 61 * 0.104e-3, 1e-12);
}

// GLM-5's DSA layers with the DSA decode rows (engine.mla_attention auto / module_rows): aiconfigurator's
// SGLang 0.5.14 B200 collection (b200_sxm/sparse_attention/sglang/0.5.14/dsa_generation_module_perf.parquet,
// zai-org/GLM-5-FP8, mla_dtype bfloat16, gemm_type fp8_block, kv_cache_dtype fp8, 8 local heads = 64 / TP 8):
// batch 4 at 1,024 cached tokens 0.0684 ms a layer. GLM-5 has 78 DSA layers; vLLM's fp8_ds_mla cache reads
// the FP8-cache rows.
TEST(MlaModuleTable, Glm5DsaDecodesFromTheDsaRows) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = with_mla_module_rows(load_latency_tables(kRoot + "/models/latency", "b200"));
  ASSERT_FALSE(t.dsa_generation.empty());
  const ModelSpec glm = read_model_config(kRoot + "/models/latency/configs/glm-5.json");
  const GpuSpec& g = hw.gpu("b200");
  const CalibratedLatencyModel rows(glm, g, 8, DType::kFp8, DType::kFp8DsMla, t, {}, {}, {}, {}, 0, false, false, true);
  ASSERT_TRUE(rows.uses_dsa_module_table());
  EXPECT_FALSE(rows.uses_mla_module_table());
  BatchShape decode;
  decode.num_tokens = decode.num_decode_requests = 4;
  decode.decode_context_tokens = 4 * 1024;
  decode.decode_context_tokens_sparse = 4 * 1024;
  EXPECT_NEAR(rows.breakdown(decode).decode_attention_s, 78 * 0.0684e-3, 1e-12);

  // The rows hold the projections for decode tokens: a pure decode step's linear time drops by exactly
  // the projection GEMMs the roofline model runs, which come back for prefill tokens.
  const CalibratedLatencyModel roofline(glm, g, 8, DType::kFp8, DType::kFp8DsMla, t, {});
  EXPECT_FALSE(roofline.uses_dsa_module_table());
  EXPECT_LT(rows.breakdown(decode).linear_s, roofline.breakdown(decode).linear_s);
  BatchShape prefill;
  prefill.num_tokens = prefill.num_prefill_tokens = 2048;
  prefill.num_prefill_requests = 2;
  prefill.prefill_attn_pairs = 2 * 1024.0 * 1025.0 / 2;
  EXPECT_NEAR(rows.breakdown(prefill).linear_s, roofline.breakdown(prefill).linear_s, 1e-12);
  EXPECT_NEAR(rows.breakdown(prefill).prefill_attention_s, roofline.breakdown(prefill).prefill_attention_s, 1e-12);
  // In a mixed step the prefill tokens run the roofline path, so the decodes pay their whole row.
  BatchShape mixed = prefill;
  mixed.num_tokens += 4;
  mixed.num_decode_requests = 4;
  mixed.decode_context_tokens = mixed.decode_context_tokens_sparse = 4 * 1024;
  EXPECT_NEAR(rows.breakdown(mixed).decode_attention_s, 78 * 0.0684e-3, 1e-12);

  // A BF16 GLM-5 has no rows (the collection measured FP8 projections): the roofline.
  EXPECT_FALSE(CalibratedLatencyModel(glm, g, 8, DType::kBf16, DType::kBf16, t, {}, {}, {}, {}, 0, false, false, true)
                   .uses_dsa_module_table());
}

}  // namespace
}  // namespace kvsim
