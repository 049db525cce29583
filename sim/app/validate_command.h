#pragma once
// `kvsim validate POINTS.csv`: simulates measured end-to-end points as closed loops and reports the
// error of predicted TTFT and TPOT (per row, and median / p90 overall and per model class).
#include <ostream>
#include <string>
#include <vector>

#include "sim/scenario/scenario.h"

namespace kvsim {

struct ValidationPoint {
  int line = 0;
  std::string model;  // config.json path
  std::string gpu;
  std::string engine = "vllm";
  std::string dtype = "bf16";  // weight dtype
  int tp = 1;
  int64_t isl = 0, osl = 0;
  int concurrency = 0;
  double ttft_ms = 0, tpot_ms = 0;
};

// Reads and checks the points: columns model, gpu, tp, isl, osl, concurrency, ttft_ms, tpot_ms
// (optional engine, dtype; others ignored). Errors name file, line and column.
std::vector<ValidationPoint> read_validation_points(const std::string& path, const std::string& hardware_dir);

// The closed-loop scenario of one point: requests_per_slot x concurrency requests of isl unique
// prompt tokens and exactly osl output tokens, `concurrency` in flight, prefix caching off.
Scenario validation_scenario(const ValidationPoint& p, int requests_per_slot, const std::string& hardware_dir,
                             const std::string& latency_model);

int run_validate_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace kvsim
