// Tensor- and decode-context-parallel splits, block padding, sliding-window paging, KV cache
// groups and the engines' memory rules; every expected number is worked out beside it.
#include <gtest/gtest.h>

#include "sim/core/errors.h"
#include "sim/model/config_reader.h"
#include "sim/model/sizing.h"

namespace kvsim {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kGiB = 1024 * kMiB;
ModelSpec load(const std::string& name) { return read_model_config("models/" + name + ".json"); }

TEST(TensorParallel, KvHeadsSplitWhileThereAreEnough) {
  ModelSpec m = load("qwen3-8b");                                 // 8 KV heads
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16, 2), 147456 / 2);  // 4 heads per rank
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16, 8), 147456 / 8);  // 1 head per rank
  // TP 16 > 8 KV heads: each head is replicated on 2 ranks, per-rank cache stays at one head.
  ModelSpec big = m;
  big.num_attention_heads = 64;
  EXPECT_EQ(kv_bytes_per_token(big, DType::kBf16, 16), 2 * 36 * 1 * 128 * 2);
}

TEST(TensorParallel, MlaRowIsReplicatedOnEveryGpu) {
  ModelSpec m = load("deepseek-v3");
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16, 8), 70272);  // same as TP 1
}

TEST(TensorParallel, StateIsSplitByHeads) {
  ModelSpec m = load("qwen3-next-80b-a3b");
  const StateDtypes bf16{DType::kBf16, DType::kBf16};
  // GDN per layer at TP 2: conv 8,192/2 x 3 = 12,288; SSM 32/2 x 128 x 128 = 262,144 elements.
  EXPECT_EQ(state_bytes_per_request(m, bf16, 2), 36LL * (12288 + 262144) * 2);
}

TEST(TensorParallel, IndivisibleTpIsRejected) {
  ModelSpec m = load("qwen3-8b");
  EXPECT_THROW(check_parallel(m, {3, 1}), InputError);
  EXPECT_NO_THROW(check_parallel(m, {4, 1}));
  EXPECT_THROW(check_parallel(m, {4, 3}), InputError);  // dcp must divide tp
}

TEST(DecodeContextParallel, ShardsGrowingCacheAcrossTokens) {
  ModelSpec m = load("deepseek-v3");
  const StateDtypes none;
  // TP 8 replicates the MLA row 8x; DCP 8 shards tokens: 131,072 / 8 = 16,384 tokens per rank.
  EXPECT_EQ(request_bytes(m, 131072, DType::kBf16, none, {8, 1}), 131072LL * 70272);
  EXPECT_EQ(request_bytes(m, 131072, DType::kBf16, none, {8, 8}), 16384LL * 70272);
}

TEST(BlockPadding, LastBlockIsPartlyEmpty) {
  ModelSpec m = load("qwen3-8b");
  KvCacheLayout l = build_kv_layout(m, 16, DType::kBf16, {}, {}, 0);
  // 100 tokens need ceil(100/16) = 7 blocks = 112 token slots x 147,456 B.
  EXPECT_EQ(blocks_per_request(l, 100), 7);
  EXPECT_EQ(request_bytes_padded(l, 100), 112LL * 147456);
  EXPECT_EQ(request_bytes_padded(l, 96), 96LL * 147456);  // a whole number of blocks: no padding
}

TEST(BlockPadding, SlidingWindowHoldsWindowPlusOneBlock) {
  ModelSpec m = load("gpt-oss-120b");
  KvCacheLayout l = build_kv_layout(m, 16, DType::kBf16, {}, {}, 0);
  ASSERT_EQ(l.groups.size(), 2u);  // 18 full + 18 sliding: group_size 18, one group each
  EXPECT_EQ(l.group_size, 18);
  // Long request: full group ceil(131,072/16) = 8,192 blocks; sliding group ceil(127/16) + 1 = 9
  // blocks (144 slots, 5.06 MiB over 18 layers instead of the ideal 4.5 MiB).
  EXPECT_EQ(blocks_per_request(l, 131072), 8192 + 9);
  const int64_t sliding_bytes = 9LL * 16 * 2048 * 18;
  EXPECT_EQ(request_bytes_padded(l, 131072) - 131072LL * 36864, sliding_bytes);
  EXPECT_NEAR(sliding_bytes / double(kMiB), 5.06, 0.01);
}

TEST(KvCacheGroups, HybridsFollowVllmGrouping) {
  // vllm-semantics.md 1.5: group_size = min layers per bucket (max if within 1.5x).
  struct Case {
    const char* model;
    int attention_groups, state_groups, group_size, block;
  };
  for (const Case& c :
       {Case{"qwen3.5-4b", 1, 3, 8, 528}, Case{"qwen3-next-80b-a3b", 1, 3, 12, 0}, Case{"nemotron-h-8b", 1, 6, 4, 0}}) {
    ModelSpec m = load(c.model);
    const StateDtypes dt = resolve_state_dtypes(m, "auto");
    const int B = engine_block_size(m, EngineKind::kVllm, 0, DType::kBf16, dt);
    if (c.block) {
      EXPECT_EQ(B, c.block) << c.model;
    }
    KvCacheLayout l = build_kv_layout(m, B, DType::kBf16, dt, {}, 0);
    int attn = 0, state = 0;
    for (const auto& g : l.groups) {
      attn += g.kind == KvGroupKind::kFullAttention;
      state += g.kind == KvGroupKind::kState;
      EXPECT_EQ(g.num_layers, c.group_size) << c.model;
    }
    EXPECT_EQ(attn, c.attention_groups) << c.model;
    EXPECT_EQ(state, c.state_groups) << c.model;
    EXPECT_EQ(l.group_size, c.group_size) << c.model;
  }
}

TEST(HybridBlockSize, NemotronAndQwen3NextFollowTheRule) {
  // Nemotron-H, SSM FP32: P = 30,720 x 2 + 1,048,576 x 4 = 4,255,744 B; p_attn = 2x8x128x2 = 4,096;
  // B = 16 x ceil(4,255,744 / 65,536) = 16 x 65 = 1,040.
  ModelSpec n = load("nemotron-h-8b");
  EXPECT_EQ(engine_block_size(n, EngineKind::kVllm, 0, DType::kBf16, resolve_state_dtypes(n, "auto")), 1040);
  // Qwen3-Next, BF16 state: P = (24,576 + 524,288) x 2 = 1,097,728; p_attn = 2x2x256x2 = 2,048;
  // B = 16 x ceil(1,097,728 / 32,768) = 16 x 34 = 544.
  ModelSpec q = load("qwen3-next-80b-a3b");
  EXPECT_EQ(engine_block_size(q, EngineKind::kVllm, 0, DType::kBf16, resolve_state_dtypes(q, "auto")), 544);
  // The state page is padded up to one attention page: 544 x 2,048 = 1,114,112 B per layer.
  KvCacheLayout l = build_kv_layout(q, 544, DType::kBf16, resolve_state_dtypes(q, "auto"), {}, 0);
  EXPECT_EQ(l.groups.back().page_bytes_per_layer, 544 * 2048);
}

TEST(MemoryRules, EachEngineCountsDifferently) {
  const int64_t total = 80 * kGiB, weights = 16 * kGiB, reserve = 4 * kGiB;
  // vLLM: ceil(0.92 x 80) = 73.6 GiB, minus weights and reserve = 53.6 GiB.
  MemoryBudget v = kv_memory(total, weights, {EngineKind::kVllm, 0.92, reserve});
  EXPECT_NEAR(v.kv_available / double(kGiB), 53.6, 1e-6);
  // SGLang: mem_fraction_static 0.88 covers weights + KV: 70.4 - 16 = 54.4 GiB (reserve outside).
  MemoryBudget s = kv_memory(total, weights, {EngineKind::kSglang, 0.88, 0});
  EXPECT_NEAR(s.kv_available / double(kGiB), 54.4, 1e-6);
  // TensorRT-LLM: 0.9 of what is free after weights and buffers: 0.9 x (80 - 16 - 4) = 54 GiB.
  MemoryBudget t = kv_memory(total, weights, {EngineKind::kTrtllm, 0.9, reserve});
  EXPECT_NEAR(t.kv_available / double(kGiB), 54.0, 1e-6);
  EXPECT_DOUBLE_EQ(default_memory_fraction(EngineKind::kVllm, 1), 0.92);
}

TEST(CrossLayerSharing, ClaAndYoco) {
  ModelSpec m = load("qwen3-8b");
  apply_cla(m, 2);  // 36 layers in pairs: 18 caches
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 147456 / 2);
  ModelSpec t = load("qwen3-8b");
  apply_cla(t, 3);  // 12 caches
  EXPECT_EQ(kv_bytes_per_token(t, DType::kBf16), 147456 / 3);
  ModelSpec y = load("qwen3-8b");
  apply_yoco(y, 1024);
  // 18 self-decoder layers keep 1,024-token windows (18 x 4,096 x 1,024 B); one shared cache grows.
  EXPECT_EQ(kv_bytes_per_token(y, DType::kBf16), 4096);
  EXPECT_EQ(window_bytes_max(y, DType::kBf16), 18LL * 4096 * 1024);
}

TEST(ConfigTraps, NonStrictJsonAndNestedTextConfig) {
  JsonValue doc = parse_json(R"({"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
      "num_hidden_layers": 2, "vocab_size": 100, "intermediate_size": 512, "time_step_limit": [0.0, Infinity],
      "x": NaN, "y": -Infinity})",
                             "inline");
  ModelSpec m = model_from_json(doc, "inline", "tiny");
  EXPECT_EQ(kv_bytes_per_token(m, DType::kBf16), 2 * 2 * 4 * 64 * 2);  // MHA, head_dim 256/4 = 64
  ModelSpec vl = load("qwen3-vl-8b");
  EXPECT_EQ(vl.hidden_size, 4096);  // from text_config, not vision_config's 1152
  EXPECT_EQ(vl.model_type, "qwen3_vl_text");
}

}  // namespace
}  // namespace kvsim
