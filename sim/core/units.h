#pragma once
// Parsing of quantities with units, as written in scenarios and hardware files.
//   bytes:      "80GiB", "141GB", "512MiB", "4096" (plain bytes); KB/MB/GB/TB are powers of 1000,
//               KiB/MiB/GiB/TiB powers of 1024.
//   bandwidth:  "900GB/s", "3.35TB/s", "64GiB/s", "400Gb/s" (bits), returned in bytes per second.
//   duration:   "2.5us", "10ms", "1s", "300ns".
//   flops:      "989TFLOP/s", "1.979PFLOP/s", returned in FLOP per second.
// Each throws InputError with `what` (a key path) in the message when the text cannot be parsed or
// lies outside the range below (beyond it simulated times overflow the int64 nanosecond clock).
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/core/time.h"

namespace kvsim {

constexpr double kMaxDurationSeconds = 1e9;  // about 31.7 years
constexpr double kMinFlops = 1e12;           // 1 TFLOP/s
constexpr double kMaxFlops = 1e24;           // 1e9 PFLOP/s
constexpr double kMinBandwidth = 1e6;        // 1 MB/s
constexpr double kMaxBandwidth = 1e21;       // 1e9 TB/s

int64_t parse_bytes(const std::string& text, const std::string& what);
double parse_bandwidth(const std::string& text, const std::string& what);
Duration parse_duration(const std::string& text, const std::string& what);
double parse_flops(const std::string& text, const std::string& what);

// Whether `text` holds only the characters of a decimal number (digits, sign, point, exponent): strtod /
// stod would also read hex ("0x10" = 16), "inf" and "nan". Callers still parse it for its value.
bool decimal_text(std::string_view text);

// Human-readable forms for reports: "1.50 GiB", "144.0 KiB".
std::string format_bytes(double bytes);

}  // namespace kvsim
