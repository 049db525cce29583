#include "sim/engine/block_hasher.h"

#include <gtest/gtest.h>

#include "tests/engine/engine_test_util.h"

namespace kvsim {
namespace {
using testing::image;
using testing::make_request;
using testing::text;

std::vector<uint64_t> hashes_of(const RequestSpec& spec, int block_size) {
  TokenSequence seq(spec.prompt);
  BlockHasher h(block_size, spec);
  h.extend(seq);
  return h.hashes();
}

// 4 contents of 512 tokens, cut either as one segment each or as 32 segments of 16 tokens.
std::vector<Segment> cut(int64_t piece) {
  std::vector<Segment> out;
  for (uint64_t c = 1; c <= 4; ++c)
    for (int64_t off = 0; off < 512; off += piece) out.push_back(text(c, piece, off));
  return out;
}

TEST(BlockHasher, HashDependsOnIdentitiesNotOnSegmentCuts) {
  for (int b : {16, 512, 528, 2048}) {
    const auto a = hashes_of(make_request(1, 0, cut(512), 1), b);
    const auto c = hashes_of(make_request(2, 0, cut(16), 1), b);
    // 2048 tokens: 2048 / b full blocks (128, 4, 3, 1).
    EXPECT_EQ(a.size(), static_cast<size_t>(2048 / b));
    EXPECT_EQ(a, c) << "block size " << b;
  }
}

TEST(BlockHasher, OnlyFullBlocksAreHashed) {
  // 100 tokens at B = 16: floor(100 / 16) = 6 full blocks.
  EXPECT_EQ(hashes_of(make_request(1, 0, {text(7, 100)}, 1), 16).size(), 6u);
}

TEST(BlockHasher, ChainedHashChangesFromTheFirstDifferentBlockOn) {
  // Contents differ from token 40 on: blocks 0 and 1 ([0,32)) equal, block 2 ([32,48)) onwards differ.
  const auto a = hashes_of(make_request(1, 0, {text(7, 40), text(8, 40)}, 1), 16);
  const auto b = hashes_of(make_request(2, 0, {text(7, 40), text(9, 40)}, 1), 16);
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  for (size_t k = 2; k < 5; ++k) EXPECT_NE(a[k], b[k]);
}

TEST(BlockHasher, OffsetInsideContentIsPartOfTheIdentity) {
  const auto a = hashes_of(make_request(1, 0, {text(7, 32, 0)}, 1), 16);
  const auto b = hashes_of(make_request(2, 0, {text(7, 32, 16)}, 1), 16);
  EXPECT_NE(a[0], b[0]);
  // Content 7 from offset 16 is block 1 of `a`'s content, but with another parent it still differs.
  EXPECT_NE(a[1], b[0]);
}

TEST(BlockHasher, CacheSaltChangesTheKeyOfTheFirstBlockAndByChainingAll) {
  auto plain = make_request(1, 0, {text(7, 64)}, 1);
  auto salted = plain;
  salted.cache_salt = "tenant-a";
  const auto a = hashes_of(plain, 16), b = hashes_of(salted, 16);
  for (size_t k = 0; k < 4; ++k) EXPECT_NE(a[k], b[k]);
}

TEST(BlockHasher, LoraNameChangesEveryBlockKey) {
  auto base = make_request(1, 0, {text(7, 64)}, 1);
  auto l1 = base, l2 = base;
  l1.lora = "adapter-1";
  l2.lora = "adapter-2";
  const auto a = hashes_of(base, 16), b = hashes_of(l1, 16), c = hashes_of(l2, 16);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_NE(a[k], b[k]);
    EXPECT_NE(b[k], c[k]);
  }
  EXPECT_EQ(b, hashes_of(l1, 16));
}

TEST(BlockHasher, DifferentImageSameTextDiffersFromTheImageBlockOn) {
  // Text 40 tokens, image 32, text 24: the image covers [40, 72): blocks 2..4 ([32,80)) contain it.
  const auto a = hashes_of(make_request(1, 0, {text(7, 40), image(100, 32), text(8, 24)}, 1), 16);
  const auto b = hashes_of(make_request(2, 0, {text(7, 40), image(101, 32), text(8, 24)}, 1), 16);
  ASSERT_EQ(a.size(), 6u);  // 96 / 16
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  for (size_t k = 2; k < 6; ++k) EXPECT_NE(a[k], b[k]);
}

TEST(BlockHasher, TextOnlyHashIgnoresTheImageKey) {
  const auto ra = make_request(1, 0, {text(7, 40), image(100, 32), text(8, 24)}, 1);
  const auto rb = make_request(2, 0, {text(7, 40), image(101, 32), text(8, 24)}, 1);
  TokenSequence sa(ra.prompt), sb(rb.prompt);
  BlockHasher ha(16, ra), hb(16, rb);
  ha.extend(sa);
  hb.extend(sb);
  for (size_t k = 0; k < 6; ++k) EXPECT_EQ(ha.text_only_hash(k), hb.text_only_hash(k));
}

TEST(BlockHasher, OutputTokensExtendTheSequenceAndFillDecodeBlocks) {
  const auto spec = make_request(1, 0, {text(7, 30)}, 10);
  TokenSequence seq(spec.prompt);
  BlockHasher h(16, spec);
  h.extend(seq);
  EXPECT_EQ(h.hashes().size(), 1u);  // 30 tokens: one full block
  for (int j = 0; j < 2; ++j) seq.append(spec.output_content_id, j, 1, false);
  h.extend(seq);
  EXPECT_EQ(h.hashes().size(), 2u);  // 32 tokens: two full blocks
  EXPECT_EQ(seq.runs().size(), 2u);  // prompt run + one merged output run
}

}  // namespace
}  // namespace kvsim
