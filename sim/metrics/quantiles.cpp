#include "sim/metrics/quantiles.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/core/check.h"

namespace kvsim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// numpy's _lerp: a + (b - a) * t, evaluated from the nearer end when t >= 0.5.
double lerp(double a, double b, double t) {
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

template <typename T>
double quantile_sorted_impl(const std::vector<T>& sorted, double q) {
  KVSIM_CHECK(q >= 0.0 && q <= 1.0, "quantile q must be in [0, 1], got " << q);
  if (sorted.empty()) return kNaN;
  const double h = q * static_cast<double>(sorted.size() - 1);
  const double lo = std::floor(h);
  const auto i = static_cast<size_t>(lo);
  if (i + 1 >= sorted.size()) return static_cast<double>(sorted.back());
  return lerp(static_cast<double>(sorted[i]), static_cast<double>(sorted[i + 1]), h - lo);
}

template <typename T>
double mean_impl(const std::vector<T>& values) {
  if (values.empty()) return kNaN;
  double sum = 0;
  for (T v : values) sum += static_cast<double>(v);
  return sum / static_cast<double>(values.size());
}

// quantile_sorted_impl(sorted(values), q) without a full sort: selects the two order statistics the
// interpolation reads. Calls must come in ascending q; `from` is the first position not yet fixed.
template <typename T>
double select_quantile(std::vector<T>& values, size_t& from, double q) {
  const double h = q * static_cast<double>(values.size() - 1);
  const double lo = std::floor(h);
  const auto i = static_cast<size_t>(lo);
  if (i >= from) {
    std::nth_element(values.begin() + static_cast<std::ptrdiff_t>(from),
                     values.begin() + static_cast<std::ptrdiff_t>(i), values.end());
    from = i + 1;
  }
  if (i + 1 >= values.size()) return static_cast<double>(values[i]);
  const T next = *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(i + 1), values.end());
  return lerp(static_cast<double>(values[i]), static_cast<double>(next), h - lo);
}

template <typename T>
Distribution summarize_impl(std::vector<T>& values) {
  Distribution d;
  d.count = static_cast<int64_t>(values.size());
  d.mean = mean_impl(values);
  if (values.empty()) return d;
  double squares = 0;
  for (T v : values) squares += (static_cast<double>(v) - d.mean) * (static_cast<double>(v) - d.mean);
  d.stddev = std::sqrt(squares / static_cast<double>(values.size()));
  size_t from = 0;
  d.p50 = select_quantile(values, from, 0.50);
  d.p90 = select_quantile(values, from, 0.90);
  d.p95 = select_quantile(values, from, 0.95);
  d.p99 = select_quantile(values, from, 0.99);
  d.p999 = select_quantile(values, from, 0.999);
  return d;
}

}  // namespace

double quantile_sorted(const std::vector<double>& sorted, double q) { return quantile_sorted_impl(sorted, q); }
double quantile_sorted(const std::vector<float>& sorted, double q) { return quantile_sorted_impl(sorted, q); }

double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return quantile_sorted_impl(values, q);
}

double mean(const std::vector<double>& values) { return mean_impl(values); }
double mean(const std::vector<float>& values) { return mean_impl(values); }

Distribution summarize_in_place(std::vector<double>& values) { return summarize_impl(values); }
Distribution summarize_in_place(std::vector<float>& values) { return summarize_impl(values); }

}  // namespace kvsim
