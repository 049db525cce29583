#pragma once
// `kvsim sweep SWEEP.yaml` (run a sweep's points on threads, shards or MPI ranks, then merge) and
// `kvsim sweep merge DIR` (build the table from a sweep folder).
#include <ostream>
#include <string>
#include <vector>

namespace kvsim {

int run_sweep_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace kvsim
