#include "sim/net/max_min.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "sim/core/check.h"

namespace kvsim {

void MaxMinSolver::reset(const std::vector<double>& link_capacity) {
  capacity_ = link_capacity;
  flow_begin_.assign(1, 0);
  flow_links_.clear();
  bound_.clear();
}

int MaxMinSolver::add_flow(const int* links, int num_links, double bound) {
  KVSIM_CHECK(num_links > 0, "a flow in the max-min solver must use a link");
  for (int i = 0; i < num_links; ++i) {
    KVSIM_CHECK(links[i] >= 0 && links[i] < static_cast<int>(capacity_.size()), "bad local link " << links[i]);
    flow_links_.push_back(links[i]);
  }
  flow_begin_.push_back(static_cast<int>(flow_links_.size()));
  bound_.push_back(bound);
  return static_cast<int>(bound_.size()) - 1;
}

void MaxMinSolver::fix(int flow, double rate) {
  fixed_[flow] = true;
  rate_[flow] = rate;
  for (int k = flow_begin_[flow]; k < flow_begin_[flow + 1]; ++k) {
    const int l = flow_links_[k];
    remaining_[l] = std::max(0.0, remaining_[l] - rate);
    --unfixed_on_link_[l];
  }
  flow_visits_ += flow_begin_[flow + 1] - flow_begin_[flow];
}

void MaxMinSolver::solve() {
  const int nf = num_flows();
  const int nl = static_cast<int>(capacity_.size());
  flow_visits_ = link_visits_ = 0;
  remaining_ = capacity_;
  unfixed_on_link_.assign(nl, 0);
  for (int l : flow_links_) ++unfixed_on_link_[l];
  link_begin_.assign(nl + 1, 0);
  for (int l = 0; l < nl; ++l) link_begin_[l + 1] = link_begin_[l] + unfixed_on_link_[l];
  link_flows_.resize(flow_links_.size());
  {
    std::vector<int> fill(link_begin_.begin(), link_begin_.end() - 1);
    for (int f = 0; f < nf; ++f) {
      for (int k = flow_begin_[f]; k < flow_begin_[f + 1]; ++k) link_flows_[fill[flow_links_[k]]++] = f;
    }
  }
  rate_.assign(nf, 0.0);
  fixed_.assign(nf, false);
  by_bound_.resize(nf);
  std::iota(by_bound_.begin(), by_bound_.end(), 0);
  std::stable_sort(by_bound_.begin(), by_bound_.end(), [&](int a, int b) { return bound_[a] < bound_[b]; });
  active_links_.clear();
  for (int l = 0; l < nl; ++l) {
    if (unfixed_on_link_[l] > 0) active_links_.push_back(l);
  }
  size_t next_bound = 0;
  int unfixed = nf;
  while (unfixed > 0) {
    // The fill level: the smallest fair share among links that still carry unfixed flows.
    double level = std::numeric_limits<double>::infinity();
    size_t keep = 0;
    for (int l : active_links_) {
      if (unfixed_on_link_[l] == 0) continue;
      active_links_[keep++] = l;
      level = std::min(level, remaining_[l] / unfixed_on_link_[l]);
    }
    link_visits_ += static_cast<int64_t>(active_links_.size());
    active_links_.resize(keep);
    KVSIM_CHECK(keep > 0, "max-min: unfixed flows but no link carries them");
    // Flows bounded below the level keep their bound (and only raise the others' shares).
    bool fixed_by_bound = false;
    while (next_bound < by_bound_.size()) {
      const int f = by_bound_[next_bound];
      if (fixed_[f]) {
        ++next_bound;
        continue;
      }
      if (!(bound_[f] < level)) break;
      fix(f, bound_[f]);
      --unfixed;
      ++next_bound;
      fixed_by_bound = true;
    }
    if (fixed_by_bound) continue;
    // Every unfixed flow on a link that reaches the level gets the level.
    const double tie = level * (1 + 1e-12);
    for (int l : active_links_) {
      if (unfixed_on_link_[l] == 0 || remaining_[l] / unfixed_on_link_[l] > tie) continue;
      for (int k = link_begin_[l]; k < link_begin_[l + 1]; ++k) {
        const int f = link_flows_[k];
        if (fixed_[f]) continue;
        fix(f, level);
        --unfixed;
      }
    }
  }
}

}  // namespace kvsim
