// Gemma-4's global layers (own KV heads and width, keys shared with values), top_k_experts, fixed
// image soft tokens, and Kimi-K2.5's MoonViT (merge_kernel_size, vt_* parameters), counted by hand.
#include <gtest/gtest.h>

#include "sim/model/config_reader.h"
#include "sim/model/sizing.h"

namespace kvsim {
namespace {

ModelSpec from_text(const std::string& json) {
  return model_from_json(parse_json(json, "test.json"), "test.json", "t");
}

// Five sliding layers then one global, Gemma-4 style (a made-up small shape, not a released model).
std::string gemma4(bool k_eq_v) {
  return std::string(R"({"model_type": "gemma4", "vision_soft_tokens_per_image": 280,
    "vision_config": {"model_type": "gemma4_vision", "patch_size": 16, "hidden_size": 64,
                      "num_hidden_layers": 1, "intermediate_size": 128},
    "text_config": {"model_type": "gemma4_text", "hidden_size": 512, "num_hidden_layers": 6,
      "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256,
      "num_global_key_value_heads": 2, "global_head_dim": 512, "attention_k_eq_v": )") +
         (k_eq_v ? "true" : "false") + R"(,
      "sliding_window": 1024, "intermediate_size": 1024, "vocab_size": 1000,
      "num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 128,
      "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                      "sliding_attention", "full_attention"]}})";
}

TEST(Gemma4, GlobalLayersUseTheirOwnHeadsAndSharedKeys) {
  const ModelSpec m = from_text(gemma4(true));
  EXPECT_EQ(m.experts_per_token, 2);  // top_k_experts
  EXPECT_EQ(m.count(LayerKind::kSlidingWindow), 5);
  EXPECT_EQ(m.layers[5].attn.num_kv_heads, 2);
  EXPECT_EQ(m.layers[5].attn.head_dim, 512);
  EXPECT_EQ(m.layers[0].attn.num_kv_heads, 8);
  // Global layer, keys = values: one row of 2 heads x 512 x 2 B = 2,048 B per token (not 4,096).
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 1 * 2 * 512 * 2);
  // Sliding layers: 2 x 8 x 256 x 2 = 8,192 B each, 5 layers = 40,960 B/token, 1,024 tokens at most.
  EXPECT_EQ(window_bytes_per_token(m, DType::kBf16), 5 * 8192);
  EXPECT_EQ(window_bytes_max(m, DType::kBf16), 5LL * 8192 * 1024);
  // A request of 4,096 tokens: 2,048 x 4,096 + 40,960 x 1,024.
  EXPECT_EQ(request_bytes(m, 4096, DType::kBf16, {}, {}), 2048LL * 4096 + 40960LL * 1024);
}

TEST(Gemma4, WithoutKEqVGlobalLayersStoreKeysAndValues) {
  const ModelSpec shared = from_text(gemma4(true));
  const ModelSpec both = from_text(gemma4(false));
  EXPECT_EQ(kv_bytes_per_token(both, DType::kBf16), 2 * 2 * 512 * 2);  // 4,096
  // k_eq_v drops the global layer's v_proj: 2 heads x 512 x 512 hidden = 524,288 parameters.
  EXPECT_EQ(both.params - shared.params, 2 * 512 * 512);
}

TEST(Gemma4, ImagesAreAFixedNumberOfSoftTokens) {
  const ModelSpec m = from_text(gemma4(true));
  EXPECT_EQ(image_tokens(m, 1024, 1024), 280);
  EXPECT_EQ(image_tokens(m, 4000, 300), 280);
}

// Kimi-K2.5-style vision tower: MoonViT with patch 14 and merge_kernel_size [2, 2].
const char* kKimiVision = R"({"model_type": "kimi_k25",
  "vision_config": {"patch_size": 14, "merge_kernel_size": [2, 2], "vt_hidden_size": 32,
    "vt_num_hidden_layers": 1, "vt_intermediate_size": 64, "init_pos_emb_height": 4, "init_pos_emb_width": 4,
    "text_hidden_size": 256},
  "text_config": {"model_type": "deepseek_v3", "hidden_size": 256, "num_hidden_layers": 1,
    "num_attention_heads": 4, "kv_lora_rank": 64, "qk_rope_head_dim": 32, "intermediate_size": 512,
    "vocab_size": 1000}})";

TEST(KimiVision, MergeKernelFoldsTwoByTwoPatches) {
  const ModelSpec m = from_text(kKimiVision);
  EXPECT_EQ(m.vision_spatial_merge, 2);
  // 1,024 px / (14 x 2) = 36.6 -> 37 merged tokens per side: 37 x 37 = 1,369 (not 73 x 73 = 5,329).
  EXPECT_EQ(image_tokens(m, 1024, 1024), 37 * 37);
}

TEST(KimiVision, VtKeysAreCounted) {
  const ModelSpec m = from_text(kKimiVision);
  // w 32, I 64, patch 14, 4 x 4 positions, merge 2 x 2 (merged width 128), text hidden 256:
  //   patch embed 3 x 14 x 14 x 32 + 32 = 18,848; positions 16 x 32 = 512;
  //   one block: 2 LayerNorms 128 + qkv 3,072 + 96 + out 1,024 + 32 + MLP 4,096 + 64 + 32 = 8,544;
  //   final LayerNorm 64; projector: LayerNorm 64 + 128 x 128 + 128 + 128 x 256 + 256 = 49,600.
  EXPECT_EQ(m.vision_params, 18848 + 512 + 8544 + 64 + 49600);
}

}  // namespace
}  // namespace kvsim
