#pragma once
// Least-squares fitting helpers (Eigen stays inside sim/perf/).
#include <vector>

namespace kvsim {

// Minimises sum_i ((X_i . c - y_i) / y_i)^2, i.e. relative error, so small and large points weigh
// alike. Coefficients that come out negative are fixed at 0 and the rest refitted, so the result is
// non-negative (a time model whose terms can only add). X is row-major, one row per observation.
std::vector<double> fit_relative_nonnegative(const std::vector<std::vector<double>>& X, const std::vector<double>& y);

struct ErrorStats {
  int count = 0;
  double median = 0;  // of |predicted - measured| / measured
  double p90 = 0;
};
ErrorStats relative_errors(const std::vector<double>& predicted, const std::vector<double>& measured);

}  // namespace kvsim
