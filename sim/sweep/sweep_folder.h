#pragma once
// The layout of a sweep's output folder, shared by every runner and by merge:
//   sweep.json                the manifest: name, columns and every point (index, key, seed, values,
//                             overrides), plus a hash of the plan; a folder holds one sweep only
//   points/p000003.json       point 3's result (written once, atomically: tmp + rename)
//   points/p000003.failed.json  point 3 failed (its error); replaced by the result when a rerun succeeds
//   table.csv, table.h5       the merged table (sweep_table.h); wall_times.csv the per-point wall times
#include <string>
#include <vector>

#include "sim/sweep/sweep_plan.h"

namespace kvsim {

struct ManifestPoint {
  int index = 0;
  std::string key;
  uint64_t seed = 0;
  std::vector<std::string> values;
};

struct SweepManifest {
  std::string name;
  std::string plan_hash;
  std::vector<std::string> columns;
  std::vector<ManifestPoint> points;
};

std::string point_file(const std::string& dir, int index);
std::string failed_point_file(const std::string& dir, int index);

// A temporary-name suffix unique to this process and thread (several ranks and threads may write
// the same final name; each renames its own temporary file).
std::string unique_tmp_tag();
// Writes `<path>.tmp.<tag>` and renames it to `path`; throws InputError naming the path on failure.
void write_file_atomically(const std::string& path, const std::string& text);

// Creates the folder and writes the manifest, or checks that the one there is this plan's (same
// points, overrides and base scenario): resuming into a folder of another sweep is an InputError.
void prepare_sweep_folder(const SweepPlan& plan, const std::string& dir);
SweepManifest read_manifest(const std::string& dir);

}  // namespace kvsim
