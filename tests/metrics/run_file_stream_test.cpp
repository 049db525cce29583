// The run file written as the run goes: identical to the file written at once from kept records,
// atomic, and flagged incomplete when the run is interrupted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "sim/app/simulation.h"
#include "sim/core/errors.h"
#include "sim/metrics/hdf5_writer.h"
#include "sim/scenario/scenario.h"
#include "tests/app/cli_runner.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("kvsim_stream_test_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

const char* kTwoPools = R"(
model: models/qwen3-8b.json
gpu: h100-sxm
engine: {block_size: 16, num_gpu_blocks: 400, max_model_len: 2048}
cluster:
  pools: [{name: a, instances: 2}, {name: b, instances: 1}]
  router: {policy: llm_d}
workload:
  synthetic: {kind: shared_prefix, groups: 6, requests_per_group: 40, prefix_tokens: 700, suffix_tokens: 90,
              output_tokens: 12, rate: 30}
)";

TEST(RunFileStream, ChunkedFileReadsBackIdenticalToTheInMemoryWriter) {
  const fs::path dir = fresh_dir("identical");
  const Scenario s = parse_scenario(kTwoPools, "two_pools.yaml");
  RunOptions o;
  o.keep_records = true;
  o.hdf5_path = (dir / "streamed.h5").string();
  o.chunk_rows = 7;  // many chunks, and a partial one at the end
  const SimulationResult r = run_simulation(s, o);
  write_run_file((dir / "memory.h5").string(), *r.collector, r.summary, run_meta(r));
  RunFileReader a((dir / "streamed.h5").string());
  RunFileReader b((dir / "memory.h5").string());
  ASSERT_GT(r.collector->requests().size(), 200u);
  for (const char* d : {"/requests/arrival_s", "/requests/first_scheduled_s", "/requests/first_token_s",
                        "/requests/finish_s", "/steps/start_s", "/steps/end_s", "/timeseries/time_s",
                        "/timeseries/per_instance/time_s", "/timeseries/per_instance/kv_usage"}) {
    const auto x = a.read_doubles(d), y = b.read_doubles(d);
    ASSERT_EQ(x.size(), y.size()) << d;
    for (size_t i = 0; i < x.size(); ++i) EXPECT_TRUE(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]))) << d;
  }
  for (const char* d :
       {"/requests/id", "/requests/prompt_tokens", "/requests/cached_tokens", "/requests/instance", "/requests/pool",
        "/requests/miss_cause", "/requests/saved_state_offsets", "/steps/num_prefill_tokens", "/steps/instance",
        "/timeseries/running", "/timeseries/concurrency", "/timeseries/per_instance/instance"}) {
    EXPECT_EQ(a.read_ints(d), b.read_ints(d)) << d;
  }
  EXPECT_EQ(a.read_ints("/requests/id").size(), r.collector->requests().size());
  EXPECT_EQ(a.read_string_attribute("/requests/pool", "names"), "a,b");
  EXPECT_EQ(a.read_string_attribute("/summary", "json"), b.read_string_attribute("/summary", "json"));
  EXPECT_EQ(a.read_int_attribute("/meta", "complete"), 1);
  EXPECT_FALSE(fs::exists(dir / "streamed.h5.tmp"));
  fs::remove_all(dir);
}

// Streaming and keeping give the same summary (kvsim run streams; tests keep).
TEST(RunFileStream, StreamingAndKeptSummariesAgree) {
  const Scenario s = parse_scenario(kTwoPools, "two_pools.yaml");
  RunOptions kept;
  RunOptions streamed;
  streamed.keep_records = false;
  const std::string a = summary_to_json(run_simulation(s, kept).summary, {false});
  const std::string b = summary_to_json(run_simulation(s, streamed).summary, {false});
  EXPECT_EQ(a, b);
}

// A stop request partway: the file exists under its final name, says complete = 0 and the time reached,
// and holds the requests that finished before the stop.
TEST(RunFileStream, InterruptedRunIsFlaggedIncomplete) {
  const fs::path dir = fresh_dir("interrupt");
  const Scenario s = parse_scenario(kTwoPools, "two_pools.yaml");
  RunOptions o;
  o.keep_records = false;
  o.hdf5_path = (dir / "run.h5").string();
  int64_t checks = 0;
  o.stop = [&] { return ++checks > 2000; };
  const SimulationResult r = run_simulation(s, o);
  EXPECT_TRUE(r.interrupted);
  RunFileReader f(o.hdf5_path);
  EXPECT_EQ(f.read_int_attribute("/meta", "complete"), 0);
  EXPECT_NEAR(f.read_double_attribute("/meta", "sim_time_s"), r.sim_time_s, 1e-12);
  EXPECT_LT(r.summary.requests.count, 240);
  // Requests still in the cluster at the stop count as unfinished, without a row.
  EXPECT_GT(r.summary.requests.in_flight, 0);
  EXPECT_EQ(static_cast<int64_t>(f.read_ints("/requests/id").size()),
            r.summary.requests.count - r.summary.requests.in_flight);
  EXPECT_FALSE(fs::exists(o.hdf5_path + ".tmp"));
  fs::remove_all(dir);
}

// SIGINT through the CLI: exit 130, a message, the run file flagged incomplete, no temporary left.
TEST(RunFileStream, SigintStopsTheCliWithExit130) {
  if (std::system("command -v timeout >/dev/null 2>&1") != 0) GTEST_SKIP() << "no timeout(1)";
  const fs::path dir = fresh_dir("sigint");
  const std::string out = (dir / "long.h5").string();
  const testing::CliResult r = testing::run_kvsim(
      "run scenarios/bench-poisson-1m.yaml --set workload.synthetic.num_requests=100000000 --out " + out +
      " --summary-json " + (dir / "long.json").string() + " -q 2>&1 & pid=$!; sleep 2; kill -INT $pid; wait $pid");
  EXPECT_EQ(r.exit_code, 130) << r.out;
  EXPECT_NE(r.out.find("interrupted by SIGINT"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(out)) << r.out;
  EXPECT_TRUE(fs::exists(dir / "long.json"));
  RunFileReader f(out);
  EXPECT_EQ(f.read_int_attribute("/meta", "complete"), 0);
  EXPECT_FALSE(fs::exists(out + ".tmp"));
  fs::remove_all(dir);
}

// The summary JSON and the run file are committed as a pair: a stale summary of an earlier run is
// replaced, and no temporary is left.
TEST(RunFileStream, SummaryAndRunFileAreWrittenAsAPair) {
  const fs::path dir = fresh_dir("pair");
  const std::string h5 = (dir / "r.h5").string(), json = (dir / "r.json").string();
  std::ofstream(json) << "{\"stale\": true}\n";
  const Scenario s = parse_scenario(kTwoPools, "two_pools.yaml");
  RunOptions o;
  o.keep_records = false;
  o.hdf5_path = h5;
  o.summary_json_path = json;
  const SimulationResult r = run_simulation(s, o);
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, summary_to_json(r.summary));
  EXPECT_TRUE(fs::exists(h5));
  EXPECT_FALSE(fs::exists(h5 + ".tmp"));
  EXPECT_FALSE(fs::exists(json + ".tmp"));
  fs::remove_all(dir);
}

// output.steps every N keeps step records 0, N, 2N, ...; output.timeseries_interval samples at the first
// step end at or after each multiple of the interval, one per-instance row per instance seen.
TEST(RunFileStream, StepsEveryNAndTimeseriesInterval) {
  const Scenario all = parse_scenario(kTwoPools, "two_pools.yaml");
  const Scenario some =
      parse_scenario(kTwoPools, "two_pools.yaml", {"output.steps=every 3", "output.timeseries_interval=500ms"});
  const SimulationResult a = run_simulation(all);
  const SimulationResult b = run_simulation(some);
  EXPECT_EQ(b.fingerprint, a.fingerprint);  // outputs never change the simulation
  const int64_t n = a.collector->num_steps();
  ASSERT_GT(n, 30);
  EXPECT_EQ(static_cast<int64_t>(b.collector->steps().size()), (n + 2) / 3);
  for (size_t i = 0; i < b.collector->steps().size(); ++i)
    EXPECT_EQ(b.collector->steps()[i].end, a.collector->steps()[3 * i].end) << i;
  const TimeSeries& ts = b.collector->timeseries();
  ASSERT_GT(ts.size(), 1u);
  for (size_t i = 1; i < ts.size(); ++i)
    EXPECT_GE(std::floor(ts.time_s[i] / 0.5), std::floor(ts.time_s[i - 1] / 0.5) + 1);
  const InstanceSeries& is = b.collector->instance_series();
  EXPECT_LE(is.size(), 3 * ts.size());
  EXPECT_EQ(std::count(is.time_s.begin(), is.time_s.end(), ts.time_s.back()), 3);  // all three instances
  for (const char* bad : {"output.steps=every 0", "output.steps=sometimes", "output.compression=10"})
    EXPECT_THROW(parse_scenario(kTwoPools, "two_pools.yaml", {bad}), InputError) << bad;
}

// Two runs of one scenario through the CLI give byte-identical run files (cmp), wall time included
// nowhere in them.
TEST(RunFileStream, TwoRunsGiveByteIdenticalFiles) {
  const fs::path dir = fresh_dir("cmp");
  const std::string a = (dir / "a.h5").string(), b = (dir / "b.h5").string();
  const std::string run = "run scenarios/quickstart.yaml --set workload.trace.limit=300 -q --out ";
  ASSERT_EQ(testing::run_kvsim(run + a).exit_code, 0);
  ASSERT_EQ(testing::run_kvsim(run + b).exit_code, 0);
  EXPECT_EQ(std::system(("cmp -s " + a + " " + b).c_str()), 0) << a << " and " << b << " differ";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvsim
