#include "sim/workload/impl/trace_reader.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "sim/core/errors.h"
#include "sim/workload/content_ids.h"

namespace kvsim {

TraceReader::TraceReader(const TraceConfig& config) : config_(config), in_(config.path, "trace file") {}

Duration TraceReader::scaled(int64_t delta_ns) const {
  if (config_.time_scale == 1.0) return Duration::ns(delta_ns);
  return duration_from_seconds(Duration::ns(delta_ns).seconds() * config_.time_scale);
}

static bool blank(std::string_view s) {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r') return false;
  return true;
}

std::optional<RequestSpec> TraceReader::next() {
  if (config_.limit > 0 && emitted_ >= config_.limit) return std::nullopt;
  std::string_view line;
  while (in_.next(line)) {
    const int64_t line_no = in_.line_number();
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (blank(line)) continue;
    const std::string where = config_.path + ":" + std::to_string(line_no) + ": ";
    TraceRecord rec;
    try {
      if (!parse_line(line, RequestId(emitted_), rec)) continue;
      // Summed against the bound as it goes: segments each below max_tokens can still add up past
      // int64 (a trace's max_tokens may be large), and a wrapped sum would replay a tiny prompt.
      int64_t total = 0;
      for (const Segment& s : rec.spec.prompt) {
        if (s.tokens > config_.max_tokens - total)
          throw BadLine("prompt of more than max_tokens " + std::to_string(config_.max_tokens) + " tokens");
        total += s.tokens;
      }
      if (total < 1) throw BadLine("empty prompt");
      rec.spec.prompt_tokens = total;
    } catch (const BadLine& e) {
      if (!config_.skip_bad_lines) throw InputError(where + e.what());
      ++skipped_;
      continue;
    }
    // Order is checked after parsing: a backwards timestamp means the trace is not sorted, which
    // skipping lines cannot repair, so it is an error even with skip_bad_lines.
    if (last_time_ns_ && rec.time_ns < *last_time_ns_) {
      throw InputError(where + time_field() + " goes backwards: " + format_seconds(rec.time_ns) + " is before " +
                       format_seconds(*last_time_ns_) + " on line " + std::to_string(last_time_line_) +
                       " (traces must be sorted by arrival)");
    }
    last_time_ns_ = rec.time_ns;
    last_time_line_ = line_no;
    if (!origin_ns_) origin_ns_ = origin_is_first_record() ? rec.time_ns : 0;
    RequestSpec spec = std::move(rec.spec);
    spec.id = RequestId(emitted_);
    int64_t delta_ns = 0;
    // The clock holds about 292 years; timestamps far apart (1700 and 2200) overflow the difference.
    if (__builtin_sub_overflow(rec.time_ns, *origin_ns_, &delta_ns))
      throw InputError(where + time_field() + ": " + format_seconds(rec.time_ns) +
                       " is too far from the first request's time for the int64 nanosecond clock");
    try {
      spec.arrival = SimTime::zero() + scaled(delta_ns);
    } catch (const std::invalid_argument&) {
      throw InputError(where + time_field() + ": arrival out of range after time_scale");
    }
    if (!rec.has_output_id) spec.output_content_id = make_content_id(ContentNamespace::kOutput, emitted_);
    ++emitted_;
    return spec;
  }
  // An empty file, a header alone or only skipped lines: a run of nothing is not a result.
  if (emitted_ == 0) {
    throw InputError(config_.path + ": no requests in the trace (" + std::to_string(in_.line_number()) + " lines read" +
                     (skipped_ > 0 ? ", " + std::to_string(skipped_) + " malformed lines skipped" : "") + ")");
  }
  return std::nullopt;
}

JsonValue parse_json_line(std::string_view line) {
  JsonValue v;
  try {
    v = parse_json(line, "");
  } catch (const InputError& e) {
    // parse_json reports ":<line>:<col>: invalid JSON: ..."; a trace line is one line, keep the column.
    std::string msg = e.what();
    if (msg.rfind(":1:", 0) == 0) {
      const size_t colon = msg.find(": ", 3);
      if (colon != std::string::npos) msg = "column " + msg.substr(3, colon - 3) + ": " + msg.substr(colon + 2);
    }
    throw BadLine(msg);
  }
  if (!v.is_object()) throw BadLine("expected a JSON object");
  return v;
}

const JsonValue& require_field(const JsonValue& obj, std::string_view field) {
  const JsonValue* v = obj.find(field);
  if (v == nullptr) throw BadLine("missing field '" + std::string(field) + "'");
  return *v;
}

static std::string range_error(const std::string& field, int64_t v, int64_t lo, int64_t hi, const char* hi_name) {
  if (v < lo) return field + ": must be >= " + std::to_string(lo) + " (got " + std::to_string(v) + ")";
  return field + ": " + std::to_string(v) + " exceeds " + (hi_name ? std::string(hi_name) + " " : "") +
         std::to_string(hi);
}

int64_t integer_field(const JsonValue& v, const std::string& field, int64_t lo, int64_t hi, const char* hi_name) {
  int64_t x = 0;
  if (v.is_integer()) {
    x = v.integer();
  } else if (v.is_number() && std::isfinite(v.number()) && std::trunc(v.number()) == v.number() &&
             std::fabs(v.number()) < 9.0e15) {
    x = static_cast<int64_t>(v.number());
  } else if (v.is_number()) {
    const double d = v.number();
    throw BadLine(field + ": must be an integer (got " +
                  (std::isfinite(d) ? json_number(d)
                   : std::isnan(d)  ? "NaN"
                   : d > 0          ? "Infinity"
                                    : "-Infinity") +
                  ")");
  } else {
    throw BadLine(field + ": must be an integer");
  }
  if (x < lo || x > hi) throw BadLine(range_error(field, x, lo, hi, hi_name));
  return x;
}

const std::string& string_field(const JsonValue& v, const std::string& field) {
  if (!v.is_string()) throw BadLine(field + ": must be a string");
  return v.str();
}

int64_t token_count(const JsonValue& v, const std::string& field, int64_t max_tokens) {
  return integer_field(v, field, 1, max_tokens, "max_tokens");
}

int64_t parse_decimal(std::string_view text, const std::string& field, int64_t lo, int64_t hi, const char* hi_name) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  int64_t x = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    throw BadLine(field + ": must be an integer (got '" + std::string(text) + "')");
  }
  if (x < lo || x > hi) throw BadLine(range_error(field, x, lo, hi, hi_name));
  return x;
}

std::string format_seconds(int64_t ns) {
  char buf[64];
  const char* sign = ns < 0 ? "-" : "";
  const uint64_t a = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::snprintf(buf, sizeof buf, "%s%llu.%09llu s", sign, static_cast<unsigned long long>(a / 1000000000ULL),
                static_cast<unsigned long long>(a % 1000000000ULL));
  return buf;
}

}  // namespace kvsim
