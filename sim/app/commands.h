#pragma once
// The subcommand registry: names and the functions that run them.
#include <ostream>
#include <string>
#include <vector>

namespace kvsim {

// Runs subcommand `name`; unknown names are an InputError listing the known ones.
int dispatch_command(const std::string& name, const std::vector<std::string>& args, std::ostream& out);

}  // namespace kvsim
