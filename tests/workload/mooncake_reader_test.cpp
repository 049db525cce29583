#include <gtest/gtest.h>

#include "sim/core/errors.h"
#include "sim/core/random.h"
#include "sim/workload/content_ids.h"
#include "tests/workload/workload_test_util.h"

namespace kvsim {
namespace {

using test::drain;
using test::tokens_of;
using test::trace_workload;

uint64_t block(uint64_t hash_id) { return make_content_id(ContentNamespace::kMooncakeBlock, hash_id); }

TEST(MooncakeReader, HashIdsBecomeBlockSegmentsWithPartialLastBlock) {
  RandomStreams rng(1);
  auto src = make_request_source(trace_workload("mooncake", "mooncake_small.jsonl"), rng);
  const auto reqs = drain(*src);
  ASSERT_EQ(reqs.size(), 3u);  // the blank line carries no request
  // 1200 tokens at 512 per hash id: 512 + 512 + (1200 - 1024 = 176).
  EXPECT_EQ(tokens_of(reqs[0]), (std::vector<int64_t>{512, 512, 176}));
  EXPECT_EQ(reqs[0].prompt_tokens, 1200);
  EXPECT_EQ(reqs[0].prompt[0].content_id, block(0));
  EXPECT_EQ(reqs[0].prompt[1].content_id, block(1));
  EXPECT_EQ(reqs[0].prompt[2].content_id, block(2));
  for (const Segment& s : reqs[0].prompt) EXPECT_EQ(s.offset, 0);
  EXPECT_EQ(reqs[0].output_tokens, 10);
  // Exactly one full block.
  EXPECT_EQ(tokens_of(reqs[1]), (std::vector<int64_t>{512}));
  EXPECT_EQ(reqs[1].prompt[0].content_id, reqs[0].prompt[0].content_id);
  // 1025 = 512 + 512 + 1.
  EXPECT_EQ(tokens_of(reqs[2]), (std::vector<int64_t>{512, 512, 1}));
  EXPECT_EQ(reqs[2].prompt[1].content_id, block(3));
}

TEST(MooncakeReader, TimestampsAreMillisecondsAndIdsFollowFileOrder) {
  RandomStreams rng(1);
  auto src = make_request_source(trace_workload("mooncake", "mooncake_small.jsonl"), rng);
  const auto reqs = drain(*src);
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].arrival.ns(), 0);
  EXPECT_EQ(reqs[1].arrival.ns(), 0);
  EXPECT_EQ(reqs[2].arrival.ns(), 2'500'000'000);  // 2500 ms
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(reqs[i].id.value(), static_cast<int64_t>(i));
}

TEST(MooncakeReader, HashIdsLiveInTheirOwnNamespaceAndOutputsAreUniquePerRequest) {
  RandomStreams rng(1);
  auto src = make_request_source(trace_workload("mooncake", "mooncake_small.jsonl"), rng);
  const auto reqs = drain(*src);
  // Hash id 0 is not content id 0, nor the unique prompt of request 0.
  EXPECT_NE(reqs[0].prompt[0].content_id, 0u);
  EXPECT_NE(reqs[0].prompt[0].content_id, make_content_id(ContentNamespace::kUnique, 0));
  EXPECT_EQ(content_namespace(reqs[0].prompt[0].content_id), ContentNamespace::kMooncakeBlock);
  EXPECT_NE(reqs[0].output_content_id, reqs[1].output_content_id);
  EXPECT_NE(reqs[1].output_content_id, reqs[2].output_content_id);
  EXPECT_EQ(content_namespace(reqs[2].output_content_id), ContentNamespace::kOutput);
}

TEST(MooncakeReader, BlockSizeIsConfigurable) {
  // At block_size 1024 the first line (1200 tokens, 3 ids) is inconsistent: ceil(1200/1024) = 2.
  auto w = trace_workload("mooncake", "mooncake_small.jsonl");
  w.trace->block_size = 1024;
  RandomStreams rng(1);
  auto src = make_request_source(w, rng);
  EXPECT_THROW(src->next(), InputError);
}

TEST(MooncakeReader, LimitStopsAfterNRequests) {
  auto w = trace_workload("mooncake", "mooncake_small.jsonl");
  w.trace->limit = 2;
  RandomStreams rng(1);
  auto src = make_request_source(w, rng);
  EXPECT_EQ(drain(*src).size(), 2u);
}

TEST(MooncakeReader, TimeScaleMultipliesInterArrivalGaps) {
  auto w = trace_workload("mooncake", "mooncake_small.jsonl");
  w.trace->time_scale = 0.5;
  RandomStreams rng(1);
  auto src = make_request_source(w, rng);
  const auto reqs = drain(*src);
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[2].arrival.ns(), 1'250'000'000);  // 2.5 s * 0.5
}

}  // namespace
}  // namespace kvsim
