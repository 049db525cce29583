#include "sim/perf/mla_module_table.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace kvsim {

bool mla_module_shape(const ModelSpec& m, const LayerSpec& l) {
  const AttentionShape& a = l.attn;
  // spec.head_dim is qk_nope + qk_rope for MLA models (config_reader.cpp).
  return l.kind == LayerKind::kMla && m.hidden_size == 7168 && a.q_lora_rank == 1536 && a.kv_lora_rank == 512 &&
         a.qk_rope_head_dim == 64 && m.head_dim == 128 + 64 && a.v_head_dim == 128;
}

bool dsa_module_shape(const ModelSpec& m, const LayerSpec& l) {
  const AttentionShape& a = l.attn;
  return l.kind == LayerKind::kSparseMla && m.hidden_size == 6144 && a.q_lora_rank == 2048 && a.kv_lora_rank == 512 &&
         a.qk_rope_head_dim == 64 && m.head_dim == 192 + 64 && a.v_head_dim == 256 && a.index_n_heads == 32 &&
         a.index_head_dim == 128;
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
  for (const auto& [batch, curve] : by_batch_) longest_ = std::max(longest_, curve.back().first);
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
  // The largest batch measured up to this length (when none reaches it, up to the longest measured
  // length): its growth along the length extends the curves of the larger batches, which stop earlier (the
  // grids measure fewer sequences at longer lengths). The rows are far from linear in batch (B200 GLM-5
  // DSA decode, 8 heads, 1,024 cached tokens: 0.0891 ms at 64 sequences, 0.1063 ms at 128), so a larger
  // batch keeps its own measured level and borrows only the shape along the length.
  const double need = std::min(length, longest_);
  const Curve* ref = nullptr;
  double ref_batch = 0;
  for (const auto& [b, c] : by_batch_)
    if (c.back().first >= need) ref = &c, ref_batch = b;
  const auto value = [&](double b, const Curve& c) {
    if (c.back().first >= need || b <= ref_batch) return along(c, length);
    const double end = c.back().first, base = along(*ref, end);
    return base > 0 ? along(c, end) * along(*ref, length) / base : along(c, length);
  };
  const auto first = by_batch_.begin();
  const auto last = std::prev(by_batch_.end());
  if (batch <= first->first) return value(first->first, first->second);
  if (batch >= last->first) return value(last->first, last->second) * batch / last->first;
  const auto hi = by_batch_.lower_bound(batch);
  const auto lo = std::prev(hi);
  const double t_lo = value(lo->first, lo->second), t_hi = value(hi->first, hi->second);
  return t_lo + (batch - lo->first) / (hi->first - lo->first) * (t_hi - t_lo);
}

}  // namespace kvsim
