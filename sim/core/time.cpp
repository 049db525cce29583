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

}  // namespace kvsim
