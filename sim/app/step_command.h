#pragma once
// `kvsim step SCENARIO.yaml`: the time one engine step takes for a batch the user names (decodes at a
// context length, prefill chunks), priced by the latency model the scenario's pool runs with, split by
// operator (calibrated model) or by pipeline stage (PP): what a run's step times are made of.
#include <ostream>
#include <string>
#include <vector>

namespace kvsim {

int run_step_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace kvsim
