#include "sim/perf/parallel_terms.h"

#include <algorithm>
#include <string>

#include "sim/core/check.h"
#include "sim/core/errors.h"
#include "sim/perf/nccl_allreduce.h"

namespace kvsim {
namespace {

// BF16 activations cross the links (hidden states in, expert outputs back).
constexpr double kActivationBytes = 2.0;

// vLLM's global rank of (dp rank d, pipeline stage p, tp rank t): ParallelConfig / parallel_state.py
// lay ranks out as reshape(-1, dp, pp, tp), TP innermost. Ranks fill nodes in order.
int global_rank(const ParallelPlan& p, int d, int s, int t) { return (d * p.pp + s) * p.tp + t; }
bool same_node(const ParallelPlan& p, int a, int b) { return a / p.node_size() == b / p.node_size(); }

}  // namespace

bool is_dispatch_combine_backend(const std::string& name, const std::string& key) {
  // vllm/config/parallel.py All2AllBackend.
  static const char* const kGather[] = {"allgather_reducescatter", "naive"};
  static const char* const kDispatch[] = {"pplx",
                                          "deepep_high_throughput",
                                          "deepep_low_latency",
                                          "deepep_v2",
                                          "mori_high_throughput",
                                          "mori_low_latency",
                                          "nixl_ep",
                                          "flashinfer_all2allv",
                                          "flashinfer_nvlink_two_sided",
                                          "flashinfer_nvlink_one_sided"};
  for (const char* n : kGather)
    if (name == n) return false;
  for (const char* n : kDispatch)
    if (name == n) return true;
  std::string known;
  for (const char* n : kGather) known += (known.empty() ? "" : ", ") + std::string(n);
  for (const char* n : kDispatch) known += ", " + std::string(n);
  throw InputError(key + ": unknown all2all backend '" + name + "' (known: " + known + ")");
}

ParallelTerms::ParallelTerms(const ParallelPlan& plan, double hidden, int topk, int num_experts, int moe_layers)
    : plan_(plan), hidden_(hidden), moe_layers_(moe_layers) {
  cross_node_tp_ = plan.tp > plan.node_size();
  const bool multi_node = plan.dp * plan.pp * plan.tp > plan.node_size();
  if (multi_node && !(plan.inter.bandwidth > 0))
    throw InputError("a layout over " + std::to_string(plan.dp * plan.pp * plan.tp) +
                     " GPUs (dp x pp x tp) spans nodes of " + std::to_string(plan.node_size()) +
                     " GPUs and needs an inter-node link with a bandwidth");
  if ((plan.dp > 1 || plan.pp > 1) && !(plan.intra.bandwidth > 0))
    throw InputError("data or pipeline parallelism needs an intra-node link with a bandwidth");
  if (num_experts <= 0 || moe_layers <= 0) moe_layers_ = 0;
  ep_ = plan.expert_parallel && num_experts > 0 ? (plan.ep > 0 ? plan.ep : plan.dp * plan.tp) : 1;
  dispatch_combine_ = plan.dp > 1 && ep_ > 1 && is_dispatch_combine_backend(plan.all2all_backend, "all2all_backend");
  // resolve_parallel_plan refuses a dispatch / combine backend with an EP size below dp x tp (those are
  // vLLM's kernels, whose EP is dp x tp), naming the key.
  KVSIM_CHECK(!dispatch_combine_ || ep_ == plan.dp * plan.tp, "dispatch / combine with EP " << ep_);
  if (dispatch_combine_) {
    // EP peers of rank (0, 0, 0): every (d, 0, t); those on its node go over NVLink.
    int local = 0;
    for (int d = 0; d < plan.dp; ++d)
      for (int t = 0; t < plan.tp; ++t) local += same_node(plan, 0, global_rank(plan, d, 0, t)) ? 1 : 0;
    const double ep = ep_;
    topk_ = std::max(topk, 1);
    const double per_token = hidden * kActivationBytes * topk_;
    dispatch_bytes_per_token_ = per_token * (ep - 1.0) / ep;
    intra_fraction_ = (local - 1.0) / ep;
    inter_fraction_ = (ep - local) / ep;
  }
  // The DP ranks' ring: over the NICs as soon as one DP peer of rank 0 sits on another node. NCCL spreads
  // a ring's channels over the NICs of the node's GPUs in it (one each), as for the cross-node TP
  // all-reduce: min(NVLink, G_dp x NIC) with G_dp of rank 0's DP group on its node (TP 1 x DP 16 on two
  // nodes: 8 NICs; DP 2 x TP 8: one, each TP index running a ring of its own).
  dp_ring_ = plan.intra;
  int local_dp = 0;
  bool cross = false;
  for (int d = 0; d < plan.dp; ++d) {
    const bool here = same_node(plan, 0, global_rank(plan, d, 0, 0));
    local_dp += here ? 1 : 0;
    cross = cross || !here;
  }
  if (cross) {
    dp_ring_ = plan.inter;
    dp_ring_.bandwidth = std::min(plan.intra.bandwidth, local_dp * plan.inter.bandwidth);
  }
}

double ParallelTerms::moe_comm_seconds(double tokens) const {
  if (moe_layers_ == 0 || plan_.dp <= 1 || tokens <= 0) return 0.0;
  if (dispatch_combine_) {
    const double per_gpu = tokens / plan_.tp;
    // h * a * k per token, split by where its experts' ranks are.
    const double all = per_gpu * hidden_ * kActivationBytes * topk_;
    const double intra = all * intra_fraction_, inter = all * inter_fraction_;
    const double alpha = inter > 0 ? plan_.inter.latency_s : plan_.intra.latency_s;
    const double t = alpha + std::max(intra > 0 ? intra / plan_.intra.bandwidth : 0.0,
                                      inter > 0 ? inter / plan_.inter.bandwidth : 0.0);
    return moe_layers_ * 2.0 * t;  // dispatch + combine
  }
  // All-gather before and reduce-scatter after the experts, over the DP ranks.
  const double bytes = (plan_.dp - 1.0) * tokens * hidden_ * kActivationBytes;
  return moe_layers_ * 2.0 * dp_ring_.seconds(bytes);
}

double ParallelTerms::cross_node_allreduce_seconds(double bytes) const {
  if (!cross_node_tp_) return -1.0;
  return nccl_allreduce_seconds(nccl_layout(), bytes);
}

double ParallelTerms::cross_node_allreduce_traffic_seconds(double bytes) const {
  if (!cross_node_tp_) return -1.0;
  const double tp = plan_.tp;
  return 2.0 * (tp - 1.0) / tp * bytes / nccl_layout().bus_bandwidth;
}

NcclAllReduceLayout ParallelTerms::nccl_layout() const {
  // NCCL runs one ring per channel and spreads the channels over every NIC of the node (one per GPU),
  // so a node's inter-node share of the ring traffic leaves through G = GPUs-per-node NICs at once,
  // while each GPU still moves the whole ring traffic over NVLink: the slower of the two carries it.
  const double nics = static_cast<double>(plan_.node_size()) * plan_.inter.bandwidth;
  NcclAllReduceLayout l;
  l.ranks = plan_.tp;
  l.nodes = (plan_.tp + plan_.node_size() - 1) / plan_.node_size();
  l.nvlink_intra = plan_.intra_nvlink;
  l.bus_bandwidth = plan_.intra.bandwidth > 0 ? std::min(plan_.intra.bandwidth, nics) : nics;
  return l;
}

}  // namespace kvsim
