#pragma once
// ServingSim: drives one EngineInstance from an IRequestSource through the event queue.
//  - Open loop: only the next arrival is ever scheduled (Phase::kArrival at its arrival time), so
//    memory does not grow with the trace length.
//  - Closed loop (closed_loop_concurrency() = C > 0): C requests arrive at time 0; whenever one leaves
//    the instance, the next request arrives at that instant (the source's arrival is ignored).
// run() drains the event queue, then checks the end-of-run invariants (KVSIM_CHECK) and returns totals.
#include <cstdint>
#include <functional>

#include "sim/core/sim_context.h"
#include "sim/engine/engine_instance.h"
#include "sim/workload/request.h"

namespace kvsim {

struct ServingResult {
  int64_t submitted = 0;
  int64_t finished = 0;
  int64_t unfinished = 0;  // rejected, or still in the engine at the end (never, when invariants hold)
  int64_t generated_tokens = 0;
  int64_t steps = 0;
  int64_t preemptions = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t evictions = 0;
  uint64_t events = 0;
  uint64_t fingerprint = 0;
  SimTime end_time;
};

class ServingSim {
 public:
  // Called after each request leaves the instance: (requests done so far, now).
  using ProgressFn = std::function<void(int64_t done, SimTime now)>;

  ServingSim(SimContext& ctx, IRequestSource& source, EngineInstance& engine);
  void set_progress(ProgressFn fn) { progress_ = std::move(fn); }
  ServingResult run();
  // End-of-run invariants: the event queue is empty, every submitted request finished or was
  // reported unfinished, the pool accounting matches the block tables with no request holding
  // blocks, and finished requests generated exactly the tokens they asked for.
  void invariants() const;

 private:
  void schedule_next_arrival();
  void on_arrival();
  void on_done(bool finished);

  SimContext& ctx_;
  IRequestSource& source_;
  EngineInstance& engine_;
  ProgressFn progress_;
  int closed_loop_ = 0;
  std::optional<RequestSpec> next_;
  int64_t submitted_ = 0;
  int64_t done_ = 0;
  int64_t finished_ = 0;
  bool source_done_ = false;
};

}  // namespace kvsim
