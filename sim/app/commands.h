#pragma once
// The subcommand registry: names and the functions that run them.
#include <ostream>
#include <string>
#include <vector>

namespace kvsim {

// Width of every command's --help (Boost.Program_options wraps descriptions at it; its default 80
// breaks words in long option descriptions).
inline constexpr unsigned kHelpLineLength = 120;

// Runs subcommand `name`; unknown names are an InputError listing the known ones.
int dispatch_command(const std::string& name, const std::vector<std::string>& args, std::ostream& out);

}  // namespace kvsim
