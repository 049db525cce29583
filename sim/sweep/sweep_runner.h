#pragma once
// Runs a sweep's points on local threads: the points of one shard (index % shards == shard), each
// one an independent simulation, its result written atomically to the sweep folder. A point whose
// result file exists is skipped (resume); a point that throws is recorded as failed
// (p<index>.failed.json) and the others go on. The results do not depend on the thread count, the
// shard count or the order points ran in (seeds come from the point keys: sweep_plan.h).
#include <functional>
#include <string>
#include <vector>

#include "sim/metrics/summary.h"
#include "sim/scenario/scenario.h"
#include "sim/sweep/sweep_plan.h"

namespace kvsim {

// Runs one scenario to the end (the app passes run_simulation: sim/sweep does not depend on sim/app).
// Must be safe to call from several threads at once.
using PointSimulator = std::function<RunSummary(const Scenario&)>;

struct SweepRunOptions {
  std::string out_dir;
  int threads = 1;
  int shard = 0;
  int shards = 1;
  bool progress = false;  // a progress line on stderr (the caller decides: only on a terminal)
};

struct SweepRunReport {
  int assigned = 0;  // points of this shard
  int skipped = 0;   // already had a result file
  int ran = 0;
  int failed = 0;
  std::vector<std::string> errors;  // "point <i> (<key>): <message>", in point order
};

// The folder must have been prepared (prepare_sweep_folder).
SweepRunReport run_sweep_points(const SweepPlan& plan, const SweepRunOptions& options, const PointSimulator& simulate);

}  // namespace kvsim
