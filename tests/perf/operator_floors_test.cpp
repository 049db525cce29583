// Operator-level rules of the calibrated model found in hand checks against the tables (2026-12-06, second
// round): no kernel priced below what the GPU's own tables measure for its kind, quantised GEMMs without
// rows of their own keep the per-call floor, routers stay in BF16, MLA latent down-projections are whole
// on every TP rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/model/config_reader.h"
#include "sim/perf/calibrated_model.h"
#include "sim/perf/latency_tables.h"
#include "sim/perf/moe_table.h"
#include "sim/scenario/hardware_catalog.h"

namespace kvsim {
namespace {

const std::string kRoot = KVSIM_SOURCE_DIR;

// The smallest value of a CSV file's last column (the tables' latency_ms), read here on its own.
double min_last_column_ms(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  double best = 1e300;
  while (std::getline(in, line)) {
    const auto comma = line.find_last_of(',');
    best = std::min(best, std::stod(line.substr(comma + 1)));
  }
  return best;
}

// A borrowed curve applied to a SOL divided by EP also divides the kernel's fixed cost: an EP 8 query of a
// shape measured only at EP 1 comes out at 1/8 of the one-token row. It is held at the table's fastest
// call; a measured point still comes back exactly.
TEST(OperatorFloors, NoFusedMoeCallBelowTheTablesFastest) {
  const PeakRates bf16{989e12, 3.35e12, 2.0};
  const std::vector<MoePoint> rows = {
      {1, 4096, 1536, 8, 128, 1, 1, 50e-6},
      {16, 4096, 1536, 8, 128, 1, 1, 200e-6},
  };
  const MoeTable table(rows, bf16);
  EXPECT_DOUBLE_EQ(table.min_call_seconds(), 50e-6);
  EXPECT_DOUBLE_EQ(table.seconds(16, {4096, 1536, 8, 128, 1}, bf16), 200e-6);
  EXPECT_DOUBLE_EQ(table.seconds(1, {4096, 1536, 8, 128, 1}, bf16), 50e-6);
  EXPECT_DOUBLE_EQ(table.seconds(1, {4096, 192, 8, 128, 8}, bf16), 50e-6);  // EP 8 x moe-TP 8
}

// gpt-oss-120b's head-dim-64 layers have no decode rows on B200: the roofline prices them, no faster than
// the fastest decode call B200's generation_attention.csv measures. One request with one token cached
// reads 2 x 8 x 64 x 2 bytes a layer (negligible), so each of the 36 layers costs that fastest call.
TEST(OperatorFloors, DecodeAttentionWithoutRowsIsNoFasterThanTheGpusFastestDecodeCall) {
  const double fastest_s = min_last_column_ms(kRoot + "/models/latency/b200/generation_attention.csv") * 1e-3;
  EXPECT_GT(fastest_s, 6e-6);  // every B200 decode row takes 6.57 us or more; the GEMM floor is 2.47 us
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "b200");
  const ModelSpec m = read_model_config(kRoot + "/models/gpt-oss-120b.json");
  const CalibratedLatencyModel model(m, hw.gpu("b200"), 1, DType::kMxfp4, DType::kBf16, t, {});
  BatchShape b;
  b.num_tokens = b.num_decode_requests = 1;
  b.decode_context_tokens = b.decode_context_tokens_windowed = 1;
  EXPECT_NEAR(model.breakdown(b).decode_attention_s, 36 * fastest_s, 36 * 1e-9);
}

// FP8 weights on B200 (no FP8 GEMM rows there): the BF16 row's time above the fitted per-call floor scales
// with SOL(fp8) / SOL(bf16); the floor does not. m = 8, n = k = 4096: memory-bound in both formats,
// SOL = (w n k + 2 (m k + m n)) / 7.7 TB/s with w = 1 (FP8) or 2 (BF16).
TEST(OperatorFloors, QuantisedGemmsWithoutTheirOwnRowsKeepThePerCallFloor) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "b200");
  const ModelSpec m = read_model_config(kRoot + "/models/qwen3-8b.json");
  const CalibratedLatencyModel fp8(m, hw.gpu("b200"), 1, DType::kFp8, DType::kBf16, t, {});
  ASSERT_FALSE(fp8.uses_quantised_gemm_table());
  const double bf16 = fp8.bf16_gemm_seconds(8, 4096, 4096);
  const double floor = fp8.calibration().gemm.floor_s;
  const double act = 2.0 * (8 * 4096 + 8 * 4096);
  const double ratio = (1.0 * 4096 * 4096 + act) / (2.0 * 4096 * 4096 + act);
  EXPECT_NEAR(fp8.gemm_seconds(8, 4096, 4096), floor + (bf16 - floor) * ratio, 1e-12);
  EXPECT_GT(fp8.gemm_seconds(8, 4096, 4096), bf16 * ratio);  // scaled whole, it was bf16 x ratio
}

// The MoE router stays in BF16 (vLLM builds the gate with quant_config=None), and DeepSeek-V3's latent
// down-projections (q_a_proj 7168 x 1536, kv_a_proj_with_mqa 7168 x (512 + 64)) are whole on every TP
// rank: the MLA layers' projection GEMM is ((rest - R) / TP + R) / (61 x 7168) wide with
// R = 61 x 7168 x 2112, so its TP 8 width minus an eighth of its TP 1 width is 2112 x 7 / 8 = 1848.
TEST(OperatorFloors, RoutersInBf16AndMlaDownProjectionsWholeOnEveryRank) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "h200");
  const ModelSpec m = read_model_config(kRoot + "/models/deepseek-v3.json");
  const CalibratedLatencyModel tp1(m, hw.gpu("h200"), 1, DType::kFp8, DType::kBf16, t, {});
  const CalibratedLatencyModel tp8(m, hw.gpu("h200"), 8, DType::kFp8, DType::kBf16, t, {});
  auto mla_gemm = [](const CalibratedLatencyModel& c) {
    for (const auto& g : c.token_gemm_shapes())
      if (g.count == 61 && g.k == 7168) return g.n;
    return 0.0;
  };
  ASSERT_GT(mla_gemm(tp1), 0.0);
  EXPECT_NEAR(mla_gemm(tp8) - mla_gemm(tp1) / 8, 2112.0 * 7 / 8, 1e-6);
  int routers = 0;
  for (const auto& g : tp8.token_gemm_shapes())
    if (g.n == 256 && g.k == 7168) {
      ++routers;
      EXPECT_TRUE(g.bf16);
      EXPECT_EQ(g.count, 1);
    }
  EXPECT_EQ(routers, 58);  // one per MoE layer (layers 3-60)
}

// DeepSeek-V3.2's lightning indexer is not split over TP (vLLM deepseek_v2.py Indexer: "no tensor
// parallel, just replicated"): a prefill whose cost is all indexer (2 x 64 heads x 128 FLOPs a query-key
// pair; the sparse attention itself sees one pair) costs each rank the same at TP 1 and TP 8.
TEST(OperatorFloors, TheDsaIndexerIsWholeOnEveryRank) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "h200");
  const ModelSpec m = read_model_config(kRoot + "/models/deepseek-v3.2.json");
  const CalibratedLatencyModel tp1(m, hw.gpu("h200"), 1, DType::kFp8, DType::kBf16, t, {});
  const CalibratedLatencyModel tp8(m, hw.gpu("h200"), 8, DType::kFp8, DType::kBf16, t, {});
  BatchShape b;
  b.num_tokens = b.num_prefill_tokens = 65536;
  b.num_prefill_requests = 1;
  b.prefill_attn_pairs = 65536.0 * 65537 / 2;
  b.prefill_attn_pairs_sparse = 1;
  b.prefill_context_tokens = 65536;
  const double a1 = tp1.breakdown(b).prefill_attention_s, a8 = tp8.breakdown(b).prefill_attention_s;
  EXPECT_GT(a1, 1.0);  // 61 layers x 3.5e13 indexer FLOPs (2.1e15) at about half the BF16 peak: seconds
  EXPECT_NEAR(a8 / a1, 1.0, 1e-6);
}

// Qwen3.5's full-attention layers gate their output (attn_output_gate: true): q_proj emits 2 x 32 heads x
// 256. At TP 8 the fused QKV GEMM is (2 x 32 / 8 + 2 x max(1, 2 / 8)) x 256 = 2,560 wide, not 1,536.
TEST(OperatorFloors, AGatedAttentionOutputWidensTheQueryProjection) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "b200");
  const ModelSpec m = read_model_config(kRoot + "/models/latency/configs/qwen3.5-397b-a17b.json");
  ASSERT_TRUE(m.attn_output_gate);
  const CalibratedLatencyModel tp8(m, hw.gpu("b200"), 8, DType::kBf16, DType::kBf16, t, {});
  int qkv = 0;
  for (const auto& g : tp8.token_gemm_shapes())
    if (g.k == 4096 && g.count == 1 && g.n == 2560) ++qkv;
  EXPECT_EQ(qkv, 15);  // one per full-attention layer
}

// GLM-5 with NVFP4 weights decodes its DSA layers from the FP8-block module rows (the only format
// models/latency/b200/dsa_generation.csv has): the same decode attention as with FP8 weights.
TEST(OperatorFloors, NvFp4DsaLayersDecodeFromTheFp8ModuleRows) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = with_dsa_module_rows(load_latency_tables(kRoot + "/models/latency", "b200"));
  const ModelSpec m = read_model_config(kRoot + "/models/latency/configs/glm-5.json");
  const auto model = [&](DType w) {
    return CalibratedLatencyModel(m, hw.gpu("b200"), 8, w, DType::kBf16, t, {}, {}, {}, {}, 0, false, false, true);
  };
  const CalibratedLatencyModel fp8 = model(DType::kFp8), nvfp4 = model(DType::kNvfp4);
  ASSERT_TRUE(fp8.uses_dsa_module_table());
  EXPECT_TRUE(nvfp4.uses_dsa_module_table());
  BatchShape b;
  b.num_tokens = b.num_decode_requests = 4;
  b.decode_context_tokens = b.decode_context_tokens_windowed = 4 * 1000;
  b.decode_context_tokens_sparse = 4 * 1000;
  EXPECT_DOUBLE_EQ(nvfp4.breakdown(b).decode_attention_s, fp8.breakdown(b).decode_attention_s);
  EXPECT_GT(nvfp4.breakdown(b).decode_attention_s, 78 * 50e-6);  // every B200 DSA row at 8 heads > 50 us
}

}  // namespace
}  // namespace kvsim
