// Quantised weights and caches, CUDA-graph padding and the MoE table in the step models. Every expected
// value is a hand calculation from the format definitions, vLLM's capture-size rule or a measured
// table row quoted in the test, never a number read back from the program.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/core/errors.h"
#include "sim/model/config_reader.h"
#include "sim/model/sizing.h"
#include "sim/perf/calibrated_model.h"
#include "sim/perf/cuda_graph.h"
#include "sim/perf/latency_factory.h"
#include "sim/perf/moe_table.h"
#include "sim/perf/roofline_model.h"
#include "sim/scenario/hardware_catalog.h"

namespace kvsim {
namespace {

const std::string kRoot = KVSIM_SOURCE_DIR;

// Dense toy model: h 1024, 4 layers (8 q heads, 2 KV heads of 128), MLP 4096, vocab 32000, untied.
// Layers 4 x (2,621,440 attention + 12,582,912 MLP) = 60,817,408; embedding + LM head 2 x 32,768,000.
ModelSpec tiny_model() {
  ModelSpec m;
  m.name = "tiny";
  m.hidden_size = 1024;
  m.num_attention_heads = 8;
  m.head_dim = 128;
  m.vocab_size = 32000;
  m.intermediate_size = 4096;
  for (int i = 0; i < 4; ++i) {
    LayerSpec l;
    l.kind = LayerKind::kFullAttention;
    l.attn.num_kv_heads = 2;
    l.attn.head_dim = 128;
    m.layers.push_back(l);
  }
  m.params = 126353408;
  m.active_params = m.params;
  return m;
}

GpuSpec toy_gpu() {  // 100 TFLOP/s, 1 TB/s, efficiencies 0.5, floor 2 us
  GpuSpec g;
  g.name = "toy";
  g.bf16_flops = 100e12;
  g.hbm_bandwidth = 1e12;
  g.nvlink_bandwidth = 100e9;
  g.compute_efficiency = 0.5;
  g.memory_efficiency = 0.5;
  g.kernel_floor = Duration::us(2);
  return g;
}

// Weight bytes read per step = layers' weights in the format (scales included) + the LM head in 16 bits
// (32,768,000 x 2 = 65,536,000); the embedding table is only looked up.
//   bf16  16 bits:                               60,817,408 x 2        = 121,634,816
//   fp8   8 bits, per-tensor scale:              60,817,408 x 1        =  60,817,408
//   int4  4 + 16/128 (BF16 scale per 128):       60,817,408 x 33/64    =  31,358,976
//   mxfp4 4 + 8/32 (E8M0 scale per 32):          60,817,408 x 17/32    =  32,309,248
//   nvfp4 4 + 8/16 (E4M3 scale per 16):          60,817,408 x 9/16     =  34,209,792
TEST(QuantizedStepWeights, RooflineReadsEachFormatWithItsScales) {
  const struct {
    DType d;
    double layers;
  } cases[] = {{DType::kBf16, 121634816},
               {DType::kFp8, 60817408},
               {DType::kInt4, 31358976},
               {DType::kMxfp4, 32309248},
               {DType::kNvfp4, 34209792}};
  for (const auto& c : cases) {
    const RooflineLatencyModel m(tiny_model(), toy_gpu(), 1, c.d, DType::kBf16);
    EXPECT_DOUBLE_EQ(m.weight_bytes_dense(), c.layers + 65536000) << dtype_name(c.d);
    const RooflineLatencyModel tp2(tiny_model(), toy_gpu(), 2, c.d, DType::kBf16);
    EXPECT_DOUBLE_EQ(tp2.weight_bytes_dense(), (c.layers + 65536000) / 2) << dtype_name(c.d);
    BatchShape b;
    b.num_tokens = 1;
    b.num_decode_requests = 1;
    b.decode_context_tokens = 100;
    EXPECT_DOUBLE_EQ(m.breakdown(b).weight_bytes, c.layers + 65536000) << dtype_name(c.d);
  }
}

// Served as the checkpoint stores them ("auto"), the step models take the checkpoint's own bits per
// quantised weight: gpt-oss-120b MXFP4 = 4 bits + one 8-bit E8M0 scale per 32 values = 4.25 (its
// quantised dims are multiples of 32); DeepSeek-V3 FP8 with one FP32 scale per 128 x 128 block =
// 8 + 32 / 16384 = 8.001953125 (to within partial blocks and byte rounding); no quantization_config: 0.
TEST(QuantizedStepWeights, CheckpointBitsFromQuantizationConfig) {
  EXPECT_NEAR(checkpoint_weight_bits(read_model_config(kRoot + "/models/gpt-oss-120b.json")), 4.25, 1e-6);
  EXPECT_NEAR(checkpoint_weight_bits(read_model_config(kRoot + "/models/deepseek-v3.json")), 8.001953125, 1e-3);
  EXPECT_EQ(checkpoint_weight_bits(read_model_config(kRoot + "/models/qwen3-8b.json")), 0.0);
  // The override replaces the dtype's bits: 4.5 bits (e.g. INT4 with a BF16 scale per 32) on the toy
  // model's layers: 60,817,408 x 4.5 / 8 = 34,209,792, + the BF16 LM head 65,536,000.
  const RooflineLatencyModel m(tiny_model(), toy_gpu(), 1, DType::kInt4, DType::kBf16, {}, {}, 4.5);
  EXPECT_DOUBLE_EQ(m.weight_bytes_dense(), 34209792.0 + 65536000.0);
}

// Without operator tables a GEMM is floor + max(F / (eta_c peak), B / (eta_m BW)). m = 1, n = k = 4096:
// F = 2 x 4096^2 = 33,554,432 (0.67 us at 50 TFLOP/s); B = w x 4096^2 + 2 x (4096 + 4096) bytes at 0.5 TB/s.
//   int4:  8,650,752 + 16,384 = 8,667,136 B -> 17.334272 us + 2 us
//   mxfp4: 8,912,896 + 16,384 = 8,929,280 B -> 17.85856 us + 2 us
//   nvfp4: 9,437,184 + 16,384 = 9,453,568 B -> 18.907136 us + 2 us
TEST(QuantizedStepWeights, CalibratedGemmReadsTheStoredBytes) {
  const LatencyTables none;
  const struct {
    DType d;
    double us;
  } cases[] = {{DType::kInt4, 19.334272}, {DType::kMxfp4, 19.85856}, {DType::kNvfp4, 20.907136}};
  for (const auto& c : cases) {
    const CalibratedLatencyModel m(tiny_model(), toy_gpu(), 1, c.d, DType::kBf16, none, EngineOverhead{});
    EXPECT_NEAR(m.gemm_seconds(1, 4096, 4096) * 1e6, c.us, 1e-9) << dtype_name(c.d);
    // The LM head stays BF16: 2 x 4096^2 + 2 x 8192 = 33,570,816 B -> 67.141632 us + 2 us.
    EXPECT_NEAR(m.bf16_gemm_seconds(1, 4096, 4096) * 1e6, 69.141632, 1e-9);
  }
}

struct GemmRow {
  double m, n, k, ms;  // a measured row of the format's GEMM table
};

// The model prices its weights' GEMMs from the measured table of their format, each row exactly.
void expect_gemm_rows(const CalibratedLatencyModel& model, std::initializer_list<GemmRow> rows) {
  EXPECT_TRUE(model.uses_quantised_gemm_table());
  for (const GemmRow& r : rows)
    EXPECT_NEAR(model.gemm_seconds(r.m, r.n, r.k), r.ms * 1e-3, 1e-12) << r.m << " x " << r.n << " x " << r.k;
}

// FP8 weights on H100 use the measured FP8 x FP8 rows (gemm_bf16_fp8.csv of aiconfigurator's H100
// vLLM 0.19.0 collection): fp8,4096,4096,4096 -> 0.11918 ms; fp8,64,6144,4096 -> 0.0155876 ms;
// fp8,1,4096,4096 -> 0.0107858 ms.
TEST(QuantizedStepWeights, Fp8WeightsUseTheMeasuredFp8GemmRows) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "h100-sxm");
  ASSERT_FALSE(t.gemm_fp8.empty());
  const CalibratedLatencyModel fp8(tiny_model(), hw.gpu("h100-sxm"), 1, DType::kFp8, DType::kBf16, t, {});
  expect_gemm_rows(fp8, {{4096, 4096, 4096, 0.11918}, {64, 6144, 4096, 0.0155876}, {1, 4096, 4096, 0.0107858}});
  const CalibratedLatencyModel bf16(tiny_model(), hw.gpu("h100-sxm"), 1, DType::kBf16, DType::kBf16, t, {});
  EXPECT_FALSE(bf16.uses_quantised_gemm_table());
}

// FP8 weights on H200 use the FP8 x FP8 rows of aiconfigurator's H200 vLLM 0.19.0 GEMM collection
// (h200_sxm/gemm/vllm/0.19.0/gemm_perf.parquet, kernel vllm_default, gemm_dtype fp8; the shared copy kept
// the BF16 rows only): 4096,4096,4096 -> 0.11836800310346816 ms; 64,6144,4096 -> 0.011422221859296164 ms;
// 1,4096,4096 -> 0.009324444664849175 ms.
TEST(QuantizedStepWeights, Fp8WeightsUseTheMeasuredH200Fp8GemmRows) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "h200");
  const CalibratedLatencyModel fp8(tiny_model(), hw.gpu("h200"), 1, DType::kFp8, DType::kBf16, t, {});
  expect_gemm_rows(fp8, {{4096, 4096, 4096, 0.11836800310346816},
                         {64, 6144, 4096, 0.011422221859296164},
                         {1, 4096, 4096, 0.009324444664849175}});
  const CalibratedLatencyModel bf16(tiny_model(), hw.gpu("h200"), 1, DType::kBf16, DType::kBf16, t, {});
  EXPECT_FALSE(bf16.uses_quantised_gemm_table());
}

// Block-scaled FP8 weights (DeepSeek / Qwen3-FP8 / MiniMax checkpoints with weight_block_size) run on the
// block rows (h200 gemm_fp8_block.csv, from the GEMM Parquet, gemm_dtype fp8_block): 4096,4096,4096 ->
// 0.14989422427283391 ms, 1,4096,4096 -> 0.021925333473417494 ms (the per-tensor rows: 0.11836800310346816
// and 0.009324444664849175 ms).
TEST(QuantizedStepWeights, BlockScaledFp8WeightsUseTheBlockRows) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = with_block_fp8_rows(load_latency_tables(kRoot + "/models/latency", "h200"));
  const CalibratedLatencyModel fp8(tiny_model(), hw.gpu("h200"), 1, DType::kFp8, DType::kBf16, t, {});
  expect_gemm_rows(fp8, {{4096, 4096, 4096, 0.14989422427283391}, {1, 4096, 4096, 0.021925333473417494}});
}

// NVFP4 (and the generic fp4) weights on Blackwell use the NVFP4 x NVFP4 rows (gemm_nvfp4.csv, from the
// vLLM 0.19.0 GEMM Parquet, gemm_dtype nvfp4): B200 4096,4096,4096 -> 0.03911822372012668 ms, 64,6144,4096
// -> 0.009323555562231276 ms, 1,4096,4096 -> 0.008359111017651027 ms (not the BF16 row 0.0096533 ms
// scaled by SOL: 4.5-bit weights would make that 0.0096533 x 0.29). MXFP4 keeps the scaled BF16 rows;
// Hopper has no FP4 peak, so no NVFP4 table applies there.
TEST(QuantizedStepWeights, Nvfp4WeightsUseTheMeasuredNvfp4GemmRows) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "b200");
  ASSERT_FALSE(t.gemm_nvfp4.empty());
  for (DType d : {DType::kNvfp4, DType::kFp4}) {
    const CalibratedLatencyModel m(tiny_model(), hw.gpu("b200"), 1, d, DType::kBf16, t, {});
    expect_gemm_rows(m, {{4096, 4096, 4096, 0.03911822372012668},
                         {64, 6144, 4096, 0.009323555562231276},
                         {1, 4096, 4096, 0.008359111017651027}});
  }
  const CalibratedLatencyModel mx(tiny_model(), hw.gpu("b200"), 1, DType::kMxfp4, DType::kBf16, t, {});
  EXPECT_FALSE(mx.uses_quantised_gemm_table());
  const CalibratedLatencyModel hopper(tiny_model(), hw.gpu("h200"), 1, DType::kNvfp4, DType::kBf16,
                                      load_latency_tables(kRoot + "/models/latency", "h200"), {});
  EXPECT_FALSE(hopper.uses_quantised_gemm_table());
}

// Which FP8 kernels a model's weights run (sizing.h fp8_block_scaled): block-scaled only for weight_dtype
// fp8_block, which sizes as FP8 (8-bit values); auto and fp8 keep the per-tensor rows (not adopted for
// weight_block_size checkpoints, models/latency/README.md).
TEST(QuantizedStepWeights, Fp8BlockKernelsOnlyForFp8Block) {
  EXPECT_TRUE(fp8_block_scaled("fp8_block"));
  EXPECT_FALSE(fp8_block_scaled("fp8"));
  EXPECT_FALSE(fp8_block_scaled("auto"));
  EXPECT_EQ(parse_weight_dtype("fp8_block", "weight_dtype"), DType::kFp8);
}

// The decode-attention fits come from BF16-cache tables; an FP8 cache halves the per-context-token
// (KV read) term and leaves the per-call and per-request terms: the difference of the two decode costs is
// half the BF16 context term, layers x c x context / 2.
TEST(QuantizedCache, Fp8CacheHalvesTheDecodeKvTerm) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "h100-sxm");
  const ModelSpec m = read_model_config(kRoot + "/models/latency/configs/llama-3.1-8b.json");
  const CalibratedLatencyModel bf16(m, hw.gpu("h100-sxm"), 1, DType::kBf16, DType::kBf16, t, {});
  const CalibratedLatencyModel fp8(m, hw.gpu("h100-sxm"), 1, DType::kBf16, DType::kFp8, t, {});
  const auto fit = fit_decode_attention(t, 32, 8, 128, 0);
  ASSERT_TRUE(fit.has_value());
  BatchShape b;
  b.num_tokens = 16;
  b.num_decode_requests = 16;
  b.decode_context_tokens = 16 * 4096;
  const double expected = 32 * fit->per_context_token_s * 16 * 4096 / 2;
  EXPECT_NEAR(bf16.breakdown(b).decode_attention_s - fp8.breakdown(b).decode_attention_s, expected, 1e-12);
}

// vLLM's default capture sizes (vllm/config/vllm.py _set_cudagraph_sizes): max = min(2 x max_num_seqs,
// 512, max_num_batched_tokens); [1, 2, 4] + 8..248 step 8 + 256..max step 16.
TEST(CudaGraph, VllmCaptureSizes) {
  const auto s = vllm_cudagraph_capture_sizes(256, 8192);  // max 512: 3 + 31 + 17 = 51 sizes
  ASSERT_EQ(s.size(), 51u);
  EXPECT_EQ(s[0], 1);
  EXPECT_EQ(s[2], 4);
  EXPECT_EQ(s[3], 8);
  EXPECT_EQ(s[33], 248);
  EXPECT_EQ(s[34], 256);
  EXPECT_EQ(s.back(), 512);
  EXPECT_EQ(vllm_cudagraph_capture_sizes(64, 8192).back(), 128);  // 2 x 64
  EXPECT_EQ(vllm_cudagraph_capture_sizes(256, 100).back(), 96);   // 100 tokens: 8..96, 100 not a size
  EXPECT_EQ(vllm_cudagraph_capture_sizes(1, 8192), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(vllm_cudagraph_capture_sizes(0, 8192).empty());
}

TEST(CudaGraph, StepIsPaddedToTheNextCapturedSizeAndEagerAbove) {
  const auto s = vllm_cudagraph_capture_sizes(256, 8192);
  EXPECT_EQ(cudagraph_padded_tokens(s, 1), 1);
  EXPECT_EQ(cudagraph_padded_tokens(s, 3), 4);
  EXPECT_EQ(cudagraph_padded_tokens(s, 5), 8);
  EXPECT_EQ(cudagraph_padded_tokens(s, 13), 16);
  EXPECT_EQ(cudagraph_padded_tokens(s, 249), 256);
  EXPECT_EQ(cudagraph_padded_tokens(s, 257), 272);
  EXPECT_EQ(cudagraph_padded_tokens(s, 512), 512);
  EXPECT_EQ(cudagraph_padded_tokens(s, 513), 513);  // above the largest size: no graph, no padding
  const auto small = vllm_cudagraph_capture_sizes(64, 8192);
  EXPECT_EQ(cudagraph_padded_tokens(small, 100), 104);
  EXPECT_EQ(cudagraph_padded_tokens(small, 129), 129);
  EXPECT_EQ(cudagraph_padded_tokens({}, 7), 7);
}

// A step of 5 decodes runs the token-level kernels at 8 tokens, so they cost what 8 tokens cost; the LM
// head sees the 5 sampled rows only.
TEST(CudaGraph, CalibratedModelPricesTokenKernelsAtThePaddedSize) {
  const LatencyTables none;
  const auto sizes = vllm_cudagraph_capture_sizes(256, 8192);
  const CalibratedLatencyModel padded(tiny_model(), toy_gpu(), 1, DType::kBf16, DType::kBf16, none, {}, {}, {}, sizes);
  const CalibratedLatencyModel plain(tiny_model(), toy_gpu(), 1, DType::kBf16, DType::kBf16, none, {});
  BatchShape five;
  five.num_tokens = five.num_decode_requests = 5;
  five.decode_context_tokens = 5 * 100;
  BatchShape eight = five;
  eight.num_tokens = 8;
  EXPECT_EQ(padded.breakdown(five).padded_tokens, 8);
  EXPECT_EQ(plain.breakdown(five).padded_tokens, 5);
  EXPECT_DOUBLE_EQ(padded.breakdown(five).linear_s, plain.breakdown(eight).linear_s);
  EXPECT_DOUBLE_EQ(padded.breakdown(five).lm_head_s, plain.breakdown(five).lm_head_s);
}

// Balanced routing: n tokens x top-k spread evenly over e experts.
TEST(MoeTable, TokensPerExpertUnderBalancedRouting) {
  EXPECT_DOUBLE_EQ(tokens_per_expert(4096, 8, 128), 256.0);
  EXPECT_DOUBLE_EQ(tokens_per_expert(1, 2, 8), 0.25);
  EXPECT_DOUBLE_EQ(tokens_per_expert(8192, 4, 128), 256.0);  // gpt-oss-120b, 8k-token prefill
  EXPECT_DOUBLE_EQ(tokens_per_expert(100, 10, 512), 100.0 * 10 / 512);
}

// Rows of models/latency/h100-sxm/moe.csv (aiconfigurator H100 vLLM 0.19.0, BF16, balanced):
//   1,4096,14336,2,8,1,1  -> 0.254661 ms      (Mixtral shape, 1 token)
//   64,2048,768,8,128,1,1 -> 0.423915 ms      (4 tokens per expert)
//   80,2048,768,8,128,1,1 -> 0.439781 ms      (5 tokens per expert)
//   96,2048,768,8,128,1,1 -> 0.440635 ms      (6 tokens per expert; the next measured count)
//   128,2048,768,8,128,1,1 -> 0.441883 ms     (8 tokens per expert)
// A measured point comes back exactly. Halfway in log(tokens per expert) between 5 and 6
// (n = sqrt(80 x 96)) the utilisation is the mean of the two rows' utilisations, u = SOL / latency, with
// SOL = max(6 n k h I / 989e12, (min(E, n k) x 3 h I x 2 + 8 n h) / 3.35e12).
TEST(MoeTable, LooksUpTheMeasuredEfficiencyAtTheTokensPerExpert) {
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "h100-sxm");
  const PeakRates bf16{989e12, 3.35e12, 2.0};
  const MoeTable table(t.moe, bf16);
  ASSERT_FALSE(table.empty());
  EXPECT_NEAR(table.seconds(1, {4096, 14336, 2, 8}, bf16), 0.254661e-3, 1e-12);
  const MoeShape s{2048, 768, 8, 128};
  EXPECT_NEAR(table.seconds(64, s, bf16), 0.423915e-3, 1e-12);
  EXPECT_NEAR(table.seconds(128, s, bf16), 0.441883e-3, 1e-12);
  auto sol = [](double n) {
    const double flops = 6.0 * n * 8 * 2048 * 768;
    const double bytes = std::min(128.0, n * 8) * 3 * 2048 * 768 * 2 + 8.0 * n * 2048;
    return std::max(flops / 989e12, bytes / 3.35e12);
  };
  const double u = (sol(80) / 0.439781e-3 + sol(96) / 0.440635e-3) / 2;
  const double n = std::sqrt(80.0 * 96.0);
  EXPECT_NEAR(table.seconds(n, s, bf16), sol(n) / u, 1e-12);
  // An unmeasured shape (inter 760) borrows the utilisation of the nearest measured one (inter 768).
  EXPECT_EQ(table.nearest({2048, 760, 8, 128}).inter, 768);
}

// An EP x moe-TP query with no rows of its own (Qwen3-235B's experts, h 4096, I 1536, E 128, top-8, at EP 2 x
// moe-TP 2: 768 columns a rank) is as far (ln 2) from its TP-only neighbour (moe-TP 2, EP 1: 768 columns),
// its EP-only neighbour (EP 2: 1,536 columns) and another model's shape at EP 2 (Qwen3-30B: h 2048, 768
// columns). It reads its own model's curve (moe_table.h: "the nearest of its EP-only and TP-only
// neighbours"), the TP-only one first in map order; before, the other model's came first in map order.
TEST(MoeTable, AnEpByTpLayoutReadsItsOwnModelsNeighbourOnATie) {
  const PeakRates bf16{989e12, 3.35e12, 2.0};
  const std::vector<MoePoint> rows = {
      {16, 2048, 768, 8, 128, 1, 2, 1e-4},   // another model at EP 2
      {16, 4096, 1536, 8, 128, 2, 1, 2e-4},  // TP-only neighbour: moe_tp 2 -> 768 columns
      {16, 4096, 1536, 8, 128, 1, 2, 3e-4},  // EP-only neighbour
  };
  const MoeTable table(rows, bf16);
  const MoeShape q{4096, 768, 8, 128, 2};
  const MoeShape n = table.nearest(q);
  EXPECT_EQ(n.hidden, 4096);
  EXPECT_EQ(n.inter, 768);
  EXPECT_EQ(n.ep, 1);
}

// The step the MoE tests price: 64 decode requests of 1,000 cached tokens each.
BatchShape decode_64() {
  BatchShape b;
  b.num_tokens = b.num_decode_requests = 64;
  b.decode_context_tokens = 64 * 1000;
  return b;
}

struct MoeRow {
  DType dtype;
  double ms;  // the measured row, 64 tokens of Qwen3-30B-A3B's expert shape
};

// A 64-token decode step of Qwen3-30B-A3B's 48 MoE layers on `gpu` costs 48 x the measured row of each
// expert format.
void expect_moe_rows(const std::string& gpu, std::initializer_list<MoeRow> rows) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", gpu);
  const ModelSpec m = read_model_config(kRoot + "/models/qwen3-30b-a3b.json");
  ASSERT_EQ(m.num_experts, 128);
  const BatchShape b = decode_64();
  for (const MoeRow& c : rows) {
    const CalibratedLatencyModel model(m, hw.gpu(gpu), 1, c.dtype, DType::kBf16, t, {});
    EXPECT_TRUE(model.uses_moe_table());
    EXPECT_NEAR(model.breakdown(b).moe_s, 48 * c.ms * 1e-3, 1e-12) << gpu << " " << dtype_name(c.dtype);
  }
}

// Quantised experts on B300 use the measured kernels of their format (models/latency/b300/, from
// aiconfigurator's vLLM 0.19.0 MoE collection), rows 64,2048,768,8,128,1,1 (Qwen3-30B-A3B's expert shape):
//   moe_nvfp4.csv 0.07604266703128815 ms (FlashInfer TRT-LLM FP4 MoE), moe.csv 0.23262399435043335 ms
//   (BF16). A 64-token step of the 48 MoE layers costs 48 x the row. (INT4: KimiInt4ExpertsUse... below.)
TEST(MoeTable, QuantisedExpertsUseTheirFormatsKernelOnB300) {
  expect_moe_rows("b300", {{DType::kNvfp4, 0.07604266703128815}, {DType::kBf16, 0.23262399435043335}});
}

// B200 now has aiconfigurator's vLLM 0.19.0 MoE collection (models/latency/b200/, PROVENANCE.md), rows
// 64,2048,768,8,128,1,1 read from b200_sxm/moe/vllm/0.19.0/moe_perf.parquet (balanced routing):
//   nvfp4 0.0758133331934611 ms, bfloat16 0.208079993724823 ms, fp8 0.15294933319091797 ms (B200 has an
//   FP8 peak, so FP8 experts use the FP8 rows).
// A 64-token step of Qwen3-30B-A3B's 48 MoE layers costs 48 x the row.
TEST(MoeTable, ExpertsUseTheMeasuredB200Kernels) {
  expect_moe_rows(
      "b200",
      {{DType::kNvfp4, 0.0758133331934611}, {DType::kBf16, 0.208079993724823}, {DType::kFp8, 0.15294933319091797}});
}

// H200 now has aiconfigurator's vLLM 0.19.0 MoE collection (models/latency/h200/, PROVENANCE.md), rows
// 64,2048,768,8,128,1,1 read from h200_sxm/moe/vllm/0.19.0/moe_perf.parquet (balanced routing):
//   bfloat16 0.30776000022888184 ms, fp8 0.18408000469207764 ms (vllm_fused_moe; H200 has an FP8 peak).
// A 64-token step of Qwen3-30B-A3B's 48 MoE layers costs 48 x the row.
TEST(MoeTable, ExpertsUseTheMeasuredH200Kernels) {
  expect_moe_rows("h200", {{DType::kBf16, 0.30776000022888184}, {DType::kFp8, 0.18408000469207764}});
}

// INT4 weight-only experts (Kimi-K2.5's compressed-tensors pack-quantized checkpoint) use vLLM 0.24.0's
// CompressedTensorsWNA16MarlinMoEMethod rows (kernel vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts,
// h200_sxm / b200_sxm / b300_sxm moe/vllm/0.24.0/moe_perf.parquet, balanced routing, PROVENANCE.md), row
// 64,7168,2048,8,384,8,1 (Kimi's expert shape at TP 8):
//   h200 0.46646400292714435 ms, b200 0.4075626532236735 ms, b300 0.3943359851837158 ms.
// Kimi-K2.5 has 61 layers, the first dense (first_k_dense_replace 1): a 64-token step at TP 8 costs 60 x
// the row. The rows were collected at group 32 (4.5 bits a weight, collector moe.yaml), Kimi's own group,
// so its experts (priced at their 4.5 bits) read them exactly.
TEST(MoeTable, KimiInt4ExpertsUseTheCompressedTensorsMarlinRows) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const ModelSpec m = read_model_config(kRoot + "/models/latency/configs/kimi-k2.5.json");
  ASSERT_EQ(m.num_experts, 384);
  const double kimi_bits = 4.5;
  for (const auto& [gpu, ms] :
       {std::pair{"h200", 0.46646400292714435}, {"b200", 0.4075626532236735}, {"b300", 0.3943359851837158}}) {
    const LatencyTables t = load_latency_tables(kRoot + "/models/latency", gpu);
    const CalibratedLatencyModel model(m, hw.gpu(gpu), 8, DType::kInt4, DType::kBf16, t, {}, {}, {}, {}, kimi_bits);
    EXPECT_TRUE(model.uses_moe_table()) << gpu;
    EXPECT_NEAR(model.breakdown(decode_64()).moe_s, 60 * ms * 1e-3, 1e-12) << gpu;
  }
}

// The physical check make_tables.py prints for the INT4 rows: with every expert touched (256 tokens x top-8
// over 384 experts, moe_tp 1) a 4-bit weight-only kernel reads 384 x 3 x 7168 x 2048 x 4.125 / 8 = 8.72 GB,
// a quarter of BF16's 33.8 GB, so it must be faster than the BF16 row of the same shape and read at a
// plausible share of HBM bandwidth (here at least a third: H200 4.8 TB/s, B200 7.7, B300 7.75, the
// hardware files). vLLM 0.19.0's vllm_marlin_int4_moe rows failed both (H200 17.39 ms, 0.50 TB/s, against
// BF16 7.92 ms); the rows kvsim uses pass.
TEST(MoeTable, Int4ExpertRowsReadFasterThanBf16WithEveryExpertTouched) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const MoeShape s{7168, 2048, 8, 384};
  const double int4_bytes = 384.0 * 3 * 7168 * 2048 * 4.125 / 8;
  for (const char* gpu : {"h200", "b200", "b300"}) {
    const LatencyTables t = load_latency_tables(kRoot + "/models/latency", gpu);
    const GpuSpec& g = hw.gpu(gpu);
    const PeakRates int4{g.bf16_flops, g.hbm_bandwidth, 4.125 / 8}, bf16{g.bf16_flops, g.hbm_bandwidth, 2.0};
    const double t_int4 = MoeTable(t.moe_int4, int4).seconds(256, s, int4);
    const double t_bf16 = MoeTable(t.moe, bf16).seconds(256, s, bf16);
    EXPECT_LT(t_int4, t_bf16) << gpu;
    EXPECT_GT(int4_bytes / t_int4, g.hbm_bandwidth / 3) << gpu;
  }
}

// Block-scaled FP8 experts use the block-FP8 fused-MoE rows (h200 moe_fp8_block.csv, moe_dtype fp8_block,
// kernel vllm_fused_moe): 64,2048,768,8,128,1,1 -> 0.18171733617782593 ms (per-tensor fp8: 0.18408 ms).
// A 64-token step of Qwen3-30B-A3B's 48 MoE layers costs 48 x the row.
TEST(MoeTable, BlockScaledFp8ExpertsUseTheBlockRows) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = with_block_fp8_rows(load_latency_tables(kRoot + "/models/latency", "h200"));
  const ModelSpec m = read_model_config(kRoot + "/models/qwen3-30b-a3b.json");
  const BatchShape b = decode_64();
  const CalibratedLatencyModel model(m, hw.gpu("h200"), 1, DType::kFp8, DType::kBf16, t, {});
  EXPECT_NEAR(model.breakdown(b).moe_s, 48 * 0.18171733617782593e-3, 1e-12);
}

// MoE routing (latency_tables.h): auto is aiconfigurator's power-law default with its model class's
// exponent (DeepSeek-V3 1.01, Qwen3-MoE 1.2); the power-law rows replace the balanced ones. Rows of
// h200_sxm/moe/vllm/0.19.0/moe_perf.parquet, fp8, 64,2048,768,8,128,1,1 (Qwen3-30B-A3B's expert shape):
// power_law_1.2 0.174892795085907 ms, power_law_1.01 0.17167999744415283 ms (balanced 0.18408 ms); bf16 at
// 4,096 tokens: balanced 0.70906662940979 ms, power_law_1.2 0.8920384407043457 ms. A 64-token step of the
// 48 MoE layers costs 48 x the row.
TEST(MoeTable, PowerLawRoutingUsesTheSkewedRows) {
  EXPECT_EQ(resolve_moe_routing("auto", "DeepseekV3ForCausalLM", "k"), "power_law_1.01");
  EXPECT_EQ(resolve_moe_routing("auto", "Qwen3MoeForCausalLM", "k"), "power_law_1.2");
  EXPECT_EQ(resolve_moe_routing("balanced", "DeepseekV3ForCausalLM", "k"), "balanced");
  EXPECT_THROW(resolve_moe_routing("skewed", "Qwen3MoeForCausalLM", "engine.moe_routing"), InputError);
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const std::string root = kRoot + "/models/latency";
  const LatencyTables balanced = load_latency_tables(root, "h200");
  const ModelSpec m = read_model_config(kRoot + "/models/qwen3-30b-a3b.json");
  const BatchShape b = decode_64();
  for (const auto& [routing, ms] :
       {std::pair{"power_law_1.2", 0.174892795085907}, {"power_law_1.01", 0.17167999744415283}}) {
    const LatencyTables t = load_latency_tables(root, "h200", routing);
    const CalibratedLatencyModel model(m, hw.gpu("h200"), 1, DType::kFp8, DType::kBf16, t, {});
    EXPECT_NEAR(model.breakdown(b).moe_s, 48 * ms * 1e-3, 1e-12) << routing;
  }
  const MoeShape s{2048, 768, 8, 128};
  const PeakRates bf16{hw.gpu("h200").bf16_flops, hw.gpu("h200").hbm_bandwidth, 2.0};
  EXPECT_NEAR(MoeTable(balanced.moe, bf16).seconds(4096, s, bf16), 0.70906662940979e-3, 1e-12);
  EXPECT_NEAR(MoeTable(load_latency_tables(root, "h200", "power_law_1.2").moe, bf16).seconds(4096, s, bf16),
              0.8920384407043457e-3, 1e-12);
  // A power-law row faster than the balanced SOL (few experts touched at 16 tokens) comes back as
  // measured: h100-sxm/moe_power_law.csv 16,2048,768,8,128,1,1,power_law_1.2 = 0.2055039882659912 ms
  // (capped at utilisation 1 it read 0.3607 ms).
  const PeakRates h100{hw.gpu("h100-sxm").bf16_flops, hw.gpu("h100-sxm").hbm_bandwidth, 2.0};
  EXPECT_NEAR(MoeTable(load_latency_tables(root, "h100-sxm", "power_law_1.2").moe, h100).seconds(16, s, h100),
              0.2055039882659912e-3, 1e-12);
  // H100 has no INT4 expert table of either routing; a routing no file holds reads the balanced rows
  // (4,347 FP8 rows on H200, one per shape).
  EXPECT_TRUE(load_latency_tables(root, "h100-sxm", "power_law_1.2").moe_int4.empty());
  EXPECT_EQ(load_latency_tables(root, "h200", "power_law_1.5").moe_fp8.size(), 4347u);
}

// Expert-parallel shards use the tables' moe_ep rows (aiconfigurator's collector: 64 tokens on one GPU,
// balanced routing over all 128 experts, only the rank's 128 / EP experts run). Rows of
// models/latency/h200/moe_fp8.csv at 64 tokens of Qwen3-30B-A3B's expert shape (2048, 768, top-8, 128):
//   moe_tp 1, moe_ep 4: 0.07339199880758922 ms;  moe_tp 4, moe_ep 1: 0.07898133496443431 ms.
// At TP 4, vLLM's EP (EP 4, whole experts) costs 48 x the EP-4 row, plain TP 48 x the moe-TP-4 row.
TEST(MoeTable, ExpertParallelShardsUseTheMeasuredEpRows) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "h200");
  const ModelSpec m = read_model_config(kRoot + "/models/qwen3-30b-a3b.json");
  const BatchShape b = decode_64();
  ParallelPlan ep;
  ep.tp = 4;
  ep.expert_parallel = true;
  const CalibratedLatencyModel with_ep(m, hw.gpu("h200"), 4, DType::kFp8, DType::kBf16, t, {}, {}, ep);
  const CalibratedLatencyModel plain(m, hw.gpu("h200"), 4, DType::kFp8, DType::kBf16, t, {});
  EXPECT_NEAR(with_ep.breakdown(b).moe_s, 48 * 0.07339199880758922e-3, 1e-12);
  EXPECT_NEAR(plain.breakdown(b).moe_s, 48 * 0.07898133496443431e-3, 1e-12);
  // EP 2 x moe-TP 2 (SGLang --tp 4 --ep-size 2) has no rows (the collector skips moe_tp > 1 with
  // moe_ep > 1): it borrows the utilisation of a neighbour at equal distance, the first in shape order
  // (inter 384, EP 1) over (inter 768, EP 2), at its own SOL: 6 n k h I / ep flops, min(E, n k) / ep
  // experts' bytes. At 64 tokens (4 per expert) the neighbour's row is measured:
  //   64,2048,768,8,128,2,1 -> 0.1123413344224294 ms, u = SOL(64, inter 384, EP 1) / 0.11234 ms.
  const MoeTable table(t.moe_fp8, {hw.gpu("h200").fp8_flops, hw.gpu("h200").hbm_bandwidth, 1.0});
  const MoeShape mixed{2048, 384, 8, 128, 2};
  EXPECT_EQ(table.nearest(mixed).inter, 384);
  EXPECT_EQ(table.nearest(mixed).ep, 1);
  const PeakRates fp8{hw.gpu("h200").fp8_flops, hw.gpu("h200").hbm_bandwidth, 1.0};
  const double flops = 6.0 * 64 * 8 * 2048 * 384 / 2;
  const double bytes = std::min(128.0, 64.0 * 8) / 2 * 3 * 2048 * 384 * 1.0 + 4.0 * 64 * 2048 * 2;
  EXPECT_DOUBLE_EQ(moe_sol_seconds(64, mixed, fp8), std::max(flops / fp8.flops, bytes / fp8.bytes_per_s));
  const auto sol = [&](double ep_size) {
    const double f = 6.0 * 64 * 8 * 2048 * 384 / ep_size;
    const double by = std::min(128.0, 64.0 * 8) / ep_size * 3 * 2048 * 384 + 4.0 * 64 * 2048 * 2;
    return std::max(f / fp8.flops, by / fp8.bytes_per_s);
  };
  const double u = sol(1) / 0.1123413344224294e-3;
  ASSERT_LT(u, 1.0);
  ParallelPlan mixed_plan = ep;
  mixed_plan.ep = 2;
  const CalibratedLatencyModel sglang(m, hw.gpu("h200"), 4, DType::kFp8, DType::kBf16, t, {}, {}, mixed_plan);
  EXPECT_NEAR(sglang.breakdown(b).moe_s, 48 * sol(2) / u, 1e-12);
}

// gpt-oss's MXFP4 experts use the measured W4A16 MXFP4 fused-MoE rows (models/latency/h200/moe_mxfp4.csv,
// kernel vllm_mxfp4_moe, from h200_sxm/moe/vllm/0.19.0/moe_perf.parquet), rows of gpt-oss-120b's expert
// shape (hidden 2,880, inter 2,880, top-4, 128 experts):
//   balanced  64,2880,2880,4,128,1,1 -> 0.7158400217692057 ms;  moe_tp 2: 64,2880,2880,4,128,2,1 ->
//   0.4179519812266032 ms;  power_law_1.2 64,2880,2880,4,128,1,1 -> 0.563270378112793 ms.
// A 64-token step of the 36 MoE layers costs 36 x the row, at TP 2 (plain TP: each expert split in two,
// inter 1,440 per GPU) 36 x the moe-TP-2 row.
TEST(MoeTable, GptOssMxfp4ExpertsUseTheMeasuredMxfp4Rows) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const std::string root = kRoot + "/models/latency";
  const LatencyTables t = load_latency_tables(root, "h200");
  const ModelSpec m = read_model_config(kRoot + "/models/gpt-oss-120b.json");
  ASSERT_EQ(m.layers.size(), 36u);
  const BatchShape b = decode_64();
  const double bits = checkpoint_weight_bits(m);
  const CalibratedLatencyModel tp1(m, hw.gpu("h200"), 1, DType::kMxfp4, DType::kBf16, t, {}, {}, {}, {}, bits, true);
  EXPECT_TRUE(tp1.uses_moe_table());
  EXPECT_NEAR(tp1.breakdown(b).moe_s, 36 * 0.7158400217692057e-3, 1e-12);
  const CalibratedLatencyModel tp2(m, hw.gpu("h200"), 2, DType::kMxfp4, DType::kBf16, t, {}, {}, {}, {}, bits, true);
  EXPECT_NEAR(tp2.breakdown(b).moe_s, 36 * 0.4179519812266032e-3, 1e-12);
  const LatencyTables skewed = load_latency_tables(root, "h200", "power_law_1.2");
  const CalibratedLatencyModel pl(m, hw.gpu("h200"), 1, DType::kMxfp4, DType::kBf16, skewed, {}, {}, {}, {}, bits,
                                  true);
  EXPECT_NEAR(pl.breakdown(b).moe_s, 36 * 0.563270378112793e-3, 1e-12);
  // The collection's 27 token counts x 16 layouts (128 experts: EP 1..128 and moe-TP 2; 32 experts: EP
  // 1..32 and moe-TP 2), each shape once, less the EP rows, which do not vary with EP (PROVENANCE.md): 27 x 4
  // (two expert counts x moe-TP 1 and 2). An EP 8 query borrows the EP-1 curve at its own SOL. B200 keeps no
  // MXFP4 table.
  EXPECT_EQ(t.moe_mxfp4.size(), 27u * 4);
  for (const MoePoint& p : t.moe_mxfp4) EXPECT_EQ(p.moe_ep, 1);
  EXPECT_TRUE(load_latency_tables(root, "b200").moe_mxfp4.empty());
}

// gpt-oss keeps attention in BF16 (modules_to_not_convert): with dense_weights_16bit its dense GEMMs are the
// measured BF16 rows of models/latency/h200/gemm.csv (aiconfigurator H200 vLLM 0.19.0, gemm_bf16.csv):
// 1,4096,4096 -> 0.0132649 ms; 1,4096,8192 -> 0.0214391 ms. The checkpoint says so
// (checkpoint_dense_weights_16bit); DeepSeek-V3 (FP8 attention and shared experts) and BF16 models do not.
TEST(QuantizedStepWeights, ExpertOnlyCheckpointsRunDenseGemmsInBf16) {
  const HardwareCatalog hw = load_hardware_catalog(kRoot + "/models/hardware");
  const LatencyTables t = load_latency_tables(kRoot + "/models/latency", "h200");
  const ModelSpec m = read_model_config(kRoot + "/models/gpt-oss-120b.json");
  EXPECT_TRUE(checkpoint_dense_weights_16bit(m));
  EXPECT_FALSE(checkpoint_dense_weights_16bit(read_model_config(kRoot + "/models/deepseek-v3.json")));
  EXPECT_FALSE(checkpoint_dense_weights_16bit(read_model_config(kRoot + "/models/qwen3-8b.json")));
  const CalibratedLatencyModel model(m, hw.gpu("h200"), 1, DType::kMxfp4, DType::kBf16, t, {}, {}, {}, {}, 4.25, true);
  EXPECT_FALSE(model.uses_quantised_gemm_table());
  EXPECT_NEAR(model.gemm_seconds(1, 4096, 4096), 0.0132649e-3, 1e-12);
  EXPECT_NEAR(model.gemm_seconds(1, 4096, 8192), 0.0214391e-3, 1e-12);
  // Without the flag (every linear weight MXFP4) the same GEMM reads 4.25-bit weights: faster than BF16.
  const CalibratedLatencyModel all_mxfp4(m, hw.gpu("h200"), 1, DType::kMxfp4, DType::kBf16, t, {}, {}, {}, {}, 4.25);
  EXPECT_LT(all_mxfp4.gemm_seconds(1, 4096, 4096), 0.0132649e-3 * 0.5);
}

}  // namespace
}  // namespace kvsim
