#pragma once
// IRouter: picks the engine instance of each arriving request (sim/cluster/impl/ has the policies,
// router_registry.h builds one by name).
//
// Contract: a router sees only what a real one sees (cluster-offload.md B):
//  - the load each instance reports (IClusterView::report): live, or a snapshot taken every
//    cluster.router.report_interval, so a router can act on stale load;
//  - what it tracks itself from the requests it forwards: its own prefix index, in-flight counts and
//    active blocks, updated by route(), on_first_token() and on_finished();
//  - the instances' real prefix caches (IClusterView::cached_prefix_blocks) only where the real router
//    reads them through KV events (llm-d precise-prefix-cache-scorer, Dynamo with KV events on).
// route() is called once per request, at its arrival; ties are broken deterministically or from a
// named random stream, never by pointer or hash-table order.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/core/strong_int.h"
#include "sim/core/time.h"
#include "sim/workload/request.h"

namespace kvsim {

// What an instance reports (vLLM's Prometheus gauges as llm-d and Dynamo scrape them).
struct InstanceReport {
  int waiting = 0;            // vllm:num_requests_waiting
  int running = 0;            // vllm:num_requests_running
  double kv_usage = 0;        // vllm:kv_cache_usage_perc (used / usable blocks, 0..1)
  int64_t hashed_blocks = 0;  // blocks in its prefix cache (stored minus removed KV events)
};

// Static facts about an instance, known to the router at start (llm-d autoTune reads them).
struct InstanceInfo {
  int id = 0;    // cluster-wide instance index
  int pool = 0;  // index of its pool
  int block_size = 16;
  int64_t num_blocks = 0;  // usable KV blocks
};

class IClusterView {
 public:
  virtual ~IClusterView() = default;
  virtual int num_instances() const = 0;
  virtual const InstanceInfo& info(int instance) const = 0;
  virtual const InstanceReport& report(int instance) const = 0;
  // Leading full blocks of `spec`'s prompt found in the instance's prefix cache, hashed as that
  // instance hashes them (its block size, hash unit, LoRA and salt keys), capped at `max_blocks`.
  // Ground truth: only KV-event-fed indexes may call it.
  virtual int64_t cached_prefix_blocks(int instance, const RequestSpec& spec, int64_t max_blocks) const = 0;
  virtual SimTime now() const = 0;
  // Which snapshot report() reads: a number that changes when the reports are taken again, or -1 when
  // they are live (report_interval 0).
  virtual int64_t report_epoch() const { return -1; }
};

// Which decision a route() call makes: a colocated request's, or one stage of a disaggregated one. In a
// P/D cluster the decode instance is chosen first: kDecode when every request is then disaggregated
// (decider always), kDecodeThenDecide when the decider reads the router's match there and may keep the
// request local (llm_d, dynamo), kColocated when none is disaggregated (never); kPrefill for the prefill
// instance after it.
enum class RouteStage { kColocated, kDecode, kDecodeThenDecide, kPrefill };

class IRouter {
 public:
  virtual ~IRouter() = default;
  // The instance for `spec`, one of `candidates` (instance ids, ascending, never empty).
  virtual int route(const RequestSpec& spec, std::span<const int> candidates, const IClusterView& view) = 0;
  // The same for one stage of a P/D request; a router whose stages follow other rules overrides it.
  virtual int route_stage(const RequestSpec& spec, std::span<const int> candidates, const IClusterView& view,
                          RouteStage /*stage*/) {
    return route(spec, candidates, view);
  }
  // The request's first token came back from `instance` (its prefill is done).
  virtual void on_first_token(RequestId /*id*/, int /*instance*/) {}
  // The request left `instance` (finished, or rejected by it).
  virtual void on_finished(RequestId /*id*/, int /*instance*/) {}
  virtual std::string name() const = 0;
  // The prompt tokens the router believed cached on the instance its last route() chose, as it scored
  // them (before its own optimistic insertion): what llm-d's P/D decider reads. 0 for a router without a
  // prefix index.
  virtual int64_t last_match_tokens() const { return 0; }
};

}  // namespace kvsim
