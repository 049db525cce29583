// Azure LLM inference traces (Azure/AzurePublicDataset, "Splitwise" 2023; the 2024 week-long and
// 2025 multimodal files use the same columns plus extras, which are ignored). CSV with a header;
// columns are found by name. There is no reuse information, so each prompt is one content segment
// unique to its request.
#include <algorithm>
#include <vector>

#include "sim/core/csv_fields.h"
#include "sim/core/errors.h"
#include "sim/core/time.h"
#include "sim/workload/content_ids.h"
#include "sim/workload/impl/trace_reader.h"
#include "sim/workload/impl/trace_readers.h"

namespace kvsim {
namespace {

// The line's fields into `out` (the vector reused from line to line).
void split_csv(std::string_view line, std::vector<std::string>& out) {
  if (const std::string why = split_csv_fields(line, out); !why.empty()) throw BadLine(why);
}

// Fields are unquoted already (split_csv_fields); blanks around them are not part of the value.
std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

class AzureReader final : public TraceReader {
 public:
  explicit AzureReader(const TraceConfig& config) : TraceReader(config) {}

 protected:
  const char* time_field() const override { return "TIMESTAMP"; }
  bool origin_is_first_record() const override { return true; }

  bool parse_line(std::string_view line, RequestId id, TraceRecord& out) override {
    if (!have_header_) {
      // A UTF-8 byte-order mark before the header (spreadsheet exports) is not part of its first name.
      if (line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
      try {
        split_csv(line, cols_);
      } catch (const BadLine& e) {
        throw InputError(config().path + ":" + std::to_string(line_number()) + ": header: " + e.what());
      }
      read_header(cols_);
      return false;
    }
    split_csv(line, cols_);
    const std::vector<std::string>& cols = cols_;
    if (cols.size() != header_columns_) {
      throw BadLine("expected " + std::to_string(header_columns_) + " columns (the header's), got " +
                    std::to_string(cols.size()));
    }
    out.time_ns = parse_wall_clock_ns(trim(cols[time_col_]), "TIMESTAMP");
    const int64_t max_tokens = config().max_tokens;
    const int64_t input = parse_decimal(trim(cols[input_col_]), "ContextTokens", 1, max_tokens, "max_tokens");
    out.spec.output_tokens = parse_decimal(trim(cols[output_col_]), "GeneratedTokens", 1, max_tokens, "max_tokens");
    Segment s;
    s.content_id = make_content_id(ContentNamespace::kUnique, static_cast<uint64_t>(id.value()));
    s.tokens = input;
    out.spec.prompt.push_back(s);
    return true;
  }

 private:
  // The header is not a request line: a bad header is fatal even with skip_bad_lines.
  void read_header(const std::vector<std::string>& cols) {
    // A column named twice: the first would be read and the second ignored.
    for (size_t i = 0; i < cols.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (!trim(cols[i]).empty() && trim(cols[i]) == trim(cols[j]))
          throw InputError(config().path + ":" + std::to_string(line_number()) + ": header: column '" +
                           std::string(trim(cols[i])) + "' appears twice");
    auto find = [&](std::string_view name) -> size_t {
      for (size_t i = 0; i < cols.size(); ++i)
        if (trim(cols[i]) == name) return i;
      throw InputError(config().path + ":" + std::to_string(line_number()) + ": header lacks column '" +
                       std::string(name) + "' (expected TIMESTAMP,ContextTokens,GeneratedTokens)");
    };
    time_col_ = find("TIMESTAMP");
    input_col_ = find("ContextTokens");
    output_col_ = find("GeneratedTokens");
    header_columns_ = cols.size();
    have_header_ = true;
  }

  bool have_header_ = false;
  std::vector<std::string> cols_;  // the current line's fields
  size_t time_col_ = 0, input_col_ = 0, output_col_ = 0, header_columns_ = 0;
};

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant, days_from_civil).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

int64_t parse_wall_clock_ns(std::string_view t, const std::string& field) {
  auto bad = [&](const char* why) {
    return BadLine(field + ": '" + std::string(t) + "' is not a YYYY-MM-DD HH:MM:SS[.fraction] time (" + why + ")");
  };
  size_t pos = 0;
  auto digits = [&](size_t n, const char* what) -> int64_t {
    int64_t v = 0;
    for (size_t i = 0; i < n; ++i, ++pos) {
      if (pos >= t.size() || t[pos] < '0' || t[pos] > '9') throw bad(what);
      v = v * 10 + (t[pos] - '0');
    }
    return v;
  };
  auto expect = [&](bool ok, const char* what) {
    if (!ok) throw bad(what);
    ++pos;
  };
  const int64_t year = digits(4, "year");
  expect(pos < t.size() && t[pos] == '-', "'-' after year");
  const int64_t month = digits(2, "month");
  expect(pos < t.size() && t[pos] == '-', "'-' after month");
  const int64_t day = digits(2, "day");
  expect(pos < t.size() && (t[pos] == ' ' || t[pos] == 'T'), "space after date");
  const int64_t hour = digits(2, "hour");
  expect(pos < t.size() && t[pos] == ':', "':' after hour");
  const int64_t minute = digits(2, "minute");
  expect(pos < t.size() && t[pos] == ':', "':' after minute");
  const int64_t second = digits(2, "second");
  int64_t frac_ns = 0;
  if (pos < t.size() && t[pos] == '.') {
    ++pos;
    int n = 0;
    while (pos < t.size() && t[pos] >= '0' && t[pos] <= '9') {
      if (n == 9) throw bad("more than 9 fractional digits");
      frac_ns = frac_ns * 10 + (t[pos] - '0');
      ++n;
      ++pos;
    }
    if (n == 0) throw bad("no digits after '.'");
    for (; n < 9; ++n) frac_ns *= 10;
  }
  const std::string_view rest = t.substr(pos);
  if (!rest.empty() && rest != "Z" && rest != "+00:00") throw bad("unexpected trailing text");
  if (month < 1 || month > 12) throw bad("month out of range");
  if (!valid_civil_date(year, month, day)) throw bad("day out of range");
  if (hour > 23 || minute > 59 || second > 59) throw bad("time of day out of range");
  const int64_t secs = days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
  // int64 nanoseconds since 1970 span 1677-09-21 .. 2262-04-11: beyond them the product wraps.
  int64_t ns = 0;
  if (__builtin_mul_overflow(secs, int64_t{1'000'000'000}, &ns) || __builtin_add_overflow(ns, frac_ns, &ns))
    throw BadLine(field + ": '" + std::string(t) +
                  "' is outside 1677-09-21 .. 2262-04-11, the range of int64 nanoseconds since 1970");
  return ns;
}

std::unique_ptr<IRequestSource> make_azure_reader(const TraceConfig& config) {
  return std::make_unique<AzureReader>(config);
}

}  // namespace kvsim
