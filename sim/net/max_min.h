#pragma once
// Max-min fair rates by progressive filling: SimGrid's lmm_solve with every weight and penalty 1
// (cluster-offload.md D.2). Each round finds the fill level m = min over links of remaining capacity /
// unfixed flows; flows whose own bound is below m are fixed at their bound, otherwise every unfixed
// flow on the link(s) reaching m is fixed at m. Deterministic: ties are broken by index only.
#include <cstdint>
#include <vector>

namespace kvsim {

class MaxMinSolver {
 public:
  // Flows are added with their links (local link indices 0..num_links-1) and a bound (bytes/s,
  // +inf for none). Buffers are reused between solves.
  void reset(const std::vector<double>& link_capacity);
  int add_flow(const int* links, int num_links, double bound);
  // Solves; rate(i) is flow i's rate afterwards. Every flow must use at least one link.
  void solve();
  double rate(int flow) const { return rate_[flow]; }
  int num_flows() const { return static_cast<int>(bound_.size()); }
  // Work counters of the last solve: flow-link incidences and link scans.
  int64_t flow_visits() const { return flow_visits_; }
  int64_t link_visits() const { return link_visits_; }

 private:
  void fix(int flow, double rate);
  std::vector<double> capacity_, remaining_;
  std::vector<int> unfixed_on_link_;
  std::vector<int> flow_begin_, flow_links_;  // CSR: flow i uses flow_links_[flow_begin_[i] .. flow_begin_[i+1])
  std::vector<int> link_begin_, link_flows_;  // CSR: link -> flows
  std::vector<double> bound_, rate_;
  std::vector<bool> fixed_;
  std::vector<int> by_bound_, active_links_;
  int64_t flow_visits_ = 0, link_visits_ = 0;
};

}  // namespace kvsim
