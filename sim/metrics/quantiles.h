#pragma once
// Exact quantiles and means over in-memory samples.
//
// quantile() uses linear interpolation between closest ranks, numpy's default
// (`np.percentile(x, q, method="linear")`): for sorted x[0..n-1] and q in [0, 1], the position is
// h = q * (n - 1) and the result x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]),
// computed with numpy's two-sided lerp so results match numpy to the last bit for typical inputs.
// Example: 1..100 gives p50 = 50.5, p90 = 90.1, p99 = 99.01.
// An empty input gives NaN (written as null in JSON).
#include <cstdint>
#include <limits>
#include <vector>

namespace kvsim {

// `sorted` must be ascending (checked only in size, not order). q in [0, 1].
double quantile_sorted(const std::vector<double>& sorted, double q);
double quantile_sorted(const std::vector<float>& sorted, double q);
// Copies and sorts.
double quantile(std::vector<double> values, double q);
// Arithmetic mean (Kahan-free plain sum in input order, so it is deterministic); NaN when empty.
double mean(const std::vector<double>& values);
double mean(const std::vector<float>& values);

// The figures reported for every latency distribution: mean, p50 / p90 / p95 / p99 / p99.9 and the
// population standard deviation (numpy's np.std, ddof 0). Figures of an empty distribution are NaN
// (null in JSON).
struct Distribution {
  int64_t count = 0;
  double mean = std::numeric_limits<double>::quiet_NaN();
  double p50 = std::numeric_limits<double>::quiet_NaN();
  double p90 = std::numeric_limits<double>::quiet_NaN();
  double p95 = std::numeric_limits<double>::quiet_NaN();
  double p99 = std::numeric_limits<double>::quiet_NaN();
  double p999 = std::numeric_limits<double>::quiet_NaN();
  double stddev = std::numeric_limits<double>::quiet_NaN();
};

// Summarises `values`, reordering them in place (partial selection, not a full sort; the figures equal
// those of quantile_sorted on the sorted values). Empty input: count 0, all figures NaN.
Distribution summarize_in_place(std::vector<double>& values);
Distribution summarize_in_place(std::vector<float>& values);

}  // namespace kvsim
