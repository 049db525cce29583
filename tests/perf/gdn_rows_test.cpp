// Gated DeltaNet state kernels from aiconfigurator's SGLang 0.5.14 rows (models/latency/<gpu>/gdn_*.csv;
// b200_sxm/linear_attention/sglang/0.5.14/gdn_perf.parquet). The values below are the collection's own rows
// for Qwen/Qwen3.5-122B-A10B at 2 key and 8 value heads of 128 on one GPU (the local shape of
// Qwen3.5-397B-A17B at TP 8, whose 45 of 60 layers are GDN): generation batch 4, causal_conv1d_update
// 0.00209472 ms + fused_recurrent_gated_delta_rule_packed_decode 0.004536 ms; context batch 1 of 1,024
// tokens, causal_conv1d_fn 0.00484576 ms + chunk_gated_delta_rule 0.0694912 ms.
#include <gtest/gtest.h>

#include "sim/model/config_reader.h"
#include "sim/perf/calibrated_model.h"
#include "sim/scenario/hardware_catalog.h"

namespace kvsim {
namespace {

const std::string kRoot = KVSIM_SOURCE_DIR;

const LayerSpec& first_gdn(const ModelSpec& m) {
  for (const LayerSpec& l : m.layers)
    if (l.kind == LayerKind::kGatedDeltaNet) return l;
  throw std::runtime_error("no GDN layer");
}

TEST(GdnRows, LocalShapeKey) {
  const ModelSpec m = read_model_config(kRoot + "/models/latency/configs/qwen3.5-397b-a17b.json");
  // linear_num_key_heads 16, linear_num_value_heads 64, both head dims 128.
  EXPECT_EQ(gdn_kernel_shape(first_gdn(m).state, 1), "k16x128_v64x128");
  EXPECT_EQ(gdn_kernel_shape(first_gdn(m).state, 8), "k2x128_v8x128");
  EXPECT_EQ(gdn_kernel_shape(first_gdn(m).state, 32), "");  // 16 key heads do not split 32 ways
}

TEST(GdnRows, Qwen35StatePathFromTheRows) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const ModelSpec m = read_model_config(kRoot + "/models/latency/configs/qwen3.5-397b-a17b.json");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "b200");
  const CalibratedLatencyModel c(m, hw.gpu("b200"), 8, DType::kFp8, DType::kBf16, t, {});
  ASSERT_TRUE(c.uses_gdn_kernel_rows());
  BatchShape decode;
  decode.num_tokens = decode.num_decode_requests = decode.state_requests = 4;
  decode.decode_context_tokens = 4 * 1000;
  const double gen = (0.00209472 + 0.004536) * 1e-3;
  EXPECT_NEAR(c.breakdown(decode).state_s, 45 * gen, 1e-12);

  BatchShape prefill;
  prefill.num_tokens = prefill.num_prefill_tokens = 1024;
  prefill.num_prefill_requests = prefill.state_requests = 1;
  prefill.prefill_attn_pairs = 1024.0 * 1025.0 / 2;
  const double ctx = (0.00484576 + 0.0694912) * 1e-3;
  EXPECT_NEAR(c.breakdown(prefill).state_s, 45 * ctx, 3e-8);  // the CSV keeps 6 significant digits

  // A mixed step runs both kernels of each layer.
  BatchShape mixed = prefill;
  mixed.num_tokens += 4;
  mixed.num_decode_requests = 4;
  mixed.state_requests += 4;
  mixed.decode_context_tokens = 4 * 1000;
  EXPECT_NEAR(c.breakdown(mixed).state_s, 45 * (gen + ctx), 3e-8);

  // A GPU without the rows keeps the roofline state term.
  const LatencyTables a100 = load_latency_tables(kRoot + "/models/latency", "a100-80gb");
  EXPECT_FALSE(
      CalibratedLatencyModel(m, hw.gpu("a100-80gb"), 8, DType::kBf16, DType::kBf16, a100, {}).uses_gdn_kernel_rows());
}

}  // namespace
}  // namespace kvsim
