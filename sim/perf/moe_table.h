#pragma once
// MoeTable: the fused-MoE (grouped GEMM) kernel of one layer from a measured table, at the token count
// per expert that balanced routing gives.
//   * rows are grouped by shape per GPU: (hidden, inter / moe_tp, topk, num_experts, moe_ep);
//   * a query takes the nearest measured shape (sum of |log ratio| over hidden, inter, experts, topk,
//     ep): an exact shape exactly, an EP x moe-TP layout (no such rows: the collector skips them) the
//     nearest of its EP-only and TP-only neighbours (on equal distances the query model's own shape
//     first, then map order);
//   * along that shape's rows the utilisation u = SOL / latency is interpolated linearly in
//     log(tokens per expert), tokens per expert = num_tokens x topk / num_experts, and held beyond
//     the measured range, so the kernel's low efficiency at a few tokens per expert is measured, not
//     assumed;
//   * the answer is SOL(query) / u: a measured point comes back exactly, another shape borrows the
//     utilisation of the nearest one, but no call is faster than the table's fastest measured call.
// SOL = max(6 N k h I / ep / peak, (touched x 3 h I x w_bytes + 4 N h x 2) / bandwidth), touched =
// min(E, N x k) / ep local experts (balanced routing, as aiconfigurator's collector routes tokens),
// w_bytes the stored bytes per expert weight. Rows measured under power-law routing (load_latency_tables'
// moe_routing, latency_tables.h) go through the same balanced SOL: their "utilisation" then carries the
// skew (fewer experts touched at a few tokens, the busiest rank's extra tokens at many) and may exceed 1
// (no balanced row does), so it is not capped, and a measured point still comes back exactly.
#include <vector>

#include "sim/perf/gemm_table.h"
#include "sim/perf/latency_tables.h"

namespace kvsim {

struct MoeShape {
  double hidden = 0, inter = 0;  // inter per rank (after the moe-TP split)
  int topk = 0, num_experts = 0;
  // EP size: the rank holds num_experts / ep of the experts and runs only the tokens routed to them
  // (each expert still receives n x k / num_experts of n tokens), as the tables' moe_ep rows measure
  // it (aiconfigurator collector/vllm/collect_moe.py: n tokens on one GPU, balanced routing over all
  // experts, the local expert map).
  int ep = 1;
};

// Balanced routing: each of the e experts receives n x k / e tokens.
double tokens_per_expert(double n, int k, int e);
// SOL of one fused-MoE call under balanced routing (see above). peak.operand_bytes = weight bytes.
double moe_sol_seconds(double n, const MoeShape& s, const PeakRates& peak);

class MoeTable {
 public:
  MoeTable() = default;
  // `peak`: the compute peak and bytes per weight of the table's dtype (BF16: 2, FP8: 1).
  MoeTable(const std::vector<MoePoint>& points, const PeakRates& peak);
  bool empty() const { return shapes_.empty(); }
  // The measured shape a query borrows from.
  MoeShape nearest(const MoeShape& q) const;
  // Utilisation of the nearest shape at n tokens (tokens per expert of the query).
  double utilisation(double n, const MoeShape& q) const;
  // Seconds of one call of n tokens with the query's shape, weights at `query_peak` (its own dtype); no
  // less than the fastest call the table measures (min_call_seconds).
  double seconds(double n, const MoeShape& q, const PeakRates& query_peak) const;
  // The fastest call among the table's rows (any shape): a borrowed utilisation applied to a SOL divided
  // by EP divides the kernel's fixed cost too, and an EP x moe-TP layout came below every measured call
  // (DeepSeek-V3 at EP 8 x moe-TP 8 on B200 FP8: 7.8 us a layer at 4 tokens; the fastest row is 20.5 us).
  double min_call_seconds() const { return min_call_s_; }

 private:
  struct Curve {
    MoeShape shape;
    std::vector<double> log_tpe, util;  // ascending tokens per expert
  };
  const Curve& nearest_curve(const MoeShape& q) const;
  std::vector<Curve> shapes_;
  double min_call_s_ = 0;
};

}  // namespace kvsim
