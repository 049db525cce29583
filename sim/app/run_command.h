#pragma once
// `kvsim run SCENARIO.yaml`: one serving instance replaying a workload; and `kvsim bench`.
#include <ostream>
#include <string>
#include <vector>

namespace kvsim {

int run_run_command(const std::vector<std::string>& args, std::ostream& out);
int run_bench_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace kvsim
