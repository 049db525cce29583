#include <gtest/gtest.h>

#include "sim/core/random.h"
#include "sim/workload/content_ids.h"
#include "tests/workload/workload_test_util.h"

namespace kvsim {
namespace {

using test::drain;
using test::tokens_of;
using test::trace_workload;

TEST(ContentIds, NamedIdsAreFnv1aFoldedInsideTheirNamespace) {
  // The 64-bit hash (fnv1a64 of random.h) is folded to 56 bits by xoring its top byte into its low
  // byte; the namespace (3 = named text, 4 = image) takes the top byte.
  const uint64_t h = fnv1a64("a");
  const uint64_t folded = (h ^ (h >> 56)) & ((uint64_t{1} << 56) - 1);
  EXPECT_EQ(named_content_id(ContentNamespace::kNamed, "a"), (uint64_t{3} << 56) | folded);
  EXPECT_EQ(named_content_id(ContentNamespace::kImage, "a"), (uint64_t{4} << 56) | folded);
  EXPECT_NE(named_content_id(ContentNamespace::kNamed, "a"), named_content_id(ContentNamespace::kNamed, "b"));
}

TEST(NativeReader, SegmentsImagesAndRequestFields) {
  RandomStreams rng(1);
  auto src = make_request_source(trace_workload("native", "native_small.jsonl"), rng);
  const auto reqs = drain(*src);
  ASSERT_EQ(reqs.size(), 3u);
  const RequestSpec& a = reqs[0];
  EXPECT_EQ(a.arrival.ns(), 500'000'000);
  EXPECT_EQ(tokens_of(a), (std::vector<int64_t>{1600, 1024, 600}));
  EXPECT_EQ(a.prompt_tokens, 3224);
  EXPECT_EQ(a.prompt[0].content_id, named_content_id(ContentNamespace::kNamed, "sys-1"));
  EXPECT_EQ(a.prompt[1].content_id, named_content_id(ContentNamespace::kImage, "img-7"));
  EXPECT_FALSE(a.prompt[0].image);
  EXPECT_TRUE(a.prompt[1].image);
  EXPECT_FALSE(a.prompt[2].image);
  EXPECT_EQ(a.output_tokens, 128);
  EXPECT_EQ(a.output_content_id, named_content_id(ContentNamespace::kNamed, "a-1"));
  EXPECT_EQ(a.session, "s1");
  EXPECT_EQ(a.priority, 2);
  EXPECT_EQ(a.lora, "math");
  EXPECT_EQ(a.cache_salt, "tenant-a");
}

TEST(NativeReader, SameTextWithAnotherImageHasAnotherImageId) {
  RandomStreams rng(1);
  auto src = make_request_source(trace_workload("native", "native_small.jsonl"), rng);
  const auto reqs = drain(*src);
  EXPECT_EQ(reqs[1].prompt[0].content_id, reqs[0].prompt[0].content_id);
  EXPECT_TRUE(reqs[1].prompt[1].image);
  EXPECT_NE(reqs[1].prompt[1].content_id, reqs[0].prompt[1].content_id);
}

TEST(NativeReader, OutputIdLetsALaterPromptReuseTheAnswer) {
  RandomStreams rng(1);
  auto src = make_request_source(trace_workload("native", "native_small.jsonl"), rng);
  const auto reqs = drain(*src);
  EXPECT_EQ(reqs[1].prompt[2].content_id, reqs[0].output_content_id);
  EXPECT_EQ(reqs[1].prompt[2].tokens, 128);
}

TEST(NativeReader, AnonymousSegmentsContinueOneContentPrivateToTheRequest) {
  RandomStreams rng(1);
  auto src = make_request_source(trace_workload("native", "native_small.jsonl"), rng);
  const auto reqs = drain(*src);
  const RequestSpec& b = reqs[1];
  EXPECT_EQ(b.arrival.ns(), 1'250'000'000);
  EXPECT_EQ(b.prompt_tokens, 1600 + 1024 + 128 + 30 + 20);
  const uint64_t unique = make_content_id(ContentNamespace::kUnique, 1);  // request id 1
  EXPECT_EQ(b.prompt[3].content_id, unique);
  EXPECT_EQ(b.prompt[3].offset, 0);
  EXPECT_EQ(b.prompt[4].content_id, unique);
  EXPECT_EQ(b.prompt[4].offset, 30);  // continues after the first 30 anonymous tokens
  // Without output_id the answer is unique to the request.
  EXPECT_EQ(b.output_content_id, make_content_id(ContentNamespace::kOutput, 1));
}

TEST(NativeReader, OffsetContinuesNamedContentAndDefaultsApply) {
  RandomStreams rng(1);
  auto src = make_request_source(trace_workload("native", "native_small.jsonl"), rng);
  const auto reqs = drain(*src);
  const RequestSpec& c = reqs[2];
  EXPECT_EQ(c.arrival.ns(), 1'250'000'000);  // equal times are allowed
  EXPECT_EQ(c.prompt[0].offset, 512);
  EXPECT_EQ(c.prompt[0].tokens, 88);
  EXPECT_EQ(c.session, "");
  EXPECT_EQ(c.priority, 0);
  EXPECT_EQ(c.lora, "");
  EXPECT_EQ(c.cache_salt, "");
}

}  // namespace
}  // namespace kvsim
