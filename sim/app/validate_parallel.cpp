#include "sim/app/validate_parallel.h"

#include <cmath>

#include "sim/core/errors.h"
#include "sim/model/parallel_layout.h"
#include "sim/perf/parallel_terms.h"

namespace kvsim {
namespace {

constexpr int kMaxParallel = 4096;

}  // namespace

ParallelColumns read_parallel_columns(const CsvFile& f, size_t r, int tp, EngineKind engine) {
  ParallelColumns c;
  auto present = [&](const std::optional<int>& col) { return col && !f.text(r, *col).empty(); };
  auto whole = [&](int col) {
    const double v = f.number(r, col);
    if (v < 1 || v != std::floor(v) || v > kMaxParallel)
      throw InputError(f.where(r, col) + ": must be a whole number in [1, " + std::to_string(kMaxParallel) + "] (got " +
                       f.text(r, col) + ")");
    return static_cast<int>(v);
  };
  const auto c_dp = f.find_column("dp"), c_pp = f.find_column("pp"), c_ep = f.find_column("ep");
  const auto c_eep = f.find_column("enable_expert_parallel"), c_nodes = f.find_column("nodes");
  const auto c_a2a = f.find_column("all2all_backend");
  if (present(c_dp)) c.dp = whole(*c_dp);
  if (present(c_pp)) {
    c.pp = whole(*c_pp);
    if (c.pp > 1024)  // engine.pipeline_parallel_size's bound
      throw InputError(f.where(r, *c_pp) + ": must be <= 1024 (got " + std::to_string(c.pp) + ")");
  }
  if (present(c_eep)) {
    const std::string v = f.text(r, *c_eep);
    if (v == "true" || v == "1")
      c.expert_parallel = true;
    else if (v != "false" && v != "0")
      throw InputError(f.where(r, *c_eep) + ": expected true or false (got '" + v + "')");
  }
  const int64_t dp_tp = static_cast<int64_t>(c.dp) * tp;  // both <= 4096: no wrap
  int ep = c.expert_parallel ? static_cast<int>(dp_tp) : 1;
  if (present(c_ep)) {
    ep = whole(*c_ep);
    if (const std::string why = ep > 1 ? explicit_ep_problem(ep, dp_tp, engine) : ""; !why.empty())
      throw InputError(f.where(r, *c_ep) + ": EP size " + std::to_string(ep) + ": " + why);
    if (ep == 1 && c.expert_parallel && dp_tp > 1)
      throw InputError(f.where(r, *c_ep) + ": ep 1 contradicts enable_expert_parallel true");
    c.expert_parallel = c.expert_parallel || ep > 1;
    if (ep > 1 && ep != dp_tp) c.ep = ep;
  }
  if (const auto c_moe_tp = f.find_column("moe_tp"); present(c_moe_tp)) {
    const int moe_tp = whole(*c_moe_tp);
    const int64_t layout = ep > 1 ? dp_tp / ep : dp_tp;
    if (moe_tp != layout)
      throw InputError(f.where(r, *c_moe_tp) + ": moe_tp " + std::to_string(moe_tp) +
                       " contradicts the layout: dp x tp / ep = " + std::to_string(dp_tp) + " / " + std::to_string(ep) +
                       " = " + std::to_string(layout) + " (every MoE GPU holds 1 / (moe_tp x ep) of the experts)");
  }
  if (present(c_nodes)) {
    const int nodes = whole(*c_nodes);
    const int64_t gpus = static_cast<int64_t>(c.dp) * c.pp * tp;  // up to 2^34: no int wrap
    if (gpus % nodes != 0)
      throw InputError(f.where(r, *c_nodes) + ": " + std::to_string(nodes) +
                       " nodes do not split the point's dp x pp x tp = " + std::to_string(gpus) + " GPUs evenly");
    if (gpus / nodes > kMaxParallel)
      throw InputError(f.where(r, *c_nodes) + ": " + std::to_string(gpus / nodes) +
                       " GPUs per node (dp x pp x tp / nodes) is more than " + std::to_string(kMaxParallel));
    c.gpus_per_node = static_cast<int>(gpus / nodes);
  }
  if (present(c_a2a)) {
    c.all2all_backend = f.text(r, *c_a2a);
    is_dispatch_combine_backend(c.all2all_backend, f.where(r, *c_a2a));  // throws for an unknown name
  }
  return c;
}

std::string parallel_suffix(const ParallelColumns& c, int tp) {
  if (!c.any()) return "";
  std::string s = "  layout DP" + std::to_string(c.dp) + " x PP" + std::to_string(c.pp) + " x TP" + std::to_string(tp);
  if (c.expert_parallel && c.ep > 0)
    s += ", EP" + std::to_string(c.ep) + " x moe-TP" + std::to_string(c.dp * tp / c.ep);
  else if (c.expert_parallel)
    s += ", EP" + std::to_string(c.dp * tp);
  s += ", " + std::to_string(c.gpus_per_node.value_or(8)) + " GPUs/node";
  if (!c.all2all_backend.empty()) s += ", " + c.all2all_backend;
  return s;
}

std::string parallel_engine_yaml(const ParallelColumns& c) {
  std::string y;
  if (c.dp > 1) y += "  data_parallel_size: " + std::to_string(c.dp) + "\n";
  if (c.pp > 1) y += "  pipeline_parallel_size: " + std::to_string(c.pp) + "\n";
  if (c.expert_parallel) y += "  enable_expert_parallel: true\n";
  if (c.ep > 0) y += "  expert_parallel_size: " + std::to_string(c.ep) + "\n";
  if (c.gpus_per_node) y += "  gpus_per_node: " + std::to_string(*c.gpus_per_node) + "\n";
  if (!c.all2all_backend.empty()) y += "  all2all_backend: " + c.all2all_backend + "\n";
  return y;
}

}  // namespace kvsim
