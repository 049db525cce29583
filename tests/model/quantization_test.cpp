// Weights as config.json's quantization_config stores them, each expected byte count worked out by
// hand from the config shapes beside it (values + scales, the unquantised rest in BF16).
#include "sim/model/quantization.h"

#include <gtest/gtest.h>

#include "sim/core/errors.h"
#include "sim/model/config_reader.h"
#include "sim/model/sizing.h"

namespace kvsim {
namespace {

ModelSpec from_text(const std::string& json) {
  return model_from_json(parse_json(json, "test.json"), "test.json", "t");
}

TEST(QuantizedWeights, GptOss120bMxfp4ExpertsOnly) {
  const ModelSpec m = read_model_config("models/gpt-oss-120b.json");
  EXPECT_EQ(m.quant.method, "mxfp4");
  // modules_to_not_convert keeps self_attn, router, embed_tokens and lm_head: only the experts are
  // MXFP4. Per layer, 128 experts of gate_up 5,760 x 2,880 and down 2,880 x 2,880:
  // 128 x (16,588,800 + 8,294,400) = 3,185,049,600; x 36 layers = 114,661,785,600.
  const int64_t quantized = 114661785600;
  EXPECT_EQ(m.quantized_params, quantized);
  // Values: 4 bits each = 57,330,892,800 B. Scales: one byte per 32 values along the input row:
  // gate_up 5,760 x 90 + down 2,880 x 90 = 777,600 per expert, x 128 x 36 = 3,583,180,800 B.
  const int64_t values = quantized / 2, scales = 777600LL * 128 * 36;
  EXPECT_EQ(values, 57330892800);
  EXPECT_EQ(scales, 3583180800);
  // The other 2,167,371,072 parameters (attention, router, embeddings, head, norms, biases) in BF16.
  EXPECT_EQ(m.params - quantized, 2167371072);
  const int64_t expected = values + scales + 2167371072LL * 2;  // 65,248,815,744 B = 60.77 GiB
  EXPECT_EQ(weight_bytes(m, std::nullopt), expected);
  EXPECT_NEAR(expected / 1073741824.0, 60.77, 0.01);  // not 217.6 GiB as BF16
  EXPECT_EQ(served_weight_dtype(m, std::nullopt), DType::kMxfp4);
  // Every quantised weight is a stacked expert: none of attention (or anything else) is.
  EXPECT_EQ(m.quantized_dense_params, 0);
}

// DeepSeek-V3 quantises its dense layers too: MLA projections (61 x 187,105,280), the first three dense
// MLPs (3 x 396,361,728) and the 58 shared experts (58 x 3 x 2,048 x 7,168 = 58 x 44,040,192), as counted
// in DeepSeekV3Fp8BlockScalesCountPartialBlocks below.
TEST(QuantizedWeights, DenseQuantisedParamsLeaveOutTheRoutedExperts) {
  const ModelSpec m = read_model_config("models/deepseek-v3.json");
  EXPECT_EQ(m.quantized_dense_params, 61LL * 187105280 + 3LL * 396361728 + 58LL * 44040192);
  EXPECT_EQ(read_model_config("models/qwen3-8b.json").quantized_dense_params, 0);  // no quantization_config
}

// The generic "fp4" on a checkpoint stored in a 4-bit float format means that format as stored: gpt-oss's
// MXFP4 experts with the BF16 rest (60.77 GiB, above), not every parameter in FP4. "fp4" on a BF16 or an
// FP8 checkpoint, and any named format, still override.
TEST(QuantizedWeights, GenericFp4OnAnFp4CheckpointKeepsTheCheckpoint) {
  const ModelSpec oss = read_model_config("models/gpt-oss-120b.json");
  EXPECT_EQ(weight_override(oss, DType::kFp4), std::nullopt);
  EXPECT_EQ(served_weight_dtype(oss, weight_override(oss, DType::kFp4)), DType::kMxfp4);
  EXPECT_EQ(weight_bytes(oss, weight_override(oss, DType::kFp4)), 65248815744);
  EXPECT_EQ(weight_override(oss, DType::kNvfp4), DType::kNvfp4);
  EXPECT_EQ(weight_override(oss, DType::kBf16), DType::kBf16);
  EXPECT_EQ(weight_override(oss, std::nullopt), std::nullopt);
  EXPECT_EQ(weight_override(read_model_config("models/qwen3-8b.json"), DType::kFp4), DType::kFp4);
  EXPECT_EQ(weight_override(read_model_config("models/deepseek-v3.json"), DType::kFp4), DType::kFp4);
}

// "int4" on an INT4 checkpoint means that checkpoint too: Kimi-K2.5's compressed-tensors group-32 experts
// (4.5 bits), not the generic group-128 4.125; on another checkpoint it still overrides.
TEST(QuantizedWeights, Int4OnAnInt4CheckpointKeepsTheCheckpoint) {
  const ModelSpec kimi = read_model_config("models/latency/configs/kimi-k2.5.json");
  EXPECT_EQ(weight_override(kimi, DType::kInt4), std::nullopt);
  EXPECT_EQ(served_weight_dtype(kimi, weight_override(kimi, DType::kInt4)), DType::kInt4);
  EXPECT_EQ(weight_override(read_model_config("models/qwen3-8b.json"), DType::kInt4), DType::kInt4);
}

TEST(QuantizedWeights, DeepSeekV3Fp8BlockScalesCountPartialBlocks) {
  const ModelSpec m = read_model_config("models/deepseek-v3.json");
  // FP8 with weight_block_size [128, 128]: one FP32 scale per 128 x 128 block, ceil on each side.
  // MLA per layer (h 7,168, 128 heads, q_lora 1,536, kv_lora 512, rope 64, nope 128, v 128):
  //   q_a_proj 1,536 x 7,168: 12 x 56 = 672;  q_b_proj 24,576 x 1,536: 192 x 12 = 2,304;
  //   kv_a_proj_with_mqa 576 x 7,168: ceil(576/128) = 5 x 56 = 280;  kv_b_proj 32,768 x 512: 256 x 4 = 1,024;
  //   o_proj 7,168 x 16,384: 56 x 128 = 7,168.  Sum 11,448 scales, 187,105,280 parameters.
  // Dense MLP (first 3 layers, 18,432): 3 matrices of 144 x 56 = 8,064 blocks: 24,192; 396,361,728 parameters.
  // MoE (58 layers): 256 routed + 1 shared expert of 3 x (2,048 x 7,168): 3 x 16 x 56 = 2,688 blocks each,
  //   257 x 2,688 = 690,816 scales; 257 x 44,040,192 = 11,318,329,344 parameters. The router stays BF16.
  const int64_t quantized = 61LL * 187105280 + 3LL * 396361728 + 58LL * 11318329344;
  EXPECT_EQ(quantized, 669065609216);
  EXPECT_EQ(m.quantized_params, quantized);
  const int64_t scales = 61LL * 11448 + 3LL * 24192 + 58LL * 690816;  // 40,838,232
  EXPECT_EQ(scales, 40838232);
  EXPECT_EQ(weight_bytes(m, std::nullopt), quantized + 4 * scales + (m.params - quantized) * 2);
  // --weight-dtype overrides the config: every parameter in BF16 again.
  EXPECT_EQ(weight_bytes(m, DType::kBf16), m.params * 2);
}

TEST(QuantizedWeights, CompressedTensorsInt4RoutedExpertsOnly) {
  // Kimi-K2.5's layout: compressed-tensors pack-quantized INT4, group 32, BF16 scales, with attention,
  // shared experts, dense MLPs, lm_head and the vision tower ignored. A tiny DeepSeek-V3-shaped text model.
  const ModelSpec m = from_text(R"({
    "model_type": "kimi_k25",
    "text_config": {"model_type": "deepseek_v3", "hidden_size": 256, "num_hidden_layers": 2,
      "num_attention_heads": 4, "q_lora_rank": 128, "kv_lora_rank": 64, "qk_rope_head_dim": 32,
      "qk_nope_head_dim": 64, "v_head_dim": 64, "intermediate_size": 512, "moe_intermediate_size": 64,
      "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1,
      "vocab_size": 1000,
      "quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int",
          "strategy": "group", "group_size": 32, "symmetric": true}}},
        "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*",
                   "re:.*mlp\\.(gate|up|gate_up|down)_proj.*", "re:vision_tower.*"]}}})");
  EXPECT_EQ(m.quant.format(), "int4 group 32");
  // Layer 1 only is MoE: 8 experts x (gate 64 x 256 + up 64 x 256 + down 256 x 64) = 8 x 49,152.
  EXPECT_EQ(m.quantized_params, 393216);
  // Values 393,216 / 2 = 196,608 B. Scales (BF16) per expert: gate 64 x 256/32 = 512, up 512,
  // down 256 x 64/32 = 512: 1,536 x 8 = 12,288 scales = 24,576 B.
  EXPECT_EQ(weight_bytes(m, std::nullopt), 196608 + 24576 + (m.params - 393216) * 2);
}

TEST(QuantizedWeights, ModeloptNvfp4HasBlockAndTensorScales) {
  const ModelSpec m = from_text(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128,
    "vocab_size": 100, "quantization_config": {"quant_method": "modelopt", "quant_algo": "NVFP4",
    "group_size": 16, "exclude_modules": ["lm_head"]}})");
  // Linears: q 64x64, k 32x64, v 32x64, o 64x64, gate 128x64, up 128x64, down 64x128 = 36,864 parameters
  // in 7 tensors. Values 18,432 B; FP8 scales 36,864 / 16 = 2,304 B; FP32 global scales 7 x 4 = 28 B.
  EXPECT_EQ(m.quantized_params, 36864);
  // BF16 rest: embed + lm_head 2 x 100 x 64 = 12,800, norms 64 + 2 x 64 = 192: 12,992 x 2 = 25,984.
  EXPECT_EQ(m.params, 36864 + 12992);
  EXPECT_EQ(weight_bytes(m, std::nullopt), 18432 + 2304 + 28 + 25984);
}

TEST(QuantizedWeights, CompressedTensorsGroupsNamedTargetsBeforeLinear) {
  // group_0: NVFP4 for every Linear; group_1: INT8 per channel for the attention projections, which
  // it names and so takes first (compressed-tensors precedence), whatever the order.
  const ModelSpec m = from_text(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128,
    "vocab_size": 100, "quantization_config": {"quant_method": "compressed-tensors", "ignore": ["lm_head"],
      "config_groups": {
        "group_0": {"targets": ["Linear"], "format": "nvfp4-pack-quantized",
                    "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}},
        "group_1": {"targets": ["re:.*self_attn.*"],
                    "weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": true}}}}})");
  EXPECT_EQ(m.quant.format(), "nvfp4 group 16 + int8 per channel");
  EXPECT_EQ(m.quantized_params, 36864);
  // Attention q 64x64, k 32x64, v 32x64, o 64x64 = 12,288 INT8 values (12,288 B) + one BF16 scale per
  // row: 64 + 32 + 32 + 64 = 192 rows = 384 B.
  // MLP gate 128x64, up 128x64, down 64x128 = 24,576 NVFP4 values (12,288 B), 24,576 / 16 = 1,536 B of
  // FP8 scales, 3 x 4 B of FP32 tensor scales.
  // Rest in BF16: 12,992 x 2 = 25,984 B (as in ModeloptNvfp4HasBlockAndTensorScales).
  EXPECT_EQ(weight_bytes(m, std::nullopt), 12288 + 384 + 12288 + 1536 + 12 + 25984);
}

TEST(QuantizedWeights, NoQuantizationConfigIsBf16AsBefore) {
  const ModelSpec m = read_model_config("models/qwen3-8b.json");
  EXPECT_FALSE(m.quant.quantized());
  EXPECT_EQ(m.quantized_params, 0);
  EXPECT_EQ(weight_bytes(m, std::nullopt), 8190735360LL * 2);  // model-sizing.md: 8,190,735,360 parameters
  EXPECT_EQ(served_weight_dtype(m, std::nullopt), DType::kBf16);
}

TEST(QuantizedWeights, ForcedScaledDtypesCountTheirScales) {
  const ModelSpec m = read_model_config("models/qwen3-8b.json");
  const int64_t n = 8190735360;                                   // divisible by 128
  EXPECT_EQ(weight_bytes(m, DType::kMxfp4), n / 2 + n / 32);      // 4.25 bits
  EXPECT_EQ(weight_bytes(m, DType::kNvfp4), n / 2 + n / 16);      // 4.5 bits
  EXPECT_EQ(weight_bytes(m, DType::kInt4), n / 2 + n / 128 * 2);  // 4.125 bits
  EXPECT_EQ(weight_bytes(m, DType::kFp4), n / 2);                 // bare 4 bits, as before
  EXPECT_EQ(parse_weight_dtype("mxfp4", "x"), DType::kMxfp4);
  EXPECT_EQ(parse_dtype("mxfp4", "x"), DType::kFp4);  // as a cache dtype it stays plain fp4
  EXPECT_FALSE(resolve_weight_dtype("auto", "x").has_value());
  EXPECT_THROW(parse_weight_dtype("int3", "--weight-dtype"), InputError);
}

TEST(QuantizedWeights, UnknownMethodNeedsAnExplicitDtype) {
  const ModelSpec m = from_text(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1,
    "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100,
    "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true}})");
  try {
    weight_bytes(m, std::nullopt);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bitsandbytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--weight-dtype"), std::string::npos) << e.what();
  }
  EXPECT_EQ(weight_bytes(m, DType::kBf16), m.params * 2);
}

TEST(QuantizedWeights, BadQuantizationConfigNamesTheKey) {
  try {
    from_text(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
      "intermediate_size": 128, "vocab_size": 100,
      "quantization_config": {"quant_method": "fp8", "weight_block_size": [128]}})");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("quantization_config.weight_block_size"), std::string::npos) << e.what();
  }
}

TEST(ModulePatterns, GlobsMatchWholeComponentsAndRegexesSearch) {
  EXPECT_TRUE(module_matches("model.layers.*.self_attn", "model.layers.3.self_attn.q_proj"));
  EXPECT_FALSE(module_matches("model.layers.*.self_attn", "model.layers.3.mlp.experts.gate_up_proj"));
  EXPECT_TRUE(module_matches("lm_head", "lm_head"));
  EXPECT_TRUE(module_matches("gate", "model.layers.0.mlp.gate"));
  EXPECT_FALSE(module_matches("gate", "model.layers.0.mlp.gate_proj"));  // a component, not a substring
  EXPECT_TRUE(module_matches("re:.*shared_experts.*", "model.layers.1.mlp.shared_experts.up_proj"));
  EXPECT_FALSE(module_matches("re:.*mlp\\.(gate|up|down)_proj.*", "model.layers.1.mlp.experts.up_proj"));
}

// A backtracking engine never returned from "(.*)*x" on a long name that lacks the x; RE2 answers at once,
// and a pattern it cannot take (a lookahead) is refused by name instead of misread.
// An empty name in a keep list matched nothing under std::regex; under RE2 it dereferenced no pattern.
TEST(ModulePatterns, AnEmptyModuleNameIsRefusedByKey) {
  try {
    read_quantization(parse_json(R"({"quant_method": "fp8", "ignore": [""]})", "q.json"),
                      "m.json: quantization_config");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("m.json: quantization_config.ignore: an empty module name"), std::string::npos)
        << e.what();
  }
}

TEST(ModulePatterns, NestedQuantifiersDoNotHangAndLookaroundIsRefused) {
  const std::string name = "model.layers.17.mlp.shared_mlp.123.gate_up_proj.weight_scale_inv.and_some_more_words";
  EXPECT_FALSE(module_matches("re:(.*)*x", name));
  EXPECT_FALSE(module_matches("re:((((.*)*)*)*)*zz", name));
  EXPECT_TRUE(module_matches("re:(.*)*gate_up", name));
  try {
    module_matches("re:layers\\.(?!0\\.)", name);
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad module pattern 're:layers\\.(?!0\\.)'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("RE2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvsim
