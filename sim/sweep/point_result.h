#pragma once
// One point's result file (points/p<index>.json, or p<index>.failed.json for a point that threw) and
// the figures that become the sweep table's columns.
//
// {"point", "key", "seed", "status": "ok" | "failed", "error" (null when ok), "overrides": [...],
//  "figures": {<name>: number or null (NaN)}, "fingerprint": "<16 hex>", "wall_s",
//  "summary": <summary_to_json without wall time>}
// Figures are written with 17 significant digits, so reading a file back gives the same doubles.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/metrics/summary.h"

namespace kvsim {

struct PointResult {
  int index = 0;
  std::string key;
  uint64_t seed = 0;
  bool ok = false;
  std::string error;
  std::vector<std::string> overrides;
  std::vector<std::pair<std::string, double>> figures;  // in sweep_figure_names() order
  std::string fingerprint;
  double wall_s = 0;
  std::string summary_json;  // empty when failed
};

// The table's figure columns, in order: requests, finished, token_hit_rate, block_hit_rate,
// lost_tokens.<cause> (what_if.different_image for the what-if), ttft_ms.p50 ... e2e_ms.p99, requests_per_s,
// output_tokens_per_s, peak_concurrency, preemptions, peak_kv_usage, kv_blocks_total, events.
const std::vector<std::string>& sweep_figure_names();
std::vector<std::pair<std::string, double>> sweep_figures(const RunSummary& s);

std::string point_result_to_json(const PointResult& r);
// Reads a result file; an unreadable or malformed file is an InputError naming it.
PointResult read_point_result(const std::string& path);

}  // namespace kvsim
