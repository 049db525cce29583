#pragma once
// A sweep's points as data: the ordered list every runner (threads, shards, MPI ranks) expands the
// same way, each point with its axis values, its --set overrides, a canonical key and a seed.
//
// Point order: variants outermost (file order), then the axes (grid: every combination with the
// first axis slowest; zip: the i-th value of each), then repeats innermost.
// Key: "k1=v1,k2=v2,..." over the point's columns sorted by name (variant and repeat included).
// Seed: splitmix64(base seed XOR fnv1a64(key)) masked to 63 bits (a scenario seed is a non-negative
// int64); with seed_key: repeat the key is "repeat=<i>" alone. Never a function of rank or order.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/scenario/scenario.h"
#include "sim/scenario/sweep_file.h"

namespace kvsim {

inline constexpr double kMaxSweepPoints = 100000;  // variants x axis rows x seeds

struct SweepPoint {
  int index = 0;
  std::vector<std::string> values;     // one per SweepPlan::columns, as shown in the table
  std::vector<std::string> overrides;  // sweep set:, variant sets, axis sets, then seed=<seed>
  std::string key;
  uint64_t seed = 0;
};

struct SweepPlan {
  SweepFile file;
  uint64_t base_seed = 1;
  uint64_t base_hash = 0;            // fnv1a64 of the base scenario text (a resumed folder must match)
  std::vector<std::string> columns;  // "variant" (if any), the axis keys, "repeat" (if seeds)
  std::vector<SweepPoint> points;
};

uint64_t sweep_point_seed(uint64_t base_seed, const std::string& key);

// Expands the points and validates each one (the scenario with its overrides, as `kvsim run` would
// load it) before anything runs. `extra_sets` (the command line's --set) apply to every point, after
// the file's. An invalid point is an InputError "<sweep file>: point <i> (<key>): <scenario error>".
SweepPlan plan_sweep(const SweepFile& file, const std::vector<std::string>& extra_sets = {});

// The scenario of one point (validated again; cheap), its output section cleared: a point writes
// only its result file.
Scenario point_scenario(const SweepPlan& plan, const SweepPoint& point);

}  // namespace kvsim
