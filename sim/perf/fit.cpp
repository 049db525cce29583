#include "sim/perf/fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "sim/core/check.h"
#include "sim/metrics/quantiles.h"

namespace kvsim {

std::vector<double> fit_relative_nonnegative(const std::vector<std::vector<double>>& X, const std::vector<double>& y) {
  KVSIM_CHECK(!X.empty() && X.size() == y.size(), "fit needs one row per observation");
  const size_t cols = X.front().size();
  std::vector<bool> active(cols, true);
  std::vector<double> coef(cols, 0.0);
  for (size_t round = 0; round < cols; ++round) {
    std::vector<size_t> idx;
    for (size_t c = 0; c < cols; ++c)
      if (active[c]) idx.push_back(c);
    if (idx.empty()) break;
    Eigen::MatrixXd A(static_cast<Eigen::Index>(X.size()), static_cast<Eigen::Index>(idx.size()));
    Eigen::VectorXd b(static_cast<Eigen::Index>(X.size()));
    for (size_t r = 0; r < X.size(); ++r) {
      const double w = y[r] > 0 ? 1.0 / y[r] : 0.0;
      for (size_t j = 0; j < idx.size(); ++j)
        A(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j)) = X[r][idx[j]] * w;
      b(static_cast<Eigen::Index>(r)) = y[r] * w;
    }
    const Eigen::VectorXd sol = A.colPivHouseholderQr().solve(b);
    bool negative = false;
    std::fill(coef.begin(), coef.end(), 0.0);
    for (size_t j = 0; j < idx.size(); ++j) {
      const double v = sol(static_cast<Eigen::Index>(j));
      coef[idx[j]] = std::isfinite(v) ? v : 0.0;
    }
    // Drop the most negative coefficient and refit.
    size_t worst = cols;
    for (size_t j : idx)
      if (coef[j] < 0 && (worst == cols || coef[j] < coef[worst])) worst = j;
    if (worst != cols) {
      active[worst] = false;
      negative = true;
    }
    if (!negative) break;
  }
  for (double& c : coef) c = std::max(0.0, c);
  return coef;
}

ErrorStats relative_errors(const std::vector<double>& predicted, const std::vector<double>& measured) {
  KVSIM_CHECK(predicted.size() == measured.size(), "relative_errors needs matching vectors");
  std::vector<double> e;
  for (size_t i = 0; i < predicted.size(); ++i)
    if (measured[i] > 0) e.push_back(std::abs(predicted[i] - measured[i]) / measured[i]);
  ErrorStats s;
  s.count = static_cast<int>(e.size());
  s.median = e.empty() ? 0.0 : quantile(e, 0.5);
  s.p90 = e.empty() ? 0.0 : quantile(e, 0.9);
  return s;
}

}  // namespace kvsim
