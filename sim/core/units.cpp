#include "sim/core/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>

#include "sim/core/errors.h"

namespace kvsim {
namespace {

// Splits "2.5us" into 2.5 and "us". Rejects empty numbers, trailing junk and non-finite values.
bool split_number(const std::string& text, double* value, std::string* unit) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  size_t start = i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' || text[i] == 'e' ||
                             text[i] == 'E' || text[i] == '+' || text[i] == '-')) {
    // Stop at an 'e'/'E' that starts a unit such as "EB" (not used) — digits must follow an exponent.
    if ((text[i] == 'e' || text[i] == 'E') &&
        !(i + 1 < text.size() &&
          (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '-' || text[i + 1] == '+')))
      break;
    ++i;
  }
  if (i == start) return false;
  try {
    size_t used = 0;
    *value = std::stod(text.substr(start, i - start), &used);
    if (used != i - start) return false;
  } catch (...) {
    return false;
  }
  if (!std::isfinite(*value)) return false;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  size_t end = text.size();
  while (end > i && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  *unit = text.substr(i, end - i);
  return true;
}

[[noreturn]] void bad(const std::string& what, const std::string& text, const std::string& expected) {
  throw InputError(what + ": cannot parse '" + text + "' as " + expected);
}

const std::map<std::string, double>& byte_units() {
  static const std::map<std::string, double> k = {
      {"", 1.0},    {"B", 1.0},      {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
      {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  return k;
}

}  // namespace

int64_t parse_bytes(const std::string& text, const std::string& what) {
  double v = 0;
  std::string unit;
  if (!split_number(text, &v, &unit)) bad(what, text, "bytes (e.g. 80GiB)");
  auto it = byte_units().find(unit);
  if (it == byte_units().end()) bad(what, text, "bytes (units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)");
  if (v < 0) bad(what, text, "a non-negative size");
  if (!(v * it->second < 9.0e18)) bad(what, text, "a size below 8 EiB");
  return static_cast<int64_t>(std::llround(v * it->second));
}

double parse_bandwidth(const std::string& text, const std::string& what) {
  double v = 0;
  std::string unit;
  if (!split_number(text, &v, &unit)) bad(what, text, "bandwidth (e.g. 900GB/s)");
  if (unit.size() < 3 || unit.substr(unit.size() - 2) != "/s") bad(what, text, "bandwidth with a /s unit");
  std::string base = unit.substr(0, unit.size() - 2);
  if (v <= 0) bad(what, text, "a positive bandwidth");
  double bytes_per_s = 0;
  if (base.size() >= 2 && base.back() == 'b') {  // bits: Gb/s, Mb/s
    static const std::map<std::string, double> bits = {{"Kb", 1e3}, {"Mb", 1e6}, {"Gb", 1e9}, {"Tb", 1e12}};
    auto it = bits.find(base);
    if (it == bits.end()) bad(what, text, "bandwidth (Kb/s, Mb/s, Gb/s, Tb/s or bytes per second)");
    bytes_per_s = v * it->second / 8.0;
  } else {
    auto it = byte_units().find(base);
    if (it == byte_units().end() || base.empty()) bad(what, text, "bandwidth (e.g. 900GB/s, 400Gb/s)");
    bytes_per_s = v * it->second;
  }
  // Outside these bounds a transfer time overflows the clock or underflows to nothing.
  if (!(bytes_per_s >= kMinBandwidth && bytes_per_s <= kMaxBandwidth))
    bad(what, text, "a bandwidth between 1 MB/s and 1e9 TB/s");
  return bytes_per_s;
}

Duration parse_duration(const std::string& text, const std::string& what) {
  double v = 0;
  std::string unit;
  if (!split_number(text, &v, &unit)) bad(what, text, "a duration (e.g. 2.5us)");
  static const std::map<std::string, double> k = {{"ns", 1e-9}, {"us", 1e-6},  {"ms", 1e-3},
                                                  {"s", 1.0},   {"min", 60.0}, {"h", 3600.0}};
  auto it = k.find(unit);
  if (it == k.end()) bad(what, text, "a duration (units ns, us, ms, s, min, h)");
  if (v < 0) bad(what, text, "a non-negative duration");
  // The clock counts int64 nanoseconds (about 292 years); duration_from_seconds would throw a
  // std::invalid_argument that names neither file nor key.
  if (!(v * it->second <= kMaxDurationSeconds)) bad(what, text, "a duration of at most 1e9 s");
  return duration_from_seconds(v * it->second);
}

double parse_flops(const std::string& text, const std::string& what) {
  double v = 0;
  std::string unit;
  if (!split_number(text, &v, &unit)) bad(what, text, "FLOP/s (e.g. 989TFLOP/s)");
  static const std::map<std::string, double> k = {{"FLOP/s", 1.0},   {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12},
                                                  {"PFLOP/s", 1e15}, {"TOPS", 1e12},   {"TFLOPS", 1e12}};
  auto it = k.find(unit);
  if (it == k.end()) bad(what, text, "FLOP/s (units GFLOP/s, TFLOP/s, PFLOP/s)");
  if (v <= 0) bad(what, text, "a positive FLOP/s");
  // Outside these bounds a step time overflows the clock or underflows to nothing.
  if (!(v * it->second >= kMinFlops && v * it->second <= kMaxFlops))
    bad(what, text, "FLOP/s between 1 TFLOP/s and 1e9 PFLOP/s");
  return v * it->second;
}

std::string format_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%.0f B", v);
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[u]);
  return buf;
}

bool decimal_text(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789+-.eE") == std::string_view::npos;
}

}  // namespace kvsim
