// Per-request CSV and the Chrome / Perfetto trace, streamed with the run: one CSV line per request, and
// a valid trace with one complete event per step and one begin / end pair per request.
#include "sim/metrics/text_streams.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "sim/app/simulation.h"
#include "sim/model/json.h"
#include "sim/scenario/scenario.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

TEST(TextStreams, CsvAndTraceFollowTheRun) {
  const fs::path dir = fs::temp_directory_path() / ("kvsim_text_streams_" + std::to_string(getpid()));
  fs::remove_all(dir);
  const Scenario s = parse_scenario(R"(
model: models/qwen3-8b.json
gpu: h100-sxm
engine: {block_size: 16}
cluster: {pools: [{name: a, instances: 2}]}
workload:
  synthetic: {kind: poisson, rate: 50, num_requests: 40, input_tokens: 200, output_tokens: 8}
)",
                                    "t.yaml");
  RunOptions o;
  o.csv_path = (dir / "r.csv").string();
  o.trace_path = (dir / "sub" / "trace.json").string();
  o.chunk_rows = 16;
  const SimulationResult r = run_simulation(s, o);

  std::ifstream csv(o.csv_path);
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line.rfind("id,arrival_s,first_scheduled_s,", 0), 0u) << line;
  std::set<int64_t> ids;
  while (std::getline(csv, line)) ids.insert(std::stoll(line.substr(0, line.find(','))));
  EXPECT_EQ(ids.size(), 40u);
  EXPECT_EQ(*ids.rbegin(), 39);

  const JsonValue trace = parse_json_file(o.trace_path);
  const JsonValue* events = trace.find("traceEvents");
  ASSERT_NE(events, nullptr);
  int64_t steps = 0, begins = 0, ends = 0;
  for (const JsonValue& e : events->array()) {
    const std::string ph = e.find("ph")->str();
    steps += ph == "X";
    begins += ph == "b";
    ends += ph == "e";
  }
  EXPECT_EQ(steps, r.collector->num_steps());
  EXPECT_EQ(begins, 40);
  EXPECT_EQ(ends, 40);
  EXPECT_FALSE(fs::exists(o.csv_path + ".tmp"));
  EXPECT_FALSE(fs::exists(o.trace_path + ".tmp"));
  fs::remove_all(dir);
}

TEST(TextStreams, AnUncommittedStreamLeavesNoFile) {
  const fs::path p = fs::temp_directory_path() / ("kvsim_uncommitted_" + std::to_string(getpid()) + ".csv");
  { CsvRequestStream s(p.string()); }
  EXPECT_FALSE(fs::exists(p));
  EXPECT_FALSE(fs::exists(p.string() + ".tmp"));
}

}  // namespace
}  // namespace kvsim
