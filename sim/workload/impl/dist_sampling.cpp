#include "sim/workload/impl/dist_sampling.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <utility>

#include "sim/core/errors.h"
#include "sim/model/json.h"

namespace kvsim {

double sample_raw(const DistSpec& d, RandomStream& rng) {
  if (d.kind == "fixed") return d.value;
  if (d.kind == "uniform") return rng.uniform(d.min, d.max);
  if (d.kind == "normal") return rng.normal(d.mean, d.stddev);
  if (d.kind == "exponential") return rng.exponential(1.0 / d.mean);
  if (d.kind == "lognormal") {
    const double sigma2 = std::log1p((d.stddev * d.stddev) / (d.mean * d.mean));
    return rng.lognormal(std::log(d.mean) - 0.5 * sigma2, std::sqrt(sigma2));
  }
  throw InputError("unknown distribution kind '" + d.kind + "'");
}

int64_t sample_tokens(const DistSpec& d, RandomStream& rng) {
  double x;
  if (d.kind == "uniform") {
    // Integer bounds, both inclusive.
    const int64_t lo = static_cast<int64_t>(std::ceil(d.min));
    x = static_cast<double>(rng.uniform_int(lo, std::max(lo, static_cast<int64_t>(d.max))));
  } else {
    x = sample_raw(d, rng);
  }
  x = std::max(x, std::max(d.min, 1.0));
  if (d.max > 0.0) x = std::min(x, d.max);
  x = std::min(x, kMaxDistValue);  // a far tail of a wide distribution; also keeps llround defined
  return std::max<int64_t>(1, std::llround(x));
}

double sample_seconds(const DistSpec& d, RandomStream& rng) {
  double x = std::max(sample_raw(d, rng), std::max(d.min, 0.0));
  if (d.max > 0.0) x = std::min(x, d.max);
  return std::min(x, kMaxDistValue);
}

SimTime advance_clock(SimTime t, double seconds, const std::string& what) {
  const double ns = std::nearbyint(seconds * 1e9);
  if (!(ns >= 0.0) || ns > 9.2e18 || t.ns() > INT64_MAX - static_cast<int64_t>(ns))
    throw InputError(what + ": arrival times run past the end of the simulated clock (about 292 years)");
  return t + Duration::ns(static_cast<int64_t>(ns));
}

void validate_dist(const DistSpec& d, const std::string& where) {
  auto fail = [&](const std::string& key, const std::string& msg) { throw InputError(where + "." + key + ": " + msg); };
  auto got = [](double v) { return " (got " + json_number(v) + ")"; };
  // Each parameter under its own key (the message named `kind` for all of them).
  const std::pair<const char*, double> params[] = {
      {"value", d.value}, {"mean", d.mean}, {"stddev", d.stddev}, {"min", d.min}, {"max", d.max}};
  for (const auto& [key, v] : params) {
    if (!std::isfinite(v)) fail(key, "must be a finite number");
    if (std::fabs(v) > kMaxDistValue) fail(key, "must be at most 1e9" + got(v));
  }
  if (d.min < 0.0) fail("min", "must be >= 0" + got(d.min));
  if (d.max < 0.0) fail("max", "must be >= 0 (0 = no ceiling)" + got(d.max));
  if (d.max > 0.0 && d.max < d.min) fail("max", "must be >= min" + got(d.max));
  if (d.kind == "fixed") {
    if (d.value < 0.0) fail("value", "must be >= 0" + got(d.value));
  } else if (d.kind == "uniform") {
    if (!(d.max > 0.0)) fail("max", "uniform needs max > 0" + got(d.max));
  } else if (d.kind == "normal" || d.kind == "lognormal" || d.kind == "exponential") {
    if (!(d.mean > 0.0)) fail("mean", "must be > 0" + got(d.mean));
    if (d.kind != "exponential" && d.stddev < 0.0) fail("stddev", "must be >= 0" + got(d.stddev));
  } else {
    fail("kind", "unknown '" + d.kind + "' (valid: fixed, uniform, normal, lognormal, exponential)");
  }
}

}  // namespace kvsim
