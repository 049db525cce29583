#include <gtest/gtest.h>

#include "sim/core/errors.h"
#include "sim/core/random.h"
#include "sim/workload/content_ids.h"
#include "sim/workload/impl/trace_reader.h"
#include "sim/workload/impl/trace_readers.h"
#include "tests/workload/workload_test_util.h"

namespace kvsim {
namespace {

using test::drain;
using test::trace_workload;

TEST(AzureReader, WallClockParsesExactlyToNanoseconds) {
  // 2023-11-16 is 19,677 days after 1970-01-01 (53 years with 13 leap days = 19,358, plus 319
  // days into 2023). 19,677 * 86,400 + 18:15:46 (65,746 s) = 1,700,158,546 s; .6805900 = 680,590,000 ns.
  EXPECT_EQ(parse_wall_clock_ns("2023-11-16 18:15:46.6805900", "t"), 1'700'158'546'680'590'000LL);
  EXPECT_EQ(parse_wall_clock_ns("1970-01-01 00:00:00", "t"), 0);
  EXPECT_EQ(parse_wall_clock_ns("1970-01-01T00:00:01.000000001Z", "t"), 1'000'000'001);
  EXPECT_EQ(parse_wall_clock_ns("2024-02-29 00:00:00", "t") - parse_wall_clock_ns("2024-02-28 00:00:00", "t"),
            86'400'000'000'000LL);
}

TEST(AzureReader, WallClockRejectsMalformedTimes) {
  EXPECT_THROW(parse_wall_clock_ns("2023-11-16 18:15", "t"), BadLine);
  EXPECT_THROW(parse_wall_clock_ns("2023-02-29 00:00:00", "t"), BadLine);  // not a leap year
  EXPECT_THROW(parse_wall_clock_ns("2023-11-16 24:00:00", "t"), BadLine);
  EXPECT_THROW(parse_wall_clock_ns("2023-11-16 18:15:46.", "t"), BadLine);
  EXPECT_THROW(parse_wall_clock_ns("2023-11-16 18:15:46.1234567890", "t"), BadLine);
}

TEST(AzureReader, WallClockOutsideTheNanosecondRangeIsABadLineOnBothSides) {
  // secs * 1e9 wrapped: year 0000 gave a silently wrong time, year 2300 a false "goes backwards".
  EXPECT_EQ(parse_wall_clock_ns("2262-04-11 23:47:16.854775807", "t"), INT64_MAX);
  EXPECT_THROW(parse_wall_clock_ns("2262-04-11 23:47:16.854775808", "t"), BadLine);
  EXPECT_EQ(parse_wall_clock_ns("1677-09-21 00:12:44", "t"), -9'223'372'036'000'000'000);
  EXPECT_THROW(parse_wall_clock_ns("1677-09-21 00:12:43", "t"), BadLine);  // whole seconds overflow first
  EXPECT_THROW(parse_wall_clock_ns("2300-01-01 00:00:00", "t"), BadLine);
  try {
    parse_wall_clock_ns("0000-01-01 00:00:00", "TIMESTAMP");
    FAIL();
  } catch (const BadLine& e) {
    EXPECT_NE(std::string(e.what()).find("outside 1677-09-21 .. 2262-04-11"), std::string::npos) << e.what();
  }
}

TEST(AzureReader, ArrivalsAreRelativeToTheFirstRow) {
  RandomStreams rng(1);
  auto src = make_request_source(trace_workload("azure", "azure_small.csv"), rng);
  const auto reqs = drain(*src);  // CRLF lines, last line without a newline
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].arrival.ns(), 0);
  // 50.9951690 - 46.6805900 = 4.3145790 s
  EXPECT_EQ(reqs[1].arrival.ns(), 4'314'579'000);
  // 18:16:00.0000001 - 18:15:46.6805900 = 13.3194101 s
  EXPECT_EQ(reqs[2].arrival.ns(), 13'319'410'100);
  EXPECT_EQ(reqs[2].prompt_tokens, 10);
  EXPECT_EQ(reqs[2].output_tokens, 1);
}

TEST(AzureReader, EachPromptIsOneUniqueSegment) {
  RandomStreams rng(1);
  auto src = make_request_source(trace_workload("azure", "azure_small.csv"), rng);
  const auto reqs = drain(*src);
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].prompt.size(), 1u);
  EXPECT_EQ(reqs[0].prompt[0].tokens, 374);
  EXPECT_EQ(reqs[0].output_tokens, 44);
  EXPECT_EQ(reqs[1].prompt[0].tokens, 396);
  EXPECT_NE(reqs[0].prompt[0].content_id, reqs[1].prompt[0].content_id);
  EXPECT_NE(reqs[1].prompt[0].content_id, reqs[2].prompt[0].content_id);
}

TEST(AzureReader, AByteOrderMarkAndQuotedFieldsAreRead) {
  // A spreadsheet export: a UTF-8 BOM before the header, every field quoted on the first row.
  RandomStreams rng(1);
  auto src = make_request_source(trace_workload("azure", "azure_bom_quoted.csv"), rng);
  const auto reqs = drain(*src);
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].prompt_tokens, 374);
  EXPECT_EQ(reqs[0].output_tokens, 44);
  EXPECT_EQ(reqs[1].arrival.ns(), 4'314'579'000);
}

TEST(AzureReader, TimeScaleStretchesGaps) {
  auto w = trace_workload("azure", "azure_small.csv");
  w.trace->time_scale = 2.0;
  RandomStreams rng(1);
  auto src = make_request_source(w, rng);
  const auto reqs = drain(*src);
  EXPECT_EQ(reqs[1].arrival.ns(), 8'629'158'000);  // 2 * 4.3145790 s
}

TEST(AzureReader, BadRowNamesLineAndColumn) {
  // The header is line 1, so the malformed time is on line 3.
  const std::string msg = test::source_error(trace_workload("azure", "azure_bad_rows.csv"));
  EXPECT_NE(msg.find("azure_bad_rows.csv:3: TIMESTAMP: '2023-11-16 18:15:4x.0000000'"), std::string::npos) << msg;
}

TEST(AzureReader, SkipBadLinesSkipsBadTimesAndZeroLengths) {
  auto w = trace_workload("azure", "azure_bad_rows.csv");
  w.trace->skip_bad_lines = true;
  RandomStreams rng(1);
  auto src = make_request_source(w, rng);
  const auto reqs = drain(*src);
  // Line 3 (bad time) and line 4 (ContextTokens 0) are skipped; lines 2 and 5 remain.
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(src->skipped_lines(), 2);
  EXPECT_EQ(reqs[1].arrival.ns(), 4'319'410'000);  // 51.0 - 46.6805900 s
}

TEST(AzureReader, MissingHeaderIsFatalEvenWhenSkipping) {
  auto w = trace_workload("azure", "azure_no_header.csv");
  w.trace->skip_bad_lines = true;
  const std::string msg = test::source_error(w);
  EXPECT_NE(msg.find("azure_no_header.csv:1: header lacks column 'TIMESTAMP'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kvsim
