#pragma once
// `kvsim size CONFIG.json... [options]`: exact KV cache, state, weights and capacity per model.
#include <ostream>
#include <string>
#include <vector>

namespace kvsim {

// Runs the subcommand with the arguments after "size". Returns the exit code; writes the report to
// `out`. Bad input throws InputError (the caller prints it and exits with 2).
int run_size_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace kvsim
