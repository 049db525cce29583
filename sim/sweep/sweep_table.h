#pragma once
// Merges a sweep folder's point files into one table, one row per point in point order:
//   point, <axis columns> (variant, key paths, repeat), seed, status (ok | failed | missing),
//   <sweep_figure_names()>, fingerprint, error
// written as table.csv (numbers with 10 significant digits, an empty cell for a missing value) and
// table.h5 (sim/metrics/table_writer.h). Both are byte-identical whatever threads, shards or ranks
// produced the points. Wall times are not in the table (they differ run to run): wall_times.csv
// holds point, status, wall_s.
#include <string>

namespace kvsim {

struct SweepTableReport {
  int points = 0;
  int ok = 0;
  int failed = 0;
  int missing = 0;
  std::string csv_path;
  std::string hdf5_path;
};

SweepTableReport merge_sweep(const std::string& dir);

}  // namespace kvsim
