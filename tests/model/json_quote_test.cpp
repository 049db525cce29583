// json_quote writes valid UTF-8 JSON whatever the bytes: a lone surrogate decoded from "\ud800" goes
// back out as that escape, other bytes that are not UTF-8 as U+FFFD.
#include <gtest/gtest.h>

#include "sim/model/json.h"

namespace kvsim {
namespace {

TEST(JsonQuote, EscapesAsJsonRequires) {
  EXPECT_EQ(json_quote("a\"b\\c\n\t"), "\"a\\\"b\\\\c\\n\\t\"");
  EXPECT_EQ(json_quote(std::string("\x01", 1)), "\"\\u0001\"");
  EXPECT_EQ(json_quote("größe €"), "\"größe €\"");
}

TEST(JsonQuote, LoneSurrogateRoundTripsAsAnEscape) {
  const JsonValue v = parse_json("{\"t\": \"x\\ud800y\\udfffz\"}", "s.json");
  EXPECT_EQ(json_quote(v.find("t")->str()), "\"x\\ud800y\\udfffz\"");
  // A proper pair is one code point, written as UTF-8.
  const JsonValue pair = parse_json("{\"t\": \"\\ud83d\\ude00\"}", "s.json");
  EXPECT_EQ(json_quote(pair.find("t")->str()), "\"😀\"");
}

TEST(JsonQuote, InvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(json_quote("a\xFF"
                       "b"),
            "\"a\\ufffdb\"");
  EXPECT_EQ(json_quote("\xC3"), "\"\\ufffd\"");  // truncated sequence
}

}  // namespace
}  // namespace kvsim
