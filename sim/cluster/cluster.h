#pragma once
// Cluster: drives engine instances behind a router from an IRequestSource through the event queue. It
// takes the place of the single-engine driver: a scenario without a cluster: section is a cluster of one
// instance under round_robin, with exactly the events (and fingerprint) the single engine had.
//
// Time semantics:
//  - Open loop: only the next arrival is ever scheduled (Phase::kArrival at its arrival time), so memory
//    does not grow with the trace length. Closed loop (closed_loop_concurrency() = C > 0): C requests
//    arrive at time 0; whenever one leaves its instance, the next arrives at that instant.
//  - At arrival the router picks an instance from what it can see then; the request reaches it at once,
//    or routing_latency later (Phase::kArrival, in arrival order). Its TTFT and queue time count from
//    the arrival.
//  - Load reports: with report_interval 0 the router reads the instances' live state; with I > 0 it reads
//    a snapshot taken at every multiple of I (Phase::kSample: after everything else at that instant).
//    Snapshots are taken while requests are in flight; an idle cluster's state does not change, so the
//    first arrival after an idle spell takes the snapshot the skipped instants would have shown.
// run() drains the event queue, then checks the end-of-run invariants of every instance and returns totals.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/cluster/disagg_settings.h"
#include "sim/cluster/i_router.h"
#include "sim/cluster/kv_transfer.h"
#include "sim/cluster/router_settings.h"
#include "sim/core/sim_context.h"
#include "sim/engine/engine_instance.h"
#include "sim/metrics/records.h"
#include "sim/workload/request.h"

namespace kvsim {

class FlowNetwork;

// Disaggregation wiring, built by the composition root (sim/app/simulation.cpp) for a cluster with
// prefill and decode pools. Flow (vLLM NIXL, cluster-offload.md A.3 and G rules 4-15):
//  - at arrival the router picks the decode instance among the decode pool(s); the decider
//    (DisaggSettings::decider) reads the router's prefix match there; a request not disaggregated runs
//    whole on that decode instance;
//  - otherwise the router picks a prefill instance (it sees this second routing as its own request, so
//    its in-flight bookkeeping is per stage); the prefill instance runs the prompt with max_tokens = 1;
//  - when it finishes, the request goes to the decode instance, which allocates its blocks and waits in
//    WAITING_FOR_REMOTE_KVS; the pull starts then: one flow per (decode rank, prefill rank) pair of the
//    KvTransferModel over the FlowNetwork; when every flow has ended the prefill instance frees its held
//    blocks and the decode instance computes the last prompt token and samples the client's first token.
struct DisaggregationSetup {
  DisaggSettings settings;
  FlowNetwork* network = nullptr;                           // not owned
  std::vector<std::vector<int>> instance_gpus;              // per instance: the topology GPU of each TP rank
  std::vector<std::string> pool_roles;                      // per pool: "colocated" | "prefill" | "decode"
  std::map<std::pair<int, int>, KvTransferModel> transfer;  // per (prefill pool, decode pool)
};

struct ServingResult {
  int64_t submitted = 0;
  int64_t finished = 0;
  int64_t unfinished = 0;  // rejected, or still in an engine at the end (never, when invariants hold)
  int64_t generated_tokens = 0;
  int64_t steps = 0;
  int64_t preemptions = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t evictions = 0;
  uint64_t events = 0;
  uint64_t fingerprint = 0;
  SimTime end_time;
  std::vector<int64_t> routed;  // requests sent to each instance
  bool interrupted = false;     // stopped by set_stop() before the queue drained
};

class Cluster final : private IClusterView {
 public:
  // Called after each request leaves its instance: (requests done so far, now).
  using ProgressFn = std::function<void(int64_t done, SimTime now)>;

  // `instances` (not owned) are the cluster's instances in id order: instances[i]->config().instance must
  // be i. `router_key` names cluster.router in errors.
  Cluster(SimContext& ctx, IRequestSource& source, std::vector<EngineInstance*> instances, const RouterSettings& router,
          const std::string& router_key = "cluster.router");
  // One instance, round robin: the single-engine driver.
  Cluster(SimContext& ctx, IRequestSource& source, EngineInstance& engine);
  ~Cluster() override;

  void set_progress(ProgressFn fn) { progress_ = std::move(fn); }
  // Receives on_arrival() for every request at its arrival (not owned; the metrics collector).
  void set_arrival_sink(IRecordSink* sink) { arrival_sink_ = sink; }
  // Checked before every event: true stops the run there (an interrupt); run() then skips the end-of-run
  // invariants and reports interrupted = true.
  void set_stop(std::function<bool()> stop) { stop_ = std::move(stop); }
  // Makes this a disaggregated cluster (not owned; must outlive run()). Call before run().
  void set_disaggregation(const DisaggregationSetup* setup);
  ServingResult run();
  // End-of-run invariants: the event queue is empty, the source drained, every submitted request
  // finished or was reported unfinished, and for every instance: nothing left running or waiting, its
  // totals match what was routed to it, its pool accounting matches its block tables and no block is held.
  void invariants() const;
  const IRouter& router() const { return *router_; }

 private:
  // IClusterView
  int num_instances() const override { return static_cast<int>(instances_.size()); }
  const InstanceInfo& info(int i) const override { return info_[static_cast<size_t>(i)]; }
  const InstanceReport& report(int i) const override;
  int64_t report_epoch() const override { return report_interval_ == Duration::ns(0) ? -1 : report_epoch_; }
  int64_t cached_prefix_blocks(int i, const RequestSpec& spec, int64_t max_blocks) const override;
  SimTime now() const override { return ctx_.now(); }

  InstanceReport live_report(int i) const;
  void take_reports();
  void schedule_report(SimTime at);
  void on_report();
  void schedule_next_arrival();
  void on_arrival();
  void on_turnaround_done(int64_t id);
  void admit(RequestSpec spec);
  // Closed loop: a slot is free (requests in flight, or on their way after a client turnaround, < C).
  bool slot_free() const { return submitted_ + static_cast<int64_t>(in_transit_.size()) - done_ < closed_loop_; }
  void on_delayed_submit();
  void on_done(int instance, RequestId id, bool finished);
  // Disaggregation.
  void submit_to(int instance, RequestSpec spec, RemoteKv remote);
  void route_disaggregated(RequestSpec spec);
  bool wants_remote_prefill(const RequestSpec& spec, int64_t match) const;
  void on_prefill_sent(int prefill, RequestId id, int slot, const RequestRecord& rec);
  void on_prefill_rejected(int prefill, RequestId id);
  void start_pull(int decode, RequestId id, int slot, int64_t local_hit);
  void on_flow_done(RequestId id, size_t flow);
  void on_decode_done(int decode, RequestId id, bool finished);
  void schedule_link_sample(SimTime at);
  void on_link_sample();

  SimContext& ctx_;
  IRequestSource& source_;
  std::vector<EngineInstance*> instances_;
  std::vector<InstanceInfo> info_;
  std::vector<int> candidates_;  // every instance (all colocated)
  std::unique_ptr<IRouter> router_;
  Duration routing_latency_;
  Duration report_interval_;
  mutable std::vector<InstanceReport> reports_;
  int64_t report_epoch_ = 0;  // snapshots taken (report_interval > 0)
  bool report_pending_ = false;
  struct Delayed {
    RequestSpec spec;
    int instance = 0;
    RemoteKv remote = RemoteKv::kNone;
  };
  std::deque<Delayed> delayed_;  // routed, not yet submitted (FIFO: equal delays)
  ProgressFn progress_;
  IRecordSink* arrival_sink_ = nullptr;
  std::function<bool()> stop_;
  int closed_loop_ = 0;
  std::optional<RequestSpec> next_;
  // Closed loop: requests the client is sending after a non-zero turnaround, by id; each arrives on
  // its own (the client's slots turn around in parallel).
  std::map<int64_t, RequestSpec> in_transit_;
  std::vector<int64_t> routed_;
  int64_t submitted_ = 0;
  int64_t done_ = 0;
  bool source_done_ = false;
  // cached_prefix_blocks: the hashes of the request being routed, per (block size, hash unit).
  mutable int64_t probe_request_ = -1;
  mutable std::vector<std::pair<std::pair<int, int>, std::vector<uint64_t>>> probe_hashes_;
  // Disaggregation: the setup, the prefill pool's instances, and the requests between their prefill and
  // the end of their pull (lookup by id only).
  const DisaggregationSetup* disagg_ = nullptr;
  std::vector<int> prefill_candidates_;
  struct Pending {
    RequestSpec spec;  // kept until the decode instance gets it
    int64_t prompt_tokens = 0;
    int decode = 0;
    int prefill = 0;
    int prefill_slot = -1;  // set once the prefill instance holds the blocks
    int decode_slot = -1;
    SimTime start;
    std::vector<TransferRecord> flows;  // the pull's flows, filled in as they start; end set when done
    int flows_left = 0;
    int64_t bytes = 0;
    bool pulled = false;            // every flow ended
    bool prefill_finished = false;  // the prefill instance sampled its token (its slot is set)
    bool forwarded = false;         // the decode instance has the request
    bool decode_left = false;       // layer-wise: the decode instance refused it before the prefill ended
    SimTime prefill_done;
  };
  void on_last_prefill_chunk(RequestId id, const RequestRecord& rec);
  void finish_pull(int64_t id);
  std::unordered_map<int64_t, Pending> pending_;
  bool link_sample_pending_ = false;
  int64_t disaggregated_ = 0;
};

}  // namespace kvsim
