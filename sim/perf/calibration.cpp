#include "sim/perf/calibration.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/metrics/quantiles.h"
#include "sim/perf/gemm_table.h"

namespace kvsim {

double causal_pairs(double len, int window) {
  if (window <= 0 || len <= window) return len * (len + 1) / 2;
  const double w = window;
  return w * (w + 1) / 2 + (len - w) * w;
}

double experts_touched(double n, int k, int e) {
  if (e <= 0 || n <= 0) return 0.0;
  return e * (1.0 - std::pow(1.0 - static_cast<double>(std::min(k, e)) / e, n));
}

namespace {

RooflineFit fit_roofline(const LatencyTables& t, const GpuSpec& g) {
  RooflineFit r;
  r.eta_compute = g.compute_efficiency;
  r.eta_memory = g.memory_efficiency;
  r.floor_s = g.kernel_floor.seconds();
  if (t.gemm.empty()) return r;
  std::vector<std::vector<double>> xc, xm;
  std::vector<double> yc, ym;
  for (const auto& p : t.gemm) {
    const double fc = 2 * p.m * p.n * p.k / g.bf16_flops;
    const double fm = 2 * (p.m * p.k + p.n * p.k + p.m * p.n) / g.hbm_bandwidth;
    if (fc > fm) {
      xc.push_back({1.0, fc});
      yc.push_back(p.seconds);
    } else {
      xm.push_back({1.0, fm});
      ym.push_back(p.seconds);
    }
  }
  double floor_c = r.floor_s, floor_m = r.floor_s;
  if (xc.size() >= 2) {
    const auto c = fit_relative_nonnegative(xc, yc);
    if (c[1] > 0) r.eta_compute = std::min(1.0, 1.0 / c[1]);
    floor_c = c[0];
  }
  if (xm.size() >= 2) {
    const auto c = fit_relative_nonnegative(xm, ym);
    if (c[1] > 0) r.eta_memory = std::min(1.0, 1.0 / c[1]);
    floor_m = c[0];
  }
  r.floor_s = std::min(floor_c, floor_m);
  r.rows = static_cast<int>(t.gemm.size());
  std::vector<double> pred, meas;
  for (const auto& p : t.gemm) {
    const double fc = 2 * p.m * p.n * p.k / (r.eta_compute * g.bf16_flops);
    const double fm = 2 * (p.m * p.k + p.n * p.k + p.m * p.n) / (r.eta_memory * g.hbm_bandwidth);
    pred.push_back(r.floor_s + std::max(fc, fm));
    meas.push_back(p.seconds);
  }
  r.error = relative_errors(pred, meas);
  return r;
}

ErrorStats gemm_holdout(const LatencyTables& t, const GpuSpec& g) {
  std::vector<double> ks;
  for (const auto& p : t.gemm) ks.push_back(p.k);
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  const PeakRates peak{g.bf16_flops, g.hbm_bandwidth, 2};
  std::vector<double> pred, meas;
  for (size_t j = 1; j + 1 < ks.size(); ++j) {
    std::vector<GemmPoint> train, test;
    for (const auto& p : t.gemm) (p.k == ks[j] ? test : train).push_back(p);
    const GemmTable table(train, peak);
    for (const auto& p : test) {
      pred.push_back(table.seconds(p.m, p.n, p.k));
      meas.push_back(p.seconds);
    }
  }
  return relative_errors(pred, meas);
}

double median_eta_prefill(const LatencyTables& t, const GpuSpec& g) {
  std::vector<double> v;
  for (const auto& p : t.context_attention)
    if (p.length >= 4096 && p.window == 0)
      v.push_back(4.0 * p.num_heads * p.head_dim * p.batch * causal_pairs(p.length, 0) / p.seconds / g.bf16_flops);
  return v.empty() ? g.compute_efficiency : std::min(1.0, quantile(v, 0.5));
}

double median_eta_decode(const LatencyTables& t, const GpuSpec& g) {
  std::vector<double> v;
  for (const auto& p : t.generation_attention) {
    if (p.window != 0) continue;
    const double bytes = p.batch * p.length * 2.0 * p.num_kv_heads * p.head_dim * 2.0;
    if (bytes >= 256.0 * 1024 * 1024) v.push_back(bytes / p.seconds / g.hbm_bandwidth);
  }
  return v.empty() ? g.memory_efficiency : std::min(1.0, quantile(v, 0.5));
}

std::optional<MoeFit> fit_moe(const LatencyTables& t, const GpuSpec& g) {
  if (t.moe.empty()) return std::nullopt;
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (const auto& p : t.moe) {
    const double local_e = static_cast<double>(p.num_experts) / p.moe_ep;
    const double inter = p.inter / p.moe_tp;
    const double touched = experts_touched(p.num_tokens, p.topk, p.num_experts) / p.moe_ep;
    const double bytes = std::min(touched, local_e) * 3.0 * p.hidden * inter * 2.0 + 4.0 * p.num_tokens * p.hidden;
    const double flops = 6.0 * p.num_tokens * p.topk * p.hidden * inter / p.moe_ep;
    x.push_back({1.0, bytes, flops});
    y.push_back(p.seconds);
  }
  auto c = fit_relative_nonnegative(x, y);
  MoeFit f;
  f.per_call_s = c[0];
  f.per_byte_s = std::max(c[1], 1.0 / g.hbm_bandwidth);  // never faster than the hardware
  f.per_flop_s = std::max(c[2], 1.0 / g.bf16_flops);
  f.rows = static_cast<int>(y.size());
  std::vector<double> pred;
  for (const auto& row : x) pred.push_back(f.per_call_s + f.per_byte_s * row[1] + f.per_flop_s * row[2]);
  f.error = relative_errors(pred, y);
  return f;
}

// Picks the table shape nearest to the query among rows with this head_dim and window (window rows
// fall back to full-attention rows when the table has none).
template <class Fn>
bool nearest_shape(const std::vector<AttentionPoint>& rows, int heads, int kv, int hd, int window, Fn&& out) {
  for (int w : {window, 0}) {
    std::map<std::pair<int, int>, int> shapes;
    for (const auto& p : rows)
      if (p.head_dim == hd && p.window == w) ++shapes[{p.num_heads, p.num_kv_heads}];
    if (shapes.empty()) continue;
    double best = 1e300;
    std::pair<int, int> pick{0, 0};
    for (const auto& [s, n] : shapes) {
      const double d = 2 * std::abs(std::log(static_cast<double>(s.first) / heads)) +
                       std::abs(std::log(static_cast<double>(s.second) / std::max(1, kv)));
      if (d < best) {
        best = d;
        pick = s;
      }
    }
    out(pick.first, pick.second, w);
    return true;
  }
  return false;
}

}  // namespace

std::optional<PrefillAttentionFit> fit_prefill_attention(const LatencyTables& t, int heads, int kv, int hd,
                                                         int window) {
  PrefillAttentionFit f;
  if (!nearest_shape(t.context_attention, heads, kv, hd, window, [&](int h, int k, int w) {
        f.table_heads = h;
        f.table_kv_heads = k;
        f.table_window = w;
      }))
    return std::nullopt;
  f.table_head_dim = hd;
  const double scale = static_cast<double>(heads) / f.table_heads;
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (const auto& p : t.context_attention) {
    if (p.num_heads != f.table_heads || p.num_kv_heads != f.table_kv_heads || p.head_dim != hd ||
        p.window != f.table_window)
      continue;
    x.push_back({1.0, p.batch * causal_pairs(p.length, p.window), p.batch * p.length});
    y.push_back(p.seconds * scale);
  }
  const auto c = fit_relative_nonnegative(x, y);
  f.per_call_s = c[0];
  f.per_pair_s = c[1];
  f.per_token_s = c[2];
  f.rows = static_cast<int>(y.size());
  std::vector<double> pred;
  for (const auto& r : x) pred.push_back(c[0] + c[1] * r[1] + c[2] * r[2]);
  f.error = relative_errors(pred, y);
  return f;
}

std::optional<DecodeAttentionFit> fit_decode_attention(const LatencyTables& t, int heads, int kv, int hd, int window) {
  DecodeAttentionFit f;
  if (!nearest_shape(t.generation_attention, heads, kv, hd, window, [&](int h, int k, int w) {
        f.table_heads = h;
        f.table_kv_heads = k;
        f.table_window = w;
      }))
    return std::nullopt;
  f.table_head_dim = hd;
  const double scale = static_cast<double>(std::max(1, kv)) / f.table_kv_heads;
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (const auto& p : t.generation_attention) {
    if (p.num_heads != f.table_heads || p.num_kv_heads != f.table_kv_heads || p.head_dim != hd ||
        p.window != f.table_window)
      continue;
    const double ctx = p.window > 0 ? std::min<double>(p.length, p.window) : p.length;
    x.push_back({1.0, p.batch, p.batch * ctx});
    y.push_back(p.seconds * scale);
  }
  const auto c = fit_relative_nonnegative(x, y);
  f.per_call_s = c[0];
  f.per_request_s = c[1];
  f.per_context_token_s = c[2];
  f.rows = static_cast<int>(y.size());
  std::vector<double> pred;
  for (const auto& r : x) pred.push_back(c[0] + c[1] * r[1] + c[2] * r[2]);
  f.error = relative_errors(pred, y);
  return f;
}

GpuCalibration calibrate_gpu(const LatencyTables& t, const GpuSpec& g, bool with_holdout) {
  GpuCalibration c;
  c.gpu = g.name;
  c.gemm = fit_roofline(t, g);
  if (with_holdout && !t.gemm.empty()) c.gemm_holdout = gemm_holdout(t, g);
  c.attention_prefill_eta = median_eta_prefill(t, g);
  c.attention_decode_eta = median_eta_decode(t, g);
  for (const auto& p : t.generation_attention)
    if (c.attention_decode_floor_s == 0 || p.seconds < c.attention_decode_floor_s)
      c.attention_decode_floor_s = p.seconds;
  c.moe = fit_moe(t, g);
  return c;
}

}  // namespace kvsim
