#include "sim/core/csv_fields.h"

namespace kvsim {

std::string split_csv_fields(std::string_view line, std::vector<std::string>& out) {
  out.clear();
  std::string cur;
  // kStart: nothing but blanks in this field yet; kPlain: an unquoted field; kQuoted: inside quotes;
  // kClosed: after the closing quote (only blanks until the comma).
  enum class State { kStart, kPlain, kQuoted, kClosed } st = State::kStart;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (st == State::kQuoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        st = State::kClosed;
      } else {
        cur += c;
      }
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
      st = State::kStart;
    } else if (c == '\r') {
      // dropped (CRLF line ends)
    } else if (c == '"') {
      if (st == State::kPlain) return "a quote inside an unquoted field";
      if (st == State::kClosed) return "text after a closing quote";
      cur.clear();  // blanks before the opening quote
      st = State::kQuoted;
    } else if (st == State::kClosed) {
      if (c != ' ' && c != '\t') return "text after a closing quote";
    } else {
      cur += c;
      if (c != ' ' && c != '\t') st = State::kPlain;
    }
  }
  if (st == State::kQuoted) return "unterminated quoted field";
  out.push_back(std::move(cur));
  return "";
}

}  // namespace kvsim
