#include "sim/perf/moe_table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "sim/core/check.h"

namespace kvsim {

double tokens_per_expert(double n, int k, int e) { return e > 0 ? n * k / e : 0.0; }

double moe_sol_seconds(double n, const MoeShape& s, const PeakRates& peak) {
  const double ep = std::max(s.ep, 1);
  const double flops = 6.0 * n * s.topk * s.hidden * s.inter / ep;
  const double touched = std::min(static_cast<double>(s.num_experts), n * s.topk) / ep;
  const double bytes = touched * 3.0 * s.hidden * s.inter * peak.operand_bytes + 4.0 * n * s.hidden * 2.0;
  return std::max(flops / peak.flops, bytes / peak.bytes_per_s);
}

MoeTable::MoeTable(const std::vector<MoePoint>& points, const PeakRates& peak) {
  // (hidden, inter per rank, topk, experts, ep) -> tokens -> seconds (ordered: iteration reaches results).
  // A shape measured twice (the Kimi-K2.5 shape is in the collection twice per layout) reads the mean of
  // its copies; a map overwrite kept the last, up to 1.36 x apart from the other.
  std::map<std::tuple<double, double, int, int, int>, std::map<double, std::pair<double, int>>> sums;
  for (const auto& p : points) {
    auto& [sum, count] = sums[{p.hidden, p.inter / p.moe_tp, p.topk, p.num_experts, p.moe_ep}][p.num_tokens];
    sum += p.seconds;
    ++count;
  }
  std::map<std::tuple<double, double, int, int, int>, std::map<double, double>> rows;
  for (const auto& [key, by_n] : sums)
    for (const auto& [n, sc] : by_n) {
      const double seconds = sc.first / sc.second;
      rows[key][n] = seconds;
      if (min_call_s_ == 0 || seconds < min_call_s_) min_call_s_ = seconds;
    }
  for (const auto& [key, by_n] : rows) {
    Curve c;
    c.shape = {std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), std::get<4>(key)};
    for (const auto& [n, s] : by_n) {
      c.log_tpe.push_back(std::log(tokens_per_expert(n, c.shape.topk, c.shape.num_experts)));
      // Not capped at 1: a power-law row touches fewer experts than the balanced SOL assumes and may
      // beat it at a few tokens (1,078 H100 BF16 rows); capped, it came back up to 1.4 x too slow.
      c.util.push_back(moe_sol_seconds(n, c.shape, peak) / s);
    }
    shapes_.push_back(std::move(c));
  }
}

const MoeTable::Curve& MoeTable::nearest_curve(const MoeShape& q) const {
  KVSIM_CHECK(!shapes_.empty(), "MoeTable queried without rows");
  // The model's own dimensions (hidden, experts, topk) and the layout's (inter per rank, ep).
  auto model_dist = [&](const MoeShape& s) {
    return std::abs(std::log(s.hidden / q.hidden)) +
           std::abs(std::log(static_cast<double>(s.num_experts) / q.num_experts)) +
           std::abs(std::log(static_cast<double>(s.topk) / q.topk));
  };
  auto dist = [&](const MoeShape& s) {
    return model_dist(s) + std::abs(std::log(s.inter / q.inter)) +
           std::abs(std::log(static_cast<double>(s.ep) / std::max(q.ep, 1)));
  };
  const Curve* best = &shapes_.front();
  double d_best = dist(best->shape);
  for (const Curve& c : shapes_) {
    const double d = dist(c.shape);
    // Equal distances: the shape of the query's own model first (an EP x moe-TP layout ties its EP-only
    // and TP-only neighbours with other models' shapes: Qwen3-235B at EP 2 x moe-TP 2 read Qwen3-30B's
    // curve, 1.4 x its own); then the first in map order, deterministically.
    const bool tie = std::abs(d - d_best) <= 1e-9 * std::max(1.0, d_best);
    if ((!tie && d < d_best) || (tie && model_dist(c.shape) < model_dist(best->shape) - 1e-12)) {
      d_best = d;
      best = &c;
    }
  }
  return *best;
}

MoeShape MoeTable::nearest(const MoeShape& q) const { return nearest_curve(q).shape; }

double MoeTable::utilisation(double n, const MoeShape& q) const {
  const Curve& c = nearest_curve(q);
  const double x = std::log(tokens_per_expert(n, q.topk, q.num_experts));
  const auto& xs = c.log_tpe;
  if (x <= xs.front()) return c.util.front();
  if (x >= xs.back()) return c.util.back();
  const size_t hi = static_cast<size_t>(std::lower_bound(xs.begin(), xs.end(), x) - xs.begin());
  if (xs[hi] == x) return c.util[hi];
  const double w = (x - xs[hi - 1]) / (xs[hi] - xs[hi - 1]);
  return (1 - w) * c.util[hi - 1] + w * c.util[hi];
}

double MoeTable::seconds(double n, const MoeShape& q, const PeakRates& query_peak) const {
  if (n <= 0) return 0.0;
  return std::max(min_call_s_, moe_sol_seconds(n, q, query_peak) / utilisation(n, q));
}

}  // namespace kvsim
