#include "sim/core/time.h"

#include <cmath>
#include <stdexcept>

namespace kvsim {

Duration duration_from_seconds(double seconds) {
  if (std::isnan(seconds) || std::isinf(seconds) || seconds < 0.0) {
    throw std::invalid_argument("duration_from_seconds: invalid duration " + std::to_string(seconds) + " s");
  }
  const double ns = std::nearbyint(seconds * 1e9);
  if (ns > 9.2e18) throw std::invalid_argument("duration_from_seconds: duration too large");
  return Duration::ns(static_cast<int64_t>(ns));
}

bool valid_civil_date(int64_t year, int64_t month, int64_t day) {
  static constexpr int kDaysIn[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1) return false;
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return day <= kDaysIn[month - 1] + (month == 2 && leap ? 1 : 0);
}

}  // namespace kvsim
