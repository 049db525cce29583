#pragma once
// UTF-8 validation for text that goes out (JSON, error messages).
#include <cstddef>
#include <string_view>

namespace kvsim {

// Length of the valid UTF-8 sequence starting at s[i] (1 for ASCII), or 0 when the bytes there are
// not valid UTF-8: a stray continuation byte, a truncated sequence, an overlong form, a UTF-16
// surrogate (U+D800..U+DFFF, as a lone "\ud800" escape decodes) or a code point beyond U+10FFFF.
inline size_t utf8_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // beyond U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace kvsim
