#pragma once
// GemmTable: BF16 GEMM latency from a measured (m, n, k) grid.
//   * a measured point comes back exactly;
//   * along m (tokens) latency is linear between measured m values;
//   * across (n, k) the utilisation u = SOL / latency is interpolated bilinearly in (log n, log k)
//     (aiconfigurator's recipe: interpolate efficiency, not time), so other shapes borrow the
//     efficiency of their neighbours;
//   * beyond the grid (m, n or k) the boundary utilisation is held and scaled by the query's SOL.
// SOL(m, n, k) = max(2mnk / peak_flops, 2 (mk + nk + mn) / hbm_bandwidth). Utilisation is capped at
// 1, so no answer beats the physical limit.
#include <vector>

#include "sim/perf/latency_tables.h"

namespace kvsim {

struct PeakRates {
  double flops = 0;          // FLOP/s
  double bytes_per_s = 0;    // HBM bytes/s
  double operand_bytes = 2;  // bytes per element of A, B and C
};

double gemm_sol_seconds(double m, double n, double k, const PeakRates& peak);

class GemmTable {
 public:
  GemmTable() = default;
  GemmTable(const std::vector<GemmPoint>& points, const PeakRates& peak);
  bool empty() const { return ms_.empty(); }
  double seconds(double m, double n, double k) const;
  const std::vector<double>& m_grid() const { return ms_; }

 private:
  double at(size_t im, size_t in, size_t ik) const { return t_[(im * ns_.size() + in) * ks_.size() + ik]; }
  double util(size_t im, double n, double k) const;  // < 0 when no neighbour was measured
  std::vector<double> ms_, ns_, ks_;
  std::vector<double> t_;  // seconds, < 0 where not measured
  PeakRates peak_;
};

// A piecewise-linear function through (x, y) points, x increasing; beyond the last point it grows in
// proportion to x (y(x) = y_last * x / x_last), below the first it is y_first. O(log n) lookup.
class Curve1D {
 public:
  Curve1D() = default;
  Curve1D(std::vector<double> xs, std::vector<double> ys);
  double operator()(double x) const;
  bool empty() const { return xs_.empty(); }

 private:
  std::vector<double> xs_, ys_;
};

}  // namespace kvsim
