#include "sim/sweep/point_result.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "sim/core/errors.h"
#include "sim/metrics/records.h"
#include "sim/model/json.h"

namespace kvsim {
namespace {

std::string exact_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void add_distribution(std::vector<std::pair<std::string, double>>& f, const std::string& name, const Distribution& d) {
  f.emplace_back(name + ".p50", d.p50);
  f.emplace_back(name + ".p90", d.p90);
  f.emplace_back(name + ".p99", d.p99);
}

}  // namespace

std::vector<std::pair<std::string, double>> sweep_figures(const RunSummary& s) {
  std::vector<std::pair<std::string, double>> f;
  f.emplace_back("requests", static_cast<double>(s.requests.count));
  f.emplace_back("finished", static_cast<double>(s.requests.finished));
  f.emplace_back("token_hit_rate", s.prefix_cache.token_hit_rate);
  f.emplace_back("block_hit_rate", s.prefix_cache.block_hit_rate);
  for (int c = 1; c < kNumMissCauses; ++c)
    f.emplace_back(std::string(is_what_if(static_cast<MissCause>(c)) ? "what_if." : "lost_tokens.") +
                       miss_cause_name(static_cast<MissCause>(c)),
                   static_cast<double>(s.prefix_cache.lost_tokens_by_cause[c]));
  add_distribution(f, "ttft_ms", s.ttft_ms);
  add_distribution(f, "tpot_ms", s.tpot_ms);
  add_distribution(f, "itl_ms", s.itl_ms);
  add_distribution(f, "e2e_ms", s.e2e_ms);
  f.emplace_back("requests_per_s", s.throughput.requests_per_s);
  f.emplace_back("output_tokens_per_s", s.throughput.output_tokens_per_s);
  f.emplace_back("peak_concurrency", static_cast<double>(s.concurrency.peak));
  f.emplace_back("preemptions", static_cast<double>(s.preemptions));
  // Of the usable blocks (each instance's null block never holds data), as vLLM's KV usage and the
  // per-pool figures count: a full cache reads 1.
  int64_t instances = 0;
  for (const PoolSummary& p : s.pools) instances += p.info.instances;
  const int64_t usable = s.kv_blocks.total - std::max<int64_t>(instances, 1);
  f.emplace_back("peak_kv_usage",
                 usable > 0 ? static_cast<double>(s.kv_blocks.peak_used) / static_cast<double>(usable) : 0.0);
  f.emplace_back("kv_blocks_total", static_cast<double>(s.kv_blocks.total));
  // Disaggregated points (0 / NaN elsewhere).
  const auto& d = s.disaggregation;
  f.emplace_back("disaggregated_requests", static_cast<double>(d.requests));
  f.emplace_back("transfer_bytes", d.bytes);
  add_distribution(f, "transfer_ms", d.transfer_ms);
  f.emplace_back("busiest_link_mean_utilisation",
                 d.links.empty() ? std::numeric_limits<double>::quiet_NaN() : d.links.front().mean_utilisation);
  f.emplace_back("events", static_cast<double>(s.sim.events));
  return f;
}

const std::vector<std::string>& sweep_figure_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> n;
    for (const auto& [name, v] : sweep_figures(RunSummary{})) n.push_back(name);
    return n;
  }();
  return kNames;
}

std::string point_result_to_json(const PointResult& r) {
  std::string j = "{\n";
  j += "  \"point\": " + std::to_string(r.index) + ",\n";
  j += "  \"key\": " + json_quote(r.key) + ",\n";
  j += "  \"seed\": " + std::to_string(r.seed) + ",\n";
  j += std::string("  \"status\": ") + (r.ok ? "\"ok\"" : "\"failed\"") + ",\n";
  j += "  \"error\": " + (r.ok ? std::string("null") : json_quote(r.error)) + ",\n";
  j += "  \"overrides\": [";
  for (size_t i = 0; i < r.overrides.size(); ++i) j += (i ? ", " : "") + json_quote(r.overrides[i]);
  j += "],\n  \"figures\": {";
  for (size_t i = 0; i < r.figures.size(); ++i)
    j += (i ? ", " : "") + json_quote(r.figures[i].first) + ": " + exact_number(r.figures[i].second);
  j += "},\n";
  j += "  \"fingerprint\": " + json_quote(r.fingerprint) + ",\n";
  j += "  \"wall_s\": " + exact_number(r.wall_s) + ",\n";
  std::string summary = r.summary_json.empty() ? "null" : r.summary_json;
  while (!summary.empty() && summary.back() == '\n') summary.pop_back();
  // Indent the embedded summary by two spaces so the file stays readable.
  std::string indented;
  for (char c : summary) {
    indented += c;
    if (c == '\n') indented += "  ";
  }
  j += "  \"summary\": " + indented + "\n}\n";
  return j;
}

PointResult read_point_result(const std::string& path) {
  const JsonValue v = parse_json_file(path);
  const auto need = [&](const char* key) -> const JsonValue& {
    const JsonValue* m = v.find(key);
    if (!m) throw InputError(path + ": " + key + ": missing (not a kvsim sweep point file)");
    return *m;
  };
  PointResult r;
  if (!v.is_object()) throw InputError(path + ": not a kvsim sweep point file");
  r.index = static_cast<int>(need("point").integer());
  r.key = need("key").str();
  r.seed = static_cast<uint64_t>(need("seed").integer());
  r.ok = need("status").str() == "ok";
  if (need("error").is_string()) r.error = need("error").str();
  for (const JsonValue& o : need("overrides").array()) r.overrides.push_back(o.str());
  for (const auto& [name, num] : need("figures").object())
    r.figures.emplace_back(name, num.is_number() ? num.number() : std::nan(""));
  r.fingerprint = need("fingerprint").str();
  r.wall_s = need("wall_s").is_number() ? need("wall_s").number() : 0.0;
  return r;
}

}  // namespace kvsim
