// KvTransferModel: bytes and flows of a disaggregated pull, with the arithmetic in each test
// (cluster-offload.md A.3 TP mapping table; vllm-semantics.md 6.3).
#include "sim/cluster/kv_transfer.h"

#include <gtest/gtest.h>

#include "sim/core/errors.h"
#include "sim/model/config_reader.h"

namespace kvsim {
namespace {

ModelSpec load(const std::string& name) { return read_model_config("models/" + name + ".json"); }

TransferSides sides(int p, int d, int block = 16) {
  TransferSides s;
  s.prefill_tp = p;
  s.decode_tp = d;
  s.prefill_block_size = block;
  s.decode_block_size = block;
  return s;
}

int64_t sum(const std::vector<RankFlow>& flows) {
  int64_t n = 0;
  for (const RankFlow& f : flows) n += f.bytes;
  return n;
}

// Qwen3-8B: 36 layers x 8 KV heads x 128 x (K, V) x 2 B = 147,456 B (144 KiB) per token.
constexpr int64_t kQwen3PerToken = 36 * 8 * 128 * 2 * 2;

TEST(KvTransfer, GqaSameTpMovesTheCacheOnceOneFlowPerRank) {
  const KvTransferModel m(load("qwen3-8b"), StateDtypes{}, sides(8, 8));
  const auto flows = m.plan(128, 0);
  ASSERT_EQ(flows.size(), 8u);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(flows[static_cast<size_t>(r)].dst_rank, r);
    EXPECT_EQ(flows[static_cast<size_t>(r)].src_rank, r);  // r * 8 / 8
    EXPECT_EQ(flows[static_cast<size_t>(r)].bytes, kQwen3PerToken * 128 / 8);
    // One descriptor per layer, K / V and block: 36 x 2 x 8 blocks.
    EXPECT_EQ(flows[static_cast<size_t>(r)].descriptors, 36 * 2 * 8);
  }
  EXPECT_EQ(sum(flows), 18'874'368);  // 144 KiB x 128: Mooncake's "20 MB" for a 128-token prompt
}

TEST(KvTransfer, GqaTp2ToTp4RegroupsHeadsAndMovesTheCacheOnce) {
  const KvTransferModel m(load("qwen3-8b"), StateDtypes{}, sides(2, 4));
  const auto flows = m.plan(160, 0);  // 10 blocks
  ASSERT_EQ(flows.size(), 4u);
  // Decode rank r holds 2 of the 8 heads and reads them from prefill rank r * 2 / 4.
  const int src[4] = {0, 0, 1, 1};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(flows[static_cast<size_t>(r)].src_rank, src[r]);
    EXPECT_EQ(flows[static_cast<size_t>(r)].bytes, 36 * 2 * 128 * 2 * 2 * 160);
  }
  EXPECT_EQ(sum(flows), kQwen3PerToken * 160);
}

TEST(KvTransfer, GqaTp4ToTp2ReadsEachHeadFromOnePrefillRank) {
  const KvTransferModel m(load("qwen3-8b"), StateDtypes{}, sides(4, 2));
  const auto flows = m.plan(160, 0);
  // Decode rank r holds heads [4r, 4r + 4); prefill ranks 2r and 2r + 1 hold two each.
  ASSERT_EQ(flows.size(), 4u);
  EXPECT_EQ(flows[0].dst_rank, 0);
  EXPECT_EQ(flows[0].src_rank, 0);
  EXPECT_EQ(flows[1].src_rank, 1);
  EXPECT_EQ(flows[2].dst_rank, 1);
  EXPECT_EQ(flows[2].src_rank, 2);
  EXPECT_EQ(flows[3].src_rank, 3);
  for (const RankFlow& f : flows) EXPECT_EQ(f.bytes, kQwen3PerToken * 160 / 4);
  EXPECT_EQ(sum(flows), kQwen3PerToken * 160);
}

TEST(KvTransfer, GqaDecodeTpBeyondKvHeadsReadsEveryReplica) {
  // 8 heads on 16 decode ranks: every head held twice, each replica read (the table's TP8 -> TP16 case).
  const KvTransferModel m(load("qwen3-8b"), StateDtypes{}, sides(8, 16));
  const auto flows = m.plan(160, 0);
  ASSERT_EQ(flows.size(), 16u);
  for (int r = 0; r < 16; ++r) EXPECT_EQ(flows[static_cast<size_t>(r)].src_rank, r / 2);
  EXPECT_EQ(sum(flows), 2 * kQwen3PerToken * 160);
}

TEST(KvTransfer, MlaTp8ToTp8MovesEightTimesOneCopy) {
  // DeepSeek-V3: 61 layers x (512 + 64) x 2 B = 70,272 B per token, replicated on every rank.
  const KvTransferModel m(load("deepseek-v3"), StateDtypes{}, sides(8, 8));
  const auto flows = m.plan(1024, 0);
  ASSERT_EQ(flows.size(), 8u);
  for (const RankFlow& f : flows) {
    EXPECT_EQ(f.bytes, 70'272 * 1024);
    EXPECT_EQ(f.descriptors, 61 * 64);  // one per layer and block, 64 blocks
  }
  EXPECT_EQ(sum(flows), 8 * 70'272 * 1024);
}

TEST(KvTransfer, OnlyTheBlocksTheDecodeCacheLacksAreRead) {
  const KvTransferModel m(load("qwen3-8b"), StateDtypes{}, sides(1, 1));
  EXPECT_EQ(m.total_bytes(128, 0), kQwen3PerToken * 128);
  EXPECT_EQ(m.total_bytes(128, 64), kQwen3PerToken * 64);
  // A prompt of 100 tokens reads whole blocks: 7 blocks of 16 = 112 tokens.
  EXPECT_EQ(m.total_bytes(100, 0), kQwen3PerToken * 112);
  EXPECT_EQ(m.total_bytes(100, 96), kQwen3PerToken * 16);
  EXPECT_TRUE(m.plan(128, 128).empty());  // a full local hit: P is only told to free
}

TEST(KvTransfer, SlidingWindowLayersSendOnlyTheirWindow) {
  // gpt-oss-120b: 18 full and 18 sliding layers (window 128), 8 KV heads x 64, BF16: 2,048 B per token
  // and layer. Prompt 1000, block 16: full layers read 63 blocks (1,008 tokens); sliding layers the
  // blocks from floor((1000 - 128) / 16) = 54 to 63, 9 blocks (144 tokens).
  const KvTransferModel m(load("gpt-oss-120b"), StateDtypes{}, sides(1, 1));
  const int64_t per_layer = 8 * 64 * 2 * 2;
  EXPECT_EQ(m.total_bytes(1000, 0), 18 * per_layer * 1008 + 18 * per_layer * 144);
}

TEST(KvTransfer, HybridStateGoesWithTheCacheAtNMinusOneTokens) {
  // Nemotron-H-8B: 4 attention layers (8 KV heads x 128) and 24 Mamba2 layers. Per Mamba2 layer at TP1:
  // conv (8192 + 2 x 8 x 128) x 3 rows x 2 B (BF16) = 61,440 B, SSM 128 heads x 64 x 128 x 4 B (FP32)
  // = 4,194,304 B. Prompt 1000: the state at 999 tokens, attention blocks up to 999: 63 blocks of 16.
  const ModelSpec spec = load("nemotron-h-8b");
  const StateDtypes dt{DType::kBf16, DType::kFp32};
  const KvTransferModel m(spec, dt, sides(1, 1));
  const int64_t attention = 4 * 8 * 128 * 2 * 2 * 1008;
  const int64_t state = 24 * (61'440 + 4'194'304);
  EXPECT_EQ(m.total_bytes(1000, 0), attention + state);
  EXPECT_EQ(m.total_bytes(1000, 999), 0);  // everything but the last token local: nothing to read
}

TEST(KvTransfer, PairingsVllmRejectsAreErrors) {
  TransferSides s = sides(1, 1);
  s.decode_kv = DType::kFp8;
  EXPECT_THROW(KvTransferModel(load("qwen3-8b"), StateDtypes{}, s), InputError);
  s = sides(1, 1);
  s.prefill_block_size = 32;  // larger than the decode block
  EXPECT_THROW(KvTransferModel(load("qwen3-8b"), StateDtypes{}, s), InputError);
  s.prefill_block_size = 8;  // smaller: supported without the hybrid allocator
  EXPECT_NO_THROW(KvTransferModel(load("qwen3-8b"), StateDtypes{}, s));
  EXPECT_THROW(KvTransferModel(load("nemotron-h-8b"), StateDtypes{}, s), InputError);  // hybrid, two sizes
  s = sides(2, 4);
  EXPECT_THROW(KvTransferModel(load("nemotron-h-8b"), StateDtypes{}, s), InputError);  // hybrid hetero TP
  s.hybrid_hetero_tp = true;
  EXPECT_NO_THROW(KvTransferModel(load("nemotron-h-8b"), StateDtypes{}, s));
}

}  // namespace
}  // namespace kvsim
