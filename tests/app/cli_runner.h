#pragma once
// Runs the built kvsim binary (KVSIM_BINARY) from the repository root and captures its output.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace kvsim::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

// With `timeout_s` > 0 the run is killed after that many seconds (exit code 124: a hang).
inline CliResult run_kvsim(const std::string& args, int timeout_s = 0) {
  const std::string limit = timeout_s > 0 ? "timeout " + std::to_string(timeout_s) + " " : "";
  const std::string cmd = std::string("cd ") + KVSIM_SOURCE_DIR + " && " + limit + KVSIM_BINARY + " " + args + " 2>&1";
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace kvsim::testing
