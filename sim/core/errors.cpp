#include "sim/core/errors.h"

#include <cstdio>

#include "sim/core/utf8.h"

namespace kvsim {
namespace {

// Appends s[0, limit) escaped; returns the bytes consumed (never splits a UTF-8 sequence).
size_t append_escaped(std::string& out, std::string_view s, size_t limit) {
  size_t i = 0;
  while (i < s.size() && i < limit) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = utf8_length(s, i);
    // C1 controls (U+0080..U+009F) and the line / paragraph separators (U+2028, U+2029) break a line in
    // some terminals and tools like a newline does: written as \u{...}, the rest of UTF-8 as is.
    const auto b1 = n > 1 ? static_cast<unsigned char>(s[i + 1]) : 0;
    const auto b2 = n > 2 ? static_cast<unsigned char>(s[i + 2]) : 0;
    const bool c1 = n == 2 && c == 0xC2 && b1 <= 0x9F;
    const bool separator = n == 3 && c == 0xE2 && b1 == 0x80 && (b2 == 0xA8 || b2 == 0xA9);
    if (c1 || separator) {
      if (i + n > limit) break;
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u{%04X}", c1 ? b1 : 0x2000u + (b2 == 0xA8 ? 0x28u : 0x29u));
      out += buf;
      i += n;
      continue;
    }
    if (n > 1) {
      if (i + n > limit) break;
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (n == 1 && c >= 0x20 && c != 0x7F) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
    ++i;
  }
  return i;
}

}  // namespace

std::string without_nul(std::string message) {
  for (size_t i = message.find('\0'); i != std::string::npos; i = message.find('\0', i + 4))
    message.replace(i, 1, "\\x00");
  return message;
}

std::string quote_for_message(std::string_view text, size_t max_bytes) {
  std::string out = "'";
  const size_t used = append_escaped(out, text, max_bytes);
  out += "'";
  if (used < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string one_line(std::string_view message, size_t max_bytes) {
  std::string out;
  const size_t used = append_escaped(out, message, max_bytes);
  if (used < message.size()) out += "... (truncated)";
  return out;
}

}  // namespace kvsim
