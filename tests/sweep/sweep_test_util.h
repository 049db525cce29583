#pragma once
// Sweep tests: a tiny base scenario (20 synthetic requests, milliseconds per point), a scratch
// folder per test, and file helpers.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/app/cli_runner.h"

namespace kvsim::testing {

inline const char* kSweepBase =
    "model: models/qwen3-8b.json\n"
    "gpu: h100-sxm\n"
    "seed: 7\n"
    "engine: {block_size: 16, enable_prefix_caching: true}\n"
    "workload:\n"
    "  synthetic: {kind: shared_prefix, groups: 2, requests_per_group: 10, prefix_tokens: 800, suffix_tokens: 100,\n"
    "              output_tokens: 8, rate: 20}\n";

// 6 points: block size x 3, two repeats.
inline const char* kSixPoints =
    "name: six\n"
    "base: base.yaml\n"
    "axes:\n"
    "  engine.block_size: [16, 64, 256]\n"
    "seeds: 2\n";

class SweepDir {
 public:
  explicit SweepDir(const std::string& tag)
      : dir_(std::filesystem::temp_directory_path() / ("kvsim_sweep_" + tag + "_" + std::to_string(getpid()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    write("base.yaml", kSweepBase);
  }
  ~SweepDir() { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) const {
    const auto p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static void write_raw(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }

 private:
  std::filesystem::path dir_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace kvsim::testing
