// User text inside error messages stays on one short, printable line (quote_for_message, one_line).
#include "sim/core/errors.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/core/utf8.h"

namespace kvsim {
namespace {

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

TEST(QuoteForMessage, PlainTextIsQuotedAsWritten) {
  EXPECT_EQ(quote_for_message("qwen3"), "'qwen3'");
  EXPECT_EQ(quote_for_message("größe"), "'größe'");  // valid UTF-8 kept
}

TEST(QuoteForMessage, ControlCharactersAndInvalidUtf8AreEscaped) {
  EXPECT_EQ(quote_for_message("a\nb\tc\r"), "'a\\nb\\tc\\r'");
  EXPECT_EQ(quote_for_message(std::string("x\0y", 3)), "'x\\x00y'");
  EXPECT_EQ(quote_for_message("\xED\xA0\x80"), "'\\xED\\xA0\\x80'");  // a lone surrogate, as "\ud800" decodes
  EXPECT_EQ(quote_for_message("\xFF"), "'\\xFF'");
  // Unicode's line and paragraph separators and the C1 controls end a line in some tools too.
  EXPECT_EQ(quote_for_message("a\xE2\x80\xA8"
                              "b\xE2\x80\xA9"
                              "c\xC2\x85"
                              "d"),
            "'a\\u{2028}b\\u{2029}c\\u{0085}d'");
  EXPECT_EQ(one_line("key \xE2\x80\xA8 here"), "key \\u{2028} here");
  EXPECT_EQ(quote_for_message("\xC2\xA0"), "'\xC2\xA0'");  // U+00A0 (no-break space) is printable: kept
}

TEST(QuoteForMessage, CutAtTheLimitOnBothSides) {
  const std::string at(200, 'a'), over(201, 'a');
  EXPECT_EQ(quote_for_message(at), "'" + at + "'");
  EXPECT_EQ(quote_for_message(over), "'" + at + "'... (201 bytes)");
  const std::string huge(50 << 20, 'k');
  EXPECT_LT(quote_for_message(huge).size(), 240u);
  // A multi-byte character is never split at the cut.
  const std::string umlauts = std::string(199, 'a') + "ä";
  EXPECT_TRUE(valid_utf8(quote_for_message(umlauts)));
  EXPECT_EQ(quote_for_message(umlauts), "'" + std::string(199, 'a') + "'... (201 bytes)");
}

TEST(OneLine, MessagesStayOnOneLine) {
  EXPECT_EQ(one_line("a.yaml: key: bad"), "a.yaml: key: bad");
  EXPECT_EQ(one_line("a\nb"), "a\\nb");
  const std::string long_msg(5000, 'm');
  EXPECT_EQ(one_line(long_msg), std::string(4000, 'm') + "... (truncated)");
}

TEST(Utf8Length, AcceptsValidRejectsInvalid) {
  EXPECT_EQ(utf8_length("a", 0), 1u);
  EXPECT_EQ(utf8_length("é", 0), 2u);
  EXPECT_EQ(utf8_length("€", 0), 3u);
  EXPECT_EQ(utf8_length("😀", 0), 4u);
  EXPECT_EQ(utf8_length("\xC0\x80", 0), 0u);          // overlong NUL
  EXPECT_EQ(utf8_length("\xED\x9F\xBF", 0), 3u);      // U+D7FF, just below the surrogates
  EXPECT_EQ(utf8_length("\xED\xA0\x80", 0), 0u);      // U+D800
  EXPECT_EQ(utf8_length("\xF4\x8F\xBF\xBF", 0), 4u);  // U+10FFFF
  EXPECT_EQ(utf8_length("\xF4\x90\x80\x80", 0), 0u);  // beyond
  EXPECT_EQ(utf8_length("\xE2\x82", 0), 0u);          // truncated
}

}  // namespace
}  // namespace kvsim
