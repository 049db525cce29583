// Trace input errors name the file, the line and the field; skip_bad_lines counts instead.
#include <gtest/gtest.h>

#include "sim/core/errors.h"
#include "sim/core/random.h"
#include "tests/workload/workload_test_util.h"

namespace kvsim {
namespace {

using test::drain;
using test::fixture;
using test::trace_workload;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(TraceErrors, MalformedLineReportsPathAndLineNumber) {
  const std::string msg = test::source_error(trace_workload("mooncake", "mooncake_bad_lines.jsonl"));
  // Line 2 lacks a comma after "input_length": 100.
  EXPECT_TRUE(contains(msg, fixture("mooncake_bad_lines.jsonl") + ":2: ")) << msg;
  EXPECT_TRUE(contains(msg, "invalid JSON")) << msg;
}

TEST(TraceErrors, SkipBadLinesCountsThemAndKeepsTheRest) {
  auto w = trace_workload("mooncake", "mooncake_bad_lines.jsonl");
  w.trace->skip_bad_lines = true;
  RandomStreams rng(1);
  auto src = make_request_source(w, rng);
  const auto reqs = drain(*src);
  // Lines 2 (syntax) and 4 (negative input_length) are bad; lines 1, 3, 5 remain, numbered 0..2.
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(src->skipped_lines(), 2);
  EXPECT_EQ(reqs[1].id.value(), 1);
  EXPECT_EQ(reqs[1].arrival.ns(), 20'000'000);  // line 3: 20 ms
  EXPECT_EQ(reqs[2].arrival.ns(), 40'000'000);  // line 5: 40 ms
}

TEST(TraceErrors, NegativeLengthNamesLineAndField) {
  auto w = trace_workload("mooncake", "mooncake_bad_lines.jsonl");
  RandomStreams rng(1);
  auto src = make_request_source(w, rng);
  src->next();
  try {
    src->next();  // line 2: syntax error
    FAIL();
  } catch (const InputError&) {
  }
  // Reading on after an error continues at the next line; line 4 has input_length -5.
  src->next();
  try {
    src->next();
    FAIL() << "negative input_length accepted";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(contains(msg, ":4: input_length: must be >= 1 (got -5)")) << msg;
  }
}

TEST(TraceErrors, BackwardsTimestampNamesBothLines) {
  const std::string msg = test::source_error(trace_workload("mooncake", "mooncake_backwards.jsonl"));
  EXPECT_TRUE(contains(msg, "mooncake_backwards.jsonl:3: timestamp goes backwards")) << msg;
  EXPECT_TRUE(contains(msg, "0.500000000 s is before 1.000000000 s on line 2")) << msg;
}

TEST(TraceErrors, BackwardsTimestampIsFatalEvenWhenSkippingBadLines) {
  auto w = trace_workload("mooncake", "mooncake_backwards.jsonl");
  w.trace->skip_bad_lines = true;
  EXPECT_TRUE(contains(test::source_error(w), "goes backwards"));
}

TEST(TraceErrors, LengthAboveMaxTokensNamesLineAndField) {
  // 20,000,000 > the default guard of 10,000,000.
  const std::string msg = test::source_error(trace_workload("mooncake", "mooncake_absurd_length.jsonl"));
  EXPECT_TRUE(contains(msg, ":2: input_length: 20000000 exceeds max_tokens 10000000")) << msg;
}

TEST(TraceErrors, MaxTokensGuardAcceptsTheLimitItselfAndRejectsOneMore) {
  // mooncake_small's longest prompt is 1200 tokens and longest output 10.
  auto w = trace_workload("mooncake", "mooncake_small.jsonl");
  w.trace->max_tokens = 1200;
  EXPECT_EQ(test::source_error(w), "");
  w.trace->max_tokens = 1199;
  EXPECT_TRUE(contains(test::source_error(w), ":1: input_length: 1200 exceeds max_tokens 1199"));
}

TEST(TraceErrors, HashIdCountInconsistentWithInputLength) {
  // ceil(1200 / 512) = 3 ids expected, the line has 2.
  const std::string msg = test::source_error(trace_workload("mooncake", "mooncake_hash_mismatch.jsonl"));
  EXPECT_TRUE(contains(msg, ":1: hash_ids: 2 ids for input_length 1200 at block_size 512 (expected 3)")) << msg;
}

TEST(TraceErrors, MissingFileNamesThePath) {
  const std::string msg = test::source_error(trace_workload("native", "no_such_trace.jsonl"));
  EXPECT_TRUE(contains(msg, fixture("no_such_trace.jsonl"))) << msg;
}

TEST(TraceErrors, NativeUnknownKeyIsRejected) {
  const std::string msg = test::source_error(trace_workload("native", "native_unknown_key.jsonl"));
  EXPECT_TRUE(contains(msg, ":1: unknown key 'arival'")) << msg;
}

TEST(TraceStreaming, RequestsAreReadOneLineAtATime) {
  // Line 3 is not JSON. A reader that loaded the file up front would fail before the first
  // request; a streaming one hands out lines 1 and 2 and fails only when asked for the third.
  RandomStreams rng(1);
  auto src = make_request_source(trace_workload("mooncake", "mooncake_truncated.jsonl"), rng);
  auto a = src->next();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->id.value(), 0);
  auto b = src->next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->arrival.ns(), 1'000'000);
  EXPECT_THROW(src->next(), InputError);
}

TEST(TraceStreaming, LimitStopsBeforeABadLineIsRead) {
  auto w = trace_workload("mooncake", "mooncake_truncated.jsonl");
  w.trace->limit = 2;
  EXPECT_EQ(test::source_error(w), "");
}

TEST(TraceErrors, SegmentsAddingUpPastMaxTokensAreRefusedWithoutWrapping) {
  // Four segments of 2^62 tokens and one of 100: their int64 sum wraps to 100, which was replayed as a
  // 100-token prompt. Each segment is below a max_tokens of 2^63 - 1, but the prompt is not.
  auto w = trace_workload("native", "native_segments_wrap.jsonl");
  w.trace->max_tokens = INT64_MAX;  // the scenario key stops at 2^40; the reader must not rely on it
  EXPECT_TRUE(contains(test::source_error(w), ":1: prompt of more than max_tokens 9223372036854775807 tokens"));
  // Two segments of 600 under max_tokens 1,000: each passes, the prompt does not.
  auto two = trace_workload("native", "native_segments_sum.jsonl");
  two.trace->max_tokens = 1000;
  const std::string msg = test::source_error(two);
  EXPECT_TRUE(contains(msg, ":1: prompt of more than max_tokens 1000 tokens")) << msg;
}

}  // namespace
}  // namespace kvsim
