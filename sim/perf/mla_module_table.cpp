#include "sim/perf/mla_module_table.h"

#include <algorithm>
#include <cmath>

namespace kvsim {

bool mla_module_shape(const ModelSpec& m, const LayerSpec& l) {
  const AttentionShape& a = l.attn;
  // spec.head_dim is qk_nope + qk_rope for MLA models (config_reader.cpp).
  return l.kind == LayerKind::kMla && m.hidden_size == 7168 && a.q_lora_rank == 1536 && a.kv_lora_rank == 512 &&
         a.qk_rope_head_dim == 64 && m.head_dim == 128 + 64 && a.v_head_dim == 128;
}

MlaModuleTable::MlaModuleTable(const std::vector<MlaModulePoint>& points, const std::string& gemm,
                               const std::string& kv_dtype, int num_heads) {
  for (const MlaModulePoint& p : points)
    if (p.gemm == gemm && p.kv_dtype == kv_dtype && p.num_heads == num_heads)
      by_batch_[p.batch].emplace_back(p.length, p.seconds);
  for (auto& [batch, curve] : by_batch_) {
    std::sort(curve.begin(), curve.end());
    // A repeated length keeps its first row (the table builder already keeps one per shape).
    curve.erase(
        std::unique(curve.begin(), curve.end(), [](const auto& x, const auto& y) { return x.first == y.first; }),
        curve.end());
  }
}

double MlaModuleTable::along(const Curve& c, double length) {
  if (c.size() == 1 || length <= c.front().first) return c.front().second;
  auto hi = std::lower_bound(c.begin(), c.end(), length, [](const auto& p, double v) { return p.first < v; });
  if (hi == c.end()) hi = c.end() - 1;  // beyond the longest: extend the last segment
  const auto lo = hi - 1;
  const double f = (length - lo->first) / (hi->first - lo->first);
  return std::max(lo->second + f * (hi->second - lo->second), 0.0);
}

double MlaModuleTable::seconds(double batch, double length) const {
  if (by_batch_.empty()) return 0.0;
  // The batches measured up to this length (the context grid stops at fewer sequences for longer
  // prompts); when none reaches it, the ones reaching the longest measured length.
  double longest = 0;
  for (const auto& [b, c] : by_batch_) longest = std::max(longest, c.back().first);
  const double need = std::min(length, longest);
  std::vector<std::pair<double, const Curve*>> rows;
  for (const auto& [b, c] : by_batch_)
    if (c.back().first >= need) rows.emplace_back(b, &c);
  if (batch <= rows.front().first) return along(*rows.front().second, length);
  if (batch >= rows.back().first) return along(*rows.back().second, length) * batch / rows.back().first;
  auto hi = std::lower_bound(rows.begin(), rows.end(), batch, [](const auto& p, double v) { return p.first < v; });
  const auto lo = hi - 1;
  const double t_lo = along(*lo->second, length), t_hi = along(*hi->second, length);
  return t_lo + (batch - lo->first) / (hi->first - lo->first) * (t_hi - t_lo);
}

}  // namespace kvsim
