#include "sim/perf/gemm_table.h"

#include <algorithm>
#include <cmath>

#include "sim/core/check.h"

namespace kvsim {
namespace {

std::vector<double> unique_sorted(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

size_t index_of(const std::vector<double>& v, double x) {
  return static_cast<size_t>(std::lower_bound(v.begin(), v.end(), x) - v.begin());
}

// Bracket of x in grid v for interpolation in log space: indices (lo, hi) and weight of hi.
// Outside the grid both indices are the boundary (hold).
void bracket(const std::vector<double>& v, double x, size_t* lo, size_t* hi, double* w) {
  if (x <= v.front()) {
    *lo = *hi = 0;
    *w = 0;
    return;
  }
  if (x >= v.back()) {
    *lo = *hi = v.size() - 1;
    *w = 0;
    return;
  }
  *hi = index_of(v, x);
  if (v[*hi] == x) {
    *lo = *hi;
    *w = 0;
    return;
  }
  *lo = *hi - 1;
  *w = (std::log(x) - std::log(v[*lo])) / (std::log(v[*hi]) - std::log(v[*lo]));
}

}  // namespace

double gemm_sol_seconds(double m, double n, double k, const PeakRates& p) {
  const double compute = 2.0 * m * n * k / p.flops;
  const double memory = p.operand_bytes * (m * k + n * k + m * n) / p.bytes_per_s;
  return std::max(compute, memory);
}

GemmTable::GemmTable(const std::vector<GemmPoint>& points, const PeakRates& peak) : peak_(peak) {
  if (points.empty()) return;
  std::vector<double> m, n, k;
  for (const auto& p : points) {
    m.push_back(p.m);
    n.push_back(p.n);
    k.push_back(p.k);
  }
  ms_ = unique_sorted(m);
  ns_ = unique_sorted(n);
  ks_ = unique_sorted(k);
  t_.assign(ms_.size() * ns_.size() * ks_.size(), -1.0);
  for (const auto& p : points) {
    KVSIM_CHECK(p.seconds > 0, "GEMM table latency must be > 0");
    t_[(index_of(ms_, p.m) * ns_.size() + index_of(ns_, p.n)) * ks_.size() + index_of(ks_, p.k)] = p.seconds;
  }
}

double GemmTable::util(size_t im, double n, double k) const {
  size_t n0, n1, k0, k1;
  double wn, wk;
  bracket(ns_, n, &n0, &n1, &wn);
  bracket(ks_, k, &k0, &k1, &wk);
  const double m = ms_[im];
  double sum = 0, wsum = 0;
  const size_t ni[2] = {n0, n1};
  const size_t ki[2] = {k0, k1};
  const double wni[2] = {1 - wn, wn};
  const double wki[2] = {1 - wk, wk};
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) {
      const double w = wni[a] * wki[b];
      if (w <= 0) continue;
      const double t = at(im, ni[a], ki[b]);
      if (t <= 0) continue;
      sum += w * gemm_sol_seconds(m, ns_[ni[a]], ks_[ki[b]], peak_) / t;
      wsum += w;
    }
  if (wsum <= 0) return -1.0;
  return std::min(1.0, sum / wsum);
}

double GemmTable::seconds(double m, double n, double k) const {
  KVSIM_CHECK(!empty(), "GemmTable::seconds on an empty table");
  if (m <= 0 || n <= 0 || k <= 0) return 0.0;
  auto at_m = [&](size_t im) {
    // Exact measured point: return it untouched.
    const size_t in = index_of(ns_, n), ik = index_of(ks_, k);
    if (in < ns_.size() && ik < ks_.size() && ns_[in] == n && ks_[ik] == k && at(im, in, ik) > 0) return at(im, in, ik);
    double u = util(im, n, k);
    if (u <= 0) u = 0.5;  // no neighbour measured at this m: a neutral efficiency
    return gemm_sol_seconds(ms_[im], n, k, peak_) / u;
  };
  if (m >= ms_.back())
    return at_m(ms_.size() - 1) * gemm_sol_seconds(m, n, k, peak_) / gemm_sol_seconds(ms_.back(), n, k, peak_);
  if (m <= ms_.front()) return at_m(0);
  const size_t hi = index_of(ms_, m);
  if (ms_[hi] == m) return at_m(hi);
  const size_t lo = hi - 1;
  const double w = (m - ms_[lo]) / (ms_[hi] - ms_[lo]);
  return (1 - w) * at_m(lo) + w * at_m(hi);
}

Curve1D::Curve1D(std::vector<double> xs, std::vector<double> ys) : xs_(std::move(xs)), ys_(std::move(ys)) {
  KVSIM_CHECK(xs_.size() == ys_.size() && !xs_.empty(), "Curve1D needs matching, non-empty points");
  for (size_t i = 1; i < xs_.size(); ++i) KVSIM_CHECK(xs_[i] > xs_[i - 1], "Curve1D x must increase");
}

double Curve1D::operator()(double x) const {
  if (xs_.empty()) return 0.0;
  if (x <= xs_.front()) return ys_.front();
  if (x >= xs_.back()) return ys_.back() * x / xs_.back();
  const size_t hi = index_of(xs_, x);
  if (xs_[hi] == x) return ys_[hi];
  const size_t lo = hi - 1;
  const double w = (x - xs_[lo]) / (xs_[hi] - xs_[lo]);
  return (1 - w) * ys_[lo] + w * ys_[hi];
}

}  // namespace kvsim
