// Every figure of shared/spec/kv-cache-essay.txt for its twelve models, each expected value written
// with the essay's (or model-sizing.md's) arithmetic beside it.
#include "sim/model/sizing.h"

#include <gtest/gtest.h>

#include "sim/model/config_reader.h"

namespace kvsim {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr double kGiB = 1024.0 * 1024 * 1024;

ModelSpec load(const std::string& name) { return read_model_config("models/" + name + ".json"); }

TEST(EssayBytesPerToken, Qwen3_8B_Bf16AndFp8) {
  ModelSpec m = load("qwen3-8b");
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 2 * 36 * 8 * 128 * 2);  // 147,456 = 144 KiB
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 147456);
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp8), 73728);  // half: 1 byte per element
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp4), 36864);  // a quarter
}

TEST(EssayBytesPerToken, Llama2_7B_IsMha) {
  ModelSpec m = load("llama-2-7b");
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 2 * 32 * 32 * 128 * 2);  // 524,288
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp8), 262144);
  // "3.6 times Qwen3-8B": 524,288 / 147,456 = 3.56
  EXPECT_NEAR(524288.0 / 147456.0, 3.6, 0.05);
}

TEST(EssayBytesPerToken, Falcon7B_MultiQueryHasOneKvHead) {
  ModelSpec m = load("falcon-7b");
  EXPECT_EQ(m.layers[0].attn.num_kv_heads, 1);
  EXPECT_EQ(m.layers[0].attn.head_dim, 4544 / 71);                      // 64
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 2 * 1 * 64 * 2 * 32);  // 8,192
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp8), 4096);
}

TEST(EssayBytesPerToken, DeepSeekV3_MlaRowIgnoresKvHeads) {
  ModelSpec m = load("deepseek-v3");
  EXPECT_EQ(m.count(LayerKind::kMla), 61);
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), (512 + 64) * 2 * 61);  // 70,272
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp8), 576 * 61);              // 35,136
}

TEST(EssayBytesPerToken, DeepSeekV32_Fp8DsMlaWithIndexer) {
  ModelSpec m = load("deepseek-v3.2");
  EXPECT_EQ(m.count(LayerKind::kSparseMla), 61);
  // 512 fp8 latent + 4 fp32 scales (16) + 64 bf16 rope (128) = 656; indexer 128 + 4 = 132.
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp8DsMla), (656 + 132) * 61);  // 48,068
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp8DsMla), 48068);
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp8), 48068);  // vLLM canonicalises fp8 to fp8_ds_mla here
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp4), 48068);  // and any quantized dtype (fp4 too): 61 x (656 + 132)
  // BF16 MLA with vLLM's fp8 indexer: (1,152 + 132) x 61 = 78,324.
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 78324);
}

TEST(EssayBytesPerToken, GptOss120b_HalfTheLayersSlide) {
  ModelSpec m = load("gpt-oss-120b");
  EXPECT_EQ(m.count(LayerKind::kSlidingWindow), 18);
  EXPECT_EQ(m.count(LayerKind::kFullAttention), 18);
  EXPECT_EQ(m.layers[0].kind, LayerKind::kSlidingWindow);               // sliding first
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 18 * 2 * 8 * 64 * 2);  // 36,864
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp8), 18432);
  // Window cap: 18 layers x 2,048 B x 128 tokens = 4,718,592 B = 4.5 MiB.
  EXPECT_EQ(window_bytes_max(m, DType::kBf16), 4718592);
  EXPECT_EQ(window_bytes_max(m, DType::kBf16), 9 * kMiB / 2);
  EXPECT_EQ(window_bytes_max(m, DType::kFp8), 9 * kMiB / 4);  // 2.25 MiB
}

TEST(EssayBytesPerToken, Qwen3_30B_A3B_ExpertsKeepNoCache) {
  ModelSpec m = load("qwen3-30b-a3b");
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 2 * 4 * 128 * 2 * 48);  // 98,304
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp8), 49152);
  EXPECT_LT(kv_bytes_per_token(m, DType::kBf16), kv_bytes_per_token(load("qwen3-8b"), DType::kBf16));
}

TEST(EssayHybrids, NemotronH8B_StateAndEquivalence) {
  ModelSpec m = load("nemotron-h-8b");
  EXPECT_EQ(m.layers.size(), 52u);
  EXPECT_EQ(m.count(LayerKind::kFullAttention), 4);
  EXPECT_EQ(m.count(LayerKind::kMamba2), 24);
  EXPECT_EQ(m.count(LayerKind::kNone), 24);
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 4 * 2 * 8 * 128 * 2);  // 16,384
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp8), 8192);
  // Per Mamba2 layer: conv (8,192 + 2x8x128) x 3 = 30,720; SSM 128 x 64 x 128 = 1,048,576 elements.
  const int64_t bf16 = 24 * (30720 + 1048576) * 2;  // 51,806,208 B = 49.41 MiB
  const StateDtypes all_bf16{DType::kBf16, DType::kBf16};
  EXPECT_EQ(state_bytes_per_request(m, all_bf16), bf16);
  EXPECT_NEAR(bf16 / double(kMiB), 49.4, 0.05);
  // "equals 3,162 tokens of its own cache": 51,806,208 / 16,384 = 3,162 exactly.
  EXPECT_EQ(state_bytes_per_request(m, all_bf16) / kv_bytes_per_token(m, DType::kBf16), 3162);
  EXPECT_EQ(state_bytes_per_request(m, all_bf16) % kv_bytes_per_token(m, DType::kBf16), 0);
  // 8K request: 8,192 x 16,384 = 128 MiB + 49.41 MiB = 177.4 MiB.
  EXPECT_NEAR(request_bytes(m, 8192, DType::kBf16, all_bf16, {}) / double(kMiB), 177.4, 0.05);
  // vLLM's default keeps the SSM state in FP32 (conv stays BF16): 24 x (30,720 x 2 + 1,048,576 x 4)
  // = 102,137,856 B = 97.4 MiB, 6,234 tokens of cache, and an 8K request holds 225.4 MiB.
  const StateDtypes vllm = resolve_state_dtypes(m, "auto");
  EXPECT_EQ(vllm.ssm, DType::kFp32);
  EXPECT_EQ(state_bytes_per_request(m, vllm), 24 * (30720 * 2 + 1048576 * 4));
  EXPECT_NEAR(state_bytes_per_request(m, vllm) / double(kMiB), 97.4, 0.05);
  EXPECT_EQ(state_bytes_per_request(m, vllm) / kv_bytes_per_token(m, DType::kBf16), 6234);
  EXPECT_NEAR(request_bytes(m, 8192, DType::kBf16, vllm, {}) / double(kMiB), 225.4, 0.05);
  // "still 6.5 times less than Qwen3-8B" (1,152 MiB / 177.4) and "5.1 times" with FP32 SSM.
  EXPECT_NEAR(1152.0 / (request_bytes(m, 8192, DType::kBf16, all_bf16, {}) / double(kMiB)), 6.5, 0.05);
  EXPECT_NEAR(1152.0 / (request_bytes(m, 8192, DType::kBf16, vllm, {}) / double(kMiB)), 5.1, 0.05);
  // All-FP32 state (model-sizing.md): 103,612,416 B = 98.81 MiB.
  EXPECT_EQ(state_bytes_per_request(m, resolve_state_dtypes(m, "fp32")), 103612416);
}

TEST(EssayHybrids, Qwen3Next_EveryFourthLayerIsFull) {
  ModelSpec m = load("qwen3-next-80b-a3b");
  EXPECT_EQ(m.count(LayerKind::kFullAttention), 12);
  EXPECT_EQ(m.count(LayerKind::kGatedDeltaNet), 36);
  EXPECT_EQ(m.layers[3].kind, LayerKind::kFullAttention);                // (i + 1) % 4 == 0
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 12 * 2 * 2 * 256 * 2);  // 24,576
  EXPECT_EQ(kv_bytes_per_token(m, DType::kFp8), 12288);
  // GDN: conv (2x16x128 + 32x128) x 3 = 24,576; SSM 32 x 128 x 128 = 524,288; x36 in BF16.
  const StateDtypes vllm = resolve_state_dtypes(m, "auto");
  EXPECT_EQ(vllm.ssm, DType::kBf16);                                         // no override in vLLM for Qwen3-Next
  EXPECT_EQ(state_bytes_per_request(m, vllm), 36LL * (24576 + 524288) * 2);  // 39,518,208 = 37.69 MiB
}

TEST(EssayHybrids, Qwen35_4B_StateAndBlockSize) {
  ModelSpec m = load("qwen3.5-4b");
  EXPECT_EQ(m.count(LayerKind::kFullAttention), 8);
  EXPECT_EQ(m.count(LayerKind::kGatedDeltaNet), 24);
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 8 * 2 * 4 * 256 * 2);  // 32,768
  const StateDtypes all_bf16{DType::kBf16, DType::kBf16};
  EXPECT_EQ(state_bytes_per_request(m, all_bf16), 24LL * 548864 * 2);  // 26,345,472 = 25.13 MiB
  const StateDtypes vllm = resolve_state_dtypes(m, "auto");            // config mamba_ssm_dtype: float32
  EXPECT_EQ(vllm.ssm, DType::kFp32);
  EXPECT_EQ(state_bytes_per_request(m, vllm), 24LL * (24576 * 2 + 524288 * 4));  // 51,511,296 = 49.13 MiB
  // Hybrid block size: P = 49,152 + 2,097,152 = 2,146,304 B per layer; p_attn = 2x4x256x2 = 4,096 B;
  // B = 16 x ceil(2,146,304 / (16 x 4,096)) = 16 x 33 = 528.
  EXPECT_EQ(engine_block_size(m, EngineKind::kVllm, 0, DType::kBf16, vllm), 528);
}

TEST(EssayMultimodal, Qwen3VL8B_ImageOf1024Pixels) {
  ModelSpec m = load("qwen3-vl-8b");
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 147456);  // text_config matches Qwen3-8B
  // patch 16 x merge 2 = 32 px per token side: (1024/32)^2 = 1,024 tokens.
  EXPECT_EQ(image_tokens(m, 1024, 1024), 1024);
  // 1,024 x 147,456 = 150,994,944 B = 144 MiB.
  EXPECT_EQ(image_tokens(m, 1024, 1024) * kv_bytes_per_token(m, DType::kBf16), 144 * kMiB);
}

TEST(EssayMultimodal, Qwen3VLImagesFollowSmartResize) {
  // transformers' smart_resize with Qwen3-VL's processor bounds (factor 32, 65,536 .. 16,777,216 pixels),
  // computed by hand:
  ModelSpec m = load("qwen3-vl-8b");
  // 8192 x 8192 = 67 Mpx > max: beta = sqrt(8192^2 / 16,777,216) = 2, each side 4096: (4096 / 32)^2.
  EXPECT_EQ(image_tokens(m, 8192, 8192), 128 * 128);
  // 16 x 16 below min: beta = sqrt(65,536 / 256) = 16, each side ceil(256 / 32) x 32 = 256: 8 x 8.
  EXPECT_EQ(image_tokens(m, 16, 16), 64);
  // 1040 / 32 = 32.5 rounds to even, 32: not 33 x 33.
  EXPECT_EQ(image_tokens(m, 1040, 1040), 32 * 32);
  // 3000 x 2000: 93.75 -> 94, 62.5 -> 62: 94 x 62 = 5,828.
  EXPECT_EQ(image_tokens(m, 3000, 2000), 94 * 62);
}

TEST(EssayHybrids, Rwkv6_OnlyState) {
  ModelSpec m = load("rwkv6-1b6");
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 0);
  // 24 x (2 x 2,048 shift + 32 x 64 x 64 wkv) = 3,244,032 elements.
  EXPECT_EQ(state_bytes_per_request(m, {DType::kBf16, DType::kBf16}), 3244032LL * 2);  // 6.19 MiB
  // HF default: shift BF16, wkv FP32: 24 x (4,096 x 2 + 131,072 x 4) = 12,779,520 B = 12.19 MiB.
  EXPECT_EQ(state_bytes_per_request(m, resolve_state_dtypes(m, "auto")), 12779520);
}

TEST(EssayQwen3_8B, LongRequestOutweighsTheModel) {
  ModelSpec m = load("qwen3-8b");
  const StateDtypes none;
  // 32,768 x 147,456 B = 4.5 GiB; 131,072 tokens = 18 GiB.
  EXPECT_DOUBLE_EQ(request_bytes(m, 32768, DType::kBf16, none, {}) / kGiB, 4.5);
  EXPECT_DOUBLE_EQ(request_bytes(m, 131072, DType::kBf16, none, {}) / kGiB, 18.0);
  // ~8.2 billion parameters (8,190,735,360) = 15.3 GiB in BF16.
  EXPECT_EQ(m.params, 8190735360LL);
  EXPECT_NEAR(weight_bytes(m, DType::kBf16) / kGiB, 15.26, 0.01);
  EXPECT_GT(request_bytes(m, 131072, DType::kBf16, none, {}), weight_bytes(m, DType::kBf16));
}

TEST(EssayCapacity, H100FitsAbout50RequestsOf8K) {
  ModelSpec m = load("qwen3-8b");
  // H100 80GB reports 81,559 MiB = 79.6 GiB; vLLM 0.9 -> ceil(0.9 x total) = 71.68 GiB.
  const int64_t h100 = 81559 * kMiB;
  MemoryRule rule{EngineKind::kVllm, 0.9, 0};
  MemoryBudget mb = kv_memory(h100, weight_bytes(m, DType::kBf16), rule);
  EXPECT_NEAR(mb.engine_share / kGiB, 71.68, 0.01);
  EXPECT_NEAR(mb.kv_available / kGiB, 56.43, 0.01);  // minus 15.26 GiB of weights
  KvCacheLayout layout = build_kv_layout(m, 16, DType::kBf16, {}, {}, mb.kv_available);
  // 56.43 GiB / 1.125 GiB per 8K request (8,192 x 147,456 B) = 50.2 -> 50, not 64.
  EXPECT_EQ((layout.num_blocks - 1) / blocks_per_request(layout, 8192), 50);
  EXPECT_EQ(static_cast<int64_t>(71.68 * kGiB / (8192.0 * 147456)), 63);  // the naive count ignores weights
}

// The validation-only config models/latency/configs/qwen3-32b.json (the vLLM dense validation set).
TEST(ValidationConfigs, Qwen3_32B_HandCount) {
  ModelSpec m = read_model_config("models/latency/configs/qwen3-32b.json");
  // Per layer: q 5,120 x 8,192 + k, v 2 x 5,120 x 1,024 + o 8,192 x 5,120 = 94,371,840;
  // MLP 3 x 5,120 x 25,600 = 393,216,000; norms 2 x 5,120 + q/k norms 2 x 128 = 10,496
  // -> 487,598,336 x 64 layers = 31,206,293,504. Untied embedding and LM head 2 x 151,936 x 5,120 =
  // 1,555,824,640, final norm 5,120: 32,762,123,264 (the model card's "32.8B").
  EXPECT_EQ(m.params, 32762123264LL);
  // 64 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 262,144 B per token in BF16.
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 262144);
}

TEST(ValidationConfigs, Llama31_70B_HandCount) {
  ModelSpec m = read_model_config("models/latency/configs/llama-3.1-70b.json");
  // Per layer: q, o 2 x 8,192 x 8,192 + k, v 2 x 8,192 x 1,024 = 150,994,944; MLP 3 x 8,192 x 28,672 =
  // 704,643,072; norms 2 x 8,192 -> 855,654,400 x 80 layers = 68,452,352,000. Untied embedding and LM
  // head 2 x 128,256 x 8,192 = 2,101,346,304, final norm 8,192: 70,553,706,496 ("70B").
  EXPECT_EQ(m.params, 70553706496LL);
  // 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 327,680 B per token in BF16.
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 327680);
}

TEST(EssayParams, PublishedTotals) {
  // model-sizing.md section 2 (hand counts from config shapes).
  EXPECT_EQ(load("llama-2-7b").params, 6738415616LL);
  EXPECT_EQ(load("falcon-7b").params, 6921720704LL);
  EXPECT_EQ(load("nemotron-h-8b").params, 8100852736LL);
  EXPECT_NEAR(load("deepseek-v3").params / 1e9, 671.03, 0.01);
  EXPECT_NEAR(load("deepseek-v3").active_params / 1e9, 37.55, 0.01);
  EXPECT_NEAR(load("deepseek-v3.2").params / 1e9, 671.88, 0.01);
  EXPECT_NEAR(load("gpt-oss-120b").params / 1e9, 116.83, 0.01);
  EXPECT_NEAR(load("qwen3-30b-a3b").params / 1e9, 30.53, 0.01);
  EXPECT_NEAR(load("qwen3-30b-a3b").active_params / 1e9, 3.35, 0.01);
  EXPECT_NEAR(load("qwen3-next-80b-a3b").params / 1e9, 79.67, 0.01);
  EXPECT_NEAR(load("qwen3.5-4b").params / 1e9, 4.206, 0.001);
  EXPECT_NEAR(load("rwkv6-1b6").params / 1e9, 1.600, 0.001);
  EXPECT_NEAR(load("qwen3-vl-8b").vision_params / 1e9, 0.576, 0.001);
}

}  // namespace
}  // namespace kvsim
