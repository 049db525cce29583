#pragma once
// Flows over a Topology with max-min fair bandwidth sharing (cluster-offload.md D.2, D.3, D.6; G.16,
// G.17; latency-model.md §4.2).
//
// A flow started at t0 first waits its latency: path latency + extra_latency + descriptors *
// per_descriptor. It then moves its bytes at its max-min fair share of the directed links of its
// path, bounded by min(rate_cap, options.per_flow_cap) where those are > 0. Rates are re-solved when
// a flow begins to move bytes and when one ends, only for the connected component of flows and links
// that the change touches (SimGrid selective update). Each flow keeps remaining bytes, rate and the
// time they were last brought up to date; a completion event is scheduled only when a flow's rate
// changes, and carries a version so an outdated one is ignored (the queue has no cancellation).
//
// Time semantics: completion = ceil to the nanosecond of the exact time, so bytes are never delivered
// early; a flow whose remaining bytes are within 1e-9 of its size (float error) is done. Events run in
// Phase::kTransferDone with tags 0x20 (flow begins to move bytes) and 0x21 (flow done).
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "sim/core/sim_context.h"
#include "sim/core/time.h"
#include "sim/net/max_min.h"
#include "sim/net/topology.h"

namespace kvsim {

struct FlowOptions {
  double per_flow_cap = 0;                     // bytes/s, 0 = none (one RDMA QP ~28 GB/s, MORI #351)
  Duration per_descriptor = Duration::zero();  // latency-model.md §4.1: ~1-4 us per RDMA descriptor
};

inline constexpr uint32_t kTagFlowBegin = 0x20;
inline constexpr uint32_t kTagFlowDone = 0x21;

class FlowNetwork {
 public:
  // `topo` must outlive the network.
  FlowNetwork(SimContext& ctx, const Topology& topo, FlowOptions opts = {});
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  using DoneFn = std::function<void()>;
  // Starts a flow at ctx.now() (see above). `done` runs at completion from an event. Zero bytes or
  // src == dst: done after the latency only. Returns the flow id (0, 1, 2, ... in start order).
  // Throws std::logic_error when dst is unreachable, std::invalid_argument for negative bytes, caps
  // or latency, or a GPU index out of range.
  int64_t start(int src_gpu, int dst_gpu, int64_t bytes, uint64_t flow_hash, DoneFn done, double rate_cap = 0,
                Duration extra_latency = Duration::zero(), int64_t descriptors = 0);
  // The same on a path given by the caller (Topology::route_vertices: an offload copy between a GPU and
  // its host or a store). `per_flow_cap`: whether options.per_flow_cap (an RDMA queue pair's) bounds it.
  int64_t start_on(Topology::Path path, int64_t bytes, DoneFn done, double rate_cap = 0,
                   Duration extra_latency = Duration::zero(), bool per_flow_cap = true);

  int active_flows() const { return static_cast<int>(flows_.size()); }  // latency phase included
  double link_rate(int link) const;                                     // current aggregate rate (bytes/s)
  double link_peak_rate(int link) const;  // highest aggregate rate held so far (exact, where samples miss short flows)
  double link_bytes(int link) const;      // bytes carried so far, as of ctx.now()
  // The current rate of a flow that is moving bytes; 0 in its latency phase or once done.
  double flow_rate(int64_t flow) const;
  // The directed links of a flow not yet done, source to destination (empty for src == dst).
  const std::vector<int>& flow_links(int64_t flow) const { return flows_.at(flow).links; }

  struct Stats {
    int64_t flows_started = 0, flows_done = 0;
    int64_t solves = 0;  // component re-solves
    // Work of all solves: flow-link incidences visited and link scans (max-min rounds x links).
    int64_t solve_flow_visits = 0, solve_link_visits = 0;
    double bytes_done = 0;  // bytes of completed flows
  };
  const Stats& stats() const { return stats_; }
  const Topology& topology() const { return topo_; }

 private:
  struct Flow {
    std::vector<int> links;
    double bytes = 0, remaining = 0, rate = 0, bound = 0;
    SimTime last;
    uint64_t version = 0, mark = 0;
    int local = -1;
    bool moving = false;
    DoneFn done;
  };
  struct LinkState {
    double capacity = 0, rate = 0, bytes = 0;
    double peak = 0;  // highest aggregate rate held for a positive time before `last` (every re-solve)
    SimTime last;
    std::vector<int64_t> flows;  // flows moving bytes over the link, in the order they began
    uint64_t mark = 0;
    int local = -1;
  };
  void on_begin(int64_t id);
  void on_done(int64_t id, uint64_t version);
  void finish(int64_t id);
  void schedule_done(int64_t id, Flow& f);
  // Brings the component reached from `seeds` up to date, re-solves it and reschedules changed flows.
  void resolve(const std::vector<int>& seeds);

  SimContext& ctx_;
  const Topology& topo_;
  FlowOptions opts_;
  std::map<int64_t, Flow> flows_;
  std::vector<LinkState> links_;
  int64_t next_id_ = 0;
  uint64_t epoch_ = 0;
  Stats stats_;
  MaxMinSolver solver_;
  std::vector<int> comp_links_, local_links_;
  std::vector<int64_t> comp_flows_;
  std::vector<double> comp_capacity_;
};

}  // namespace kvsim
