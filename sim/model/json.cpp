#include "sim/model/json.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_set>

#include "sim/core/errors.h"
#include "sim/core/input_file.h"
#include "sim/core/utf8.h"

namespace kvsim {

const JsonValue* JsonValue::find(std::string_view key) const {
  if (type_ != Type::kObject) return nullptr;
  for (const auto& [k, v] : object_)
    if (k == key) return &v;
  return nullptr;
}

class JsonParser {
 public:
  JsonParser(std::string_view text, const std::string& source, int64_t max_values)
      : t_(text), source_(source), max_values_(max_values) {}

  JsonValue parse_document() {
    skip_ws();
    JsonValue v = parse_value(0);
    skip_ws();
    if (pos_ != t_.size()) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < t_.size(); ++i) {
      if (t_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw InputError(source_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": invalid JSON: " + msg);
  }

  void skip_ws() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r')) ++pos_;
  }

  bool consume(std::string_view word) {
    if (t_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  JsonValue parse_value(int depth) {
    if (depth > 256) fail("nesting too deep");
    // A value costs about 100 bytes parsed (json.h kMaxJsonValues).
    if (++values_ > max_values_) fail("more than " + std::to_string(max_values_) + " values in one document");
    if (pos_ >= t_.size()) fail("unexpected end of input");
    const char c = t_[pos_];
    JsonValue v;
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') {
      v.type_ = JsonValue::Type::kString;
      v.string_ = parse_string();
      return v;
    }
    if (consume("true")) {
      v.type_ = JsonValue::Type::kBool;
      v.bool_ = true;
      return v;
    }
    if (consume("false")) {
      v.type_ = JsonValue::Type::kBool;
      return v;
    }
    if (consume("null")) return v;
    if (consume("NaN")) return number_value(std::numeric_limits<double>::quiet_NaN());
    if (consume("Infinity")) return number_value(std::numeric_limits<double>::infinity());
    if (consume("-Infinity")) return number_value(-std::numeric_limits<double>::infinity());
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number();
    fail("unexpected " + describe(c));
  }

  // A character for a message: printable ASCII quoted, anything else as a byte value, so a binary
  // file never puts control bytes or half a UTF-8 sequence into the one-line error.
  static std::string describe(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7F) return std::string("character '") + c + "'";
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02X", u);
    return std::string(buf) + (u == 0xEF ? " (a UTF-8 byte order mark?)" : "");
  }

  static JsonValue number_value(double d) {
    JsonValue v;
    v.type_ = JsonValue::Type::kNumber;
    v.number_ = d;
    return v;
  }

  JsonValue parse_number() {
    const size_t start = pos_;
    if (t_[pos_] == '-') ++pos_;
    // Python's json (which wrote and reads these files) refuses a leading zero: 036 is not 36.
    if (pos_ + 1 < t_.size() && t_[pos_] == '0' && t_[pos_ + 1] >= '0' && t_[pos_ + 1] <= '9')
      fail("number with a leading zero");
    bool integral = true;
    auto digits = [&] {
      size_t s = pos_;
      while (pos_ < t_.size() && t_[pos_] >= '0' && t_[pos_] <= '9') ++pos_;
      return pos_ > s;
    };
    if (!digits()) fail("malformed number");
    if (pos_ < t_.size() && t_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (!digits()) fail("malformed number");
    }
    if (pos_ < t_.size() && (t_[pos_] == 'e' || t_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < t_.size() && (t_[pos_] == '+' || t_[pos_] == '-')) ++pos_;
      if (!digits()) fail("malformed number");
    }
    std::string s(t_.substr(start, pos_ - start));
    JsonValue v = number_value(std::strtod(s.c_str(), nullptr));
    if (integral) {
      errno = 0;
      long long ll = std::strtoll(s.c_str(), nullptr, 10);
      if (errno == 0) {
        v.integral_ = true;
        v.int_ = ll;
      }
    }
    return v;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  uint32_t parse_hex4() {
    if (pos_ + 4 > t_.size()) fail("truncated \\u escape");
    uint32_t cp = 0;
    for (int i = 0; i < 4; ++i) {
      char h = t_[pos_++];
      cp <<= 4;
      if (h >= '0' && h <= '9')
        cp |= h - '0';
      else if (h >= 'a' && h <= 'f')
        cp |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F')
        cp |= h - 'A' + 10;
      else
        fail("bad \\u escape");
    }
    return cp;
  }

  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= t_.size()) fail("unterminated string");
      char c = t_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) {
        --pos_;
        fail("control character in string");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= t_.size()) fail("unterminated escape");
      char e = t_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = parse_hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && consume("\\u")) {
            uint32_t lo = parse_hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail("bad \\u escape: high surrogate without a low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          --pos_;
          fail(std::string("bad escape \\") + e);
      }
    }
  }

  JsonValue parse_array(int depth) {
    ++pos_;
    JsonValue v;
    v.type_ = JsonValue::Type::kArray;
    skip_ws();
    if (pos_ < t_.size() && t_[pos_] == ']') {
      ++pos_;
      return v;
    }
    while (true) {
      skip_ws();
      v.array_.push_back(parse_value(depth + 1));
      skip_ws();
      if (pos_ >= t_.size()) fail("unterminated array");
      if (t_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (t_[pos_] == ']') {
        ++pos_;
        return v;
      }
      fail("expected ',' or ']' in array");
    }
  }

  JsonValue parse_object(int depth) {
    ++pos_;
    JsonValue v;
    v.type_ = JsonValue::Type::kObject;
    std::unordered_set<std::string> seen;  // the keys, once the object is past a few
    skip_ws();
    if (pos_ < t_.size() && t_[pos_] == '}') {
      ++pos_;
      return v;
    }
    while (true) {
      skip_ws();
      if (pos_ >= t_.size() || t_[pos_] != '"') fail("expected a string key in object");
      const size_t key_pos = pos_;
      std::string key = parse_string();
      if (has_key(v, key, seen)) {
        pos_ = key_pos;
        fail("duplicate key '" + key + "'");
      }
      skip_ws();
      if (pos_ >= t_.size() || t_[pos_] != ':') fail("expected ':' after key");
      ++pos_;
      skip_ws();
      JsonValue member = parse_value(depth + 1);
      v.object_.emplace_back(std::move(key), std::move(member));
      skip_ws();
      if (pos_ >= t_.size()) fail("unterminated object");
      if (t_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (t_[pos_] == '}') {
        ++pos_;
        return v;
      }
      fail("expected ',' or '}' in object");
    }
  }

  // A repeated key would make one of its values silently win. Most objects are small: a linear scan; past
  // 16 members a set (100,000 keys took 24 s scanned).
  static bool has_key(const JsonValue& obj, const std::string& key, std::unordered_set<std::string>& seen) {
    if (obj.object_.size() < 16) {
      for (const auto& [k, v] : obj.object_)
        if (k == key) return true;
      return false;
    }
    if (seen.empty())
      for (const auto& [k, v] : obj.object_) seen.insert(k);
    return !seen.insert(key).second;
  }

  int64_t max_values_;
  int64_t values_ = 0;

  std::string_view t_;
  std::string source_;
  size_t pos_ = 0;
};

JsonValue parse_json(std::string_view text, const std::string& source, int64_t max_values) {
  return JsonParser(text, source, max_values).parse_document();
}

JsonValue parse_json_file(const std::string& path, int64_t max_values) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory, not a JSON file");
  return parse_json(read_input_file(path, "file"), path, max_values);
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    const size_t n = utf8_length(s, i);
    if (n > 1) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    if (n == 0) {
      // Not UTF-8. A surrogate decoded from a lone "\ud800" escape (ED A0..BF xx) goes back out as
      // that escape; any other byte becomes U+FFFD. Either way the output stays valid UTF-8 JSON.
      char buf[8];
      const bool surrogate = u == 0xED && i + 2 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xE0) == 0xA0 &&
                             (static_cast<unsigned char>(s[i + 2]) & 0xC0) == 0x80;
      if (surrogate) {
        const unsigned cp = 0xD000u | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6) |
                            (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
        i += 3;
      } else {
        std::snprintf(buf, sizeof buf, "\\ufffd");
        ++i;
      }
      out += buf;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (u < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", u);
          out += buf;
        } else {
          out += c;
        }
    }
    ++i;
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (std::isnan(v) || std::isinf(v)) return "null";
  if (v == std::floor(v) && std::fabs(v) < 9e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[32];
  if (std::fabs(v) >= 1e15) {  // "%.6f" of 1e50 needs 58 characters: the buffer cut it to a wrong number
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%.6f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace kvsim
