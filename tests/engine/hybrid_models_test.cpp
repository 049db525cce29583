// Hybrid engines built from real configs: block size, groups and blocks held per request follow
// vLLM's rules; invariants and determinism hold under preemption; a state-only model (RWKV-6) runs.
#include <gtest/gtest.h>

#include "sim/model/config_reader.h"
#include "sim/model/sizing.h"
#include "tests/engine/hybrid_test_util.h"

namespace kvsim {
namespace {
using testing::HybridOutcome;
using testing::make_request;
using testing::simulate_hybrid;
using testing::text;

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

EngineConfig engine_for(const std::string& path, int64_t num_blocks, KvCacheLayout* layout_out = nullptr) {
  const ModelSpec m = read_model_config(path);
  const StateDtypes dt = resolve_state_dtypes(m, "auto");
  const int b = engine_block_size(m, EngineKind::kVllm, 0, DType::kBf16, dt, 1);
  KvCacheLayout l = build_kv_layout(m, b, DType::kBf16, dt, Parallel{1, 1}, 0);
  l.num_blocks = num_blocks;
  if (layout_out) *layout_out = l;
  EngineConfig c = testing::config_for(l);
  c.max_num_batched_tokens = 8192;
  c.mamba_cache_mode = MambaCacheMode::kAlign;
  c.prefix_cache_retention_interval = kRetentionDense;
  return c;
}

struct HybridModelCase {
  const char* path;
  int64_t state_bytes_per_layer;  // P_state, unpadded
  int64_t attn_bytes_per_token;   // p_attn, one layer
  int state_groups;
  int group_size;
};

TEST(HybridModels, BlockSizeGroupsAndBlocksHeldPerRequestFollowTheRule) {
  // B = 16 * ceil(P / (16 * p)) (a = 16); groups: group_size = min(#attention, #state) layers.
  const HybridModelCase cases[] = {
      // Qwen3.5-4B: GDN conv 3 x (128*16*2 + 128*32) bf16, ssm 32 x 128 x 128 fp32; attention 2 x 4 x 256 x 2.
      // P = 49,152 + 2,097,152 = 2,146,304; p = 4,096; P / (16 p) = 32.75 -> B = 528. 8 + 24 layers.
      {"models/qwen3.5-4b.json", 3 * 8192 * 2 + 32 * 128 * 128 * 4, 2 * 4 * 256 * 2, 3, 8},
      // Qwen3-Next: same GDN, ssm in bf16; attention 2 x 2 x 256 x 2. P = 49,152 + 1,048,576 = 1,097,728;
      // p = 2,048; P / (16 p) = 33.5 -> B = 544. 12 + 36 layers.
      {"models/qwen3-next-80b-a3b.json", 3 * 8192 * 2 + 32 * 128 * 128 * 2, 2 * 2 * 256 * 2, 3, 12},
      // Nemotron-H-8B: Mamba2 conv 3 x (128*64 + 2*8*128) bf16, ssm 128 x 64 x 128 fp32; attention
      // 2 x 8 x 128 x 2. P = 61,440 + 4,194,304 = 4,255,744; p = 4,096; P / (16 p) = 64.94 -> B = 1040.
      // 4 + 24 layers.
      {"models/nemotron-h-8b.json", 3 * 10240 * 2 + 128 * 64 * 128 * 4, 2 * 8 * 128 * 2, 6, 4},
  };
  for (const HybridModelCase& mc : cases) {
    SCOPED_TRACE(mc.path);
    const int64_t b = 16 * cdiv(mc.state_bytes_per_layer, 16 * mc.attn_bytes_per_token);
    KvCacheLayout l;
    const EngineConfig c = engine_for(mc.path, 4000, &l);
    ASSERT_EQ(l.block_size, b);
    ASSERT_EQ(std::ssize(l.groups), 1 + mc.state_groups);
    EXPECT_EQ(l.groups[0].kind, KvGroupKind::kFullAttention);
    EXPECT_EQ(l.group_size, mc.group_size);
    for (int g = 1; g <= mc.state_groups; ++g) {
      EXPECT_EQ(l.groups[static_cast<size_t>(g)].kind, KvGroupKind::kState);
      // The state page is padded to one attention page: B x p.
      EXPECT_EQ(l.groups[static_cast<size_t>(g)].page_bytes_per_layer, b * mc.attn_bytes_per_token);
    }
    // L = 3B + 100, budget 8192 >= L: chunk 1 is cut at floor(L / B) * B = 3B, then 100 tokens.
    const int64_t len = 3 * b + 100;
    HybridOutcome r;
    simulate_hybrid(c, {make_request(1, 0, {text(9, len)}, 3)}, r, 0, true);
    EXPECT_EQ(r.prefill_chunks, (std::vector<int64_t>{3 * b, 100}));
    ASSERT_GE(r.held.size(), 3u);
    std::vector<int64_t> one(static_cast<size_t>(mc.state_groups), 1), two(one.size(), 2);
    auto expect = [&](size_t step, int64_t attn, const std::vector<int64_t>& state) {
      std::vector<int64_t> v{attn};
      v.insert(v.end(), state.begin(), state.end());
      EXPECT_EQ(r.held[step].at(1), v) << "after step " << step;
    };
    expect(0, 3, one);                 // prefill, first chunk: one running state per group
    expect(1, cdiv(len, b), two);      // crossed into column 3: old + new state block
    expect(2, cdiv(len + 1, b), one);  // decode: column 2 freed
    // Per-request state memory in decode: one padded page per state layer (state groups x group_size).
    const int64_t state_layers = mc.state_groups * mc.group_size;
    EXPECT_EQ(r.state_copy_bytes[1], state_layers * b * mc.attn_bytes_per_token);
  }
}

std::vector<RequestSpec> mixed_shared_prefixes(int n) {
  // Prefixes of groups 0..4 of 1600 + 137 * g tokens, unique suffixes of 300 + 91 * (i % 7) tokens,
  // outputs 1..300 tokens, arrivals every 3 ms.
  std::vector<RequestSpec> v;
  for (int i = 0; i < n; ++i) {
    const int g = i % 5;
    v.push_back(make_request(i + 1, 3 * i, {text(50 + g, 1600 + 137 * g), text(500 + i, 300 + 91 * (i % 7))},
                             1 + (i * 37) % 300));
  }
  return v;
}

TEST(HybridRun, InvariantsHoldUnderPreemptionAndRunsAreDeterministic) {
  // 59 usable blocks: requests of up to 5 attention + 3 x 2 state blocks, 8 in flight, preempt;
  // 119: no preemption, and saved states survive long enough to be hit.
  for (const auto& [later, num_blocks] :
       {std::pair{false, 60}, std::pair{true, 60}, std::pair{false, 120}, std::pair{true, 120}}) {
    SCOPED_TRACE(std::string(later ? "retention 0 + junction" : "dense") + ", blocks " + std::to_string(num_blocks));
    EngineConfig c = testing::issue45238_config(later, num_blocks);  // 47 usable blocks: preemption
    HybridOutcome a, b;
    simulate_hybrid(c, mixed_shared_prefixes(60), a, 8, true);
    simulate_hybrid(c, mixed_shared_prefixes(60), b, 8, true);
    EXPECT_EQ(a.result.unfinished, 0);
    EXPECT_EQ(a.sink.requests.size(), 60u);
    if (num_blocks == 60) {
      EXPECT_GT(a.result.preemptions, 0);
    }
    int64_t cached = 0;
    for (const auto& [id, rec] : a.sink.requests) cached += rec.cached_tokens;
    if (num_blocks == 120) {
      EXPECT_GT(cached, 0);
    }
    for (const auto& [id, rec] : a.sink.requests) {
      EXPECT_TRUE(rec.finished) << id;
      EXPECT_EQ(rec.output_tokens, rec.requested_output_tokens) << id;
      EXPECT_EQ(a.sink.tokens[id], rec.requested_output_tokens) << id;
    }
    EXPECT_EQ(a.fingerprint, b.fingerprint);
    EXPECT_EQ(a.prefill_chunks, b.prefill_chunks);
  }
}

TEST(HybridRun, StateOnlyRwkvHitsOnlyAtSavedStates) {
  // RWKV-6: one state group, block 16. A 1000-token prompt is cut at 1000 - 1000 % 16 = 992, then 8;
  // retention 0 keeps the replay boundary floor(999 / 16) * 16 = 992. The same prompt again reuses
  // 992 tokens; one sharing only its first 500 tokens finds no state at or below 496 and reuses 0.
  KvCacheLayout l;
  EngineConfig c = engine_for("models/rwkv6-1b6.json", 200, &l);
  ASSERT_EQ(l.groups.size(), 1u);
  ASSERT_EQ(l.groups[0].kind, KvGroupKind::kState);
  ASSERT_EQ(l.block_size, 16);
  c.prefix_cache_retention_interval = 0;
  HybridOutcome r;
  simulate_hybrid(c,
                  {make_request(1, 0, {text(7, 1000)}, 2), make_request(2, 1000, {text(7, 1000)}, 2),
                   make_request(3, 2000, {text(7, 500), text(8, 500)}, 2)},
                  r, 0, true);
  EXPECT_EQ(r.sink.requests[1].saved_state_positions, (std::vector<int64_t>{992}));
  EXPECT_EQ(r.sink.requests[2].cached_tokens, 992);
  EXPECT_EQ(r.sink.requests[3].cached_tokens, 0);
  EXPECT_EQ(r.sink.requests[3].cause, MissCause::kNoSavedState);
  EXPECT_EQ(r.sink.requests[3].lost_tokens, 496);  // the seen prefix, block-floored: floor(500 / 16) * 16
  EXPECT_EQ(r.result.unfinished, 0);
}

}  // namespace
}  // namespace kvsim
