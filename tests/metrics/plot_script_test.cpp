// analysis/plot.py reads a run file written by write_run_file and produces every PNG it promises.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/metrics/hdf5_writer.h"

namespace kvsim {

namespace {
// The first interpreter that has Debian's python3-h5py/-pandas/-matplotlib (a pyenv shim may not).
std::string plotting_python() {
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    const std::string probe = std::string(candidate) + " -c 'import h5py, pandas, matplotlib' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return candidate;
  }
  return "";
}
}  // namespace

TEST(PlotScript, WritesEveryPngForARunFile) {
  const std::string python = plotting_python();
  if (python.empty()) GTEST_SKIP() << "no python3 with h5py, pandas and matplotlib";
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kvsim_plot_script_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  RunCollector c;
  for (int i = 0; i < 50; ++i) {
    RequestRecord r;
    r.id = RequestId(i);
    r.arrival = SimTime::zero() + Duration::ms(20 * i);
    r.first_scheduled = r.arrival + Duration::ms(1);
    r.first_token = r.arrival + Duration::ms(30 + i % 7);
    r.finish = r.first_token + Duration::ms(200);
    r.prompt_tokens = 1000;
    r.cached_tokens = 16 * (i % 10) * 6;
    r.output_tokens = 20;
    r.finished = i < 48;
    c.on_request_done(r);
    StepRecord s;
    s.start = r.arrival;
    s.end = r.arrival + Duration::ms(15);
    s.running = i % 5;
    s.waiting = i % 3;
    s.kv_blocks_used = 10 * (i % 9);
    c.on_step(s);
  }
  const std::string run = (dir / "run.h5").string();
  write_run_file(run, c, c.summarize({}), RunMeta{});
  const std::string cmd = python + " " + KVSIM_SOURCE_DIR + "/analysis/plot.py " + run + " --out " +
                          (dir / "plots").string() + " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const char* png : {"ttft_cdf.png", "e2e_cdf.png", "tpot_cdf.png", "concurrency.png", "kv_usage.png",
                          "hit_rate.png", "throughput.png", "steps.png", "lost_reuse.png"}) {
    EXPECT_GT(fs::file_size(dir / "plots" / png), 1000u) << png;
  }
  EXPECT_FALSE(fs::exists(dir / "plots" / "instance_load.png")) << "one instance: no per-instance plots";
  EXPECT_FALSE(fs::exists(dir / "plots" / "ttft_breakdown.png")) << "colocated: no disaggregation plots";
  EXPECT_FALSE(fs::exists(dir / "plots" / "tier_occupancy.png")) << "no offload: no tier plots";
  fs::remove_all(dir);
}

TEST(PlotScript, ClusterRunGetsPerInstancePlots) {
  const std::string python = plotting_python();
  if (python.empty()) GTEST_SKIP() << "no python3 with h5py, pandas and matplotlib";
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kvsim_plot_cluster_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  RunCollector c;
  for (int i = 0; i < 40; ++i) {
    RequestRecord r;
    r.id = RequestId(i);
    r.arrival = SimTime::zero() + Duration::ms(10 * i);
    r.first_scheduled = r.arrival;
    r.first_token = r.arrival + Duration::ms(20);
    r.finish = r.first_token + Duration::ms(100);
    r.prompt_tokens = 500;
    r.cached_tokens = 100 * (i % 3);
    r.output_tokens = 10;
    r.finished = true;
    r.instance = i % 3;
    r.pool = r.instance == 2 ? 1 : 0;
    c.on_request_done(r);
    StepRecord s;
    s.start = r.arrival;
    s.end = r.arrival + Duration::ms(5);
    s.running = 1 + i % 4;
    s.kv_blocks_used = 5 * (i % 7);
    s.instance = i % 3;
    c.on_step(s);
  }
  RunInfo info;
  info.router = "round_robin";
  info.pools = {PoolInfo{"a", "colocated", "h100-sxm", 1, 0, 2, 100}, PoolInfo{"b", "colocated", "h200", 2, 2, 1, 300}};
  const std::string run = (dir / "run.h5").string();
  write_run_file(run, c, c.summarize(info), RunMeta{});
  const std::string cmd = python + " " + KVSIM_SOURCE_DIR + "/analysis/plot.py " + run + " --out " +
                          (dir / "plots").string() + " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const char* png : {"instance_load.png", "instance_hit_rate.png"})
    EXPECT_GT(fs::file_size(dir / "plots" / png), 1000u) << png;
  fs::remove_all(dir);
}

// A disaggregated run (kvsim on the 1P1D NVLink scenario) gets the link-utilisation and TTFT-breakdown
// panels, besides every PNG of a single-engine run; a colocated run (above) gets neither.
TEST(PlotScript, DisaggregatedRunGetsLinkAndTtftBreakdownPlots) {
  const std::string python = plotting_python();
  if (python.empty()) GTEST_SKIP() << "no python3 with h5py, pandas and matplotlib";
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kvsim_plot_disagg_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string run = (dir / "run.h5").string();
  const std::string sim = std::string("cd ") + KVSIM_SOURCE_DIR + " && " + KVSIM_BINARY +
                          " run scenarios/disagg/qwen3-8b-1p1d-nvlink.yaml -q --set workload.trace.limit=200 --out " +
                          run + " >/dev/null";
  ASSERT_EQ(std::system(sim.c_str()), 0) << sim;
  const std::string cmd = python + " " + KVSIM_SOURCE_DIR + "/analysis/plot.py " + run + " --out " +
                          (dir / "plots").string() + " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const char* png : {"link_utilisation.png", "ttft_breakdown.png", "ttft_cdf.png", "instance_load.png"})
    EXPECT_GT(fs::file_size(dir / "plots" / png), 1000u) << png;
  fs::remove_all(dir);
}

// A KV offload run (kvsim on the host + NVMe scenario) gets the tier occupancy and hits-by-tier panels,
// and its run file the tier columns (/timeseries/tier<i>_used_bytes, /requests/tier<i>_cached_tokens,
// /steps/store_wait_s); a run without offload (above) gets neither panel.
TEST(PlotScript, OffloadRunGetsTierPlots) {
  const std::string python = plotting_python();
  if (python.empty()) GTEST_SKIP() << "no python3 with h5py, pandas and matplotlib";
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kvsim_plot_offload_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string run = (dir / "run.h5").string();
  const std::string sim = std::string("cd ") + KVSIM_SOURCE_DIR + " && " + KVSIM_BINARY +
                          " run scenarios/offload/qwen3-8b-h100-host-64g-nvme.yaml -q --set workload.trace.limit=200 "
                          "--out " +
                          run + " >/dev/null";
  ASSERT_EQ(std::system(sim.c_str()), 0) << sim;
  {
    RunFileReader f(run);
    for (const char* d : {"/timeseries/tier0_used_bytes", "/timeseries/tier1_used_bytes",
                          "/requests/tier0_cached_tokens", "/requests/tier1_cached_tokens", "/steps/store_wait_s"})
      EXPECT_TRUE(f.exists(d)) << d;
    EXPECT_FALSE(f.exists("/timeseries/tier2_used_bytes"));
  }
  const std::string cmd = python + " " + KVSIM_SOURCE_DIR + "/analysis/plot.py " + run + " --out " +
                          (dir / "plots").string() + " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const char* png : {"tier_occupancy.png", "tier_hits.png", "ttft_cdf.png"})
    EXPECT_GT(fs::file_size(dir / "plots" / png), 1000u) << png;
  fs::remove_all(dir);
}

// analysis/runfile.py returns /requests sorted by id (kvsim writes them in leave order) with names
// decoded; its --csv writes one CSV per table.
TEST(RunfileHelper, RequestsComeBackSortedByIdWithNames) {
  const std::string python = plotting_python();
  if (python.empty()) GTEST_SKIP() << "no python3 with h5py, pandas and matplotlib";
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kvsim_runfile_test_" + std::to_string(getpid()));
  fs::remove_all(dir);
  RunCollector c;
  for (int id : {3, 1, 2, 0}) {  // leave order, not id order
    RequestRecord r;
    r.id = RequestId(id);
    r.first_scheduled = r.arrival;
    r.finish = r.arrival + Duration::ms(10 + id);
    r.prompt_tokens = 100;
    r.output_tokens = 1;
    r.finished = true;
    r.cause = id == 2 ? MissCause::kEvicted : MissCause::kNone;
    c.on_request_done(r);
  }
  const std::string run = (dir / "run.h5").string();
  write_run_file(run, c, c.summarize({}), RunMeta{});
  const std::string cmd = python + " " + KVSIM_SOURCE_DIR + "/analysis/runfile.py " + run + " --csv " +
                          (dir / "csv").string() + " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(dir / "csv" / "requests.csv");
  const auto split = [](const std::string& text) {
    std::vector<std::string> out;
    for (size_t a = 0, b; a <= text.size(); a = b + 1) {
      b = std::min(text.find(',', a), text.size());
      out.push_back(text.substr(a, b - a));
    }
    return out;
  };
  std::string header, line;
  std::getline(in, header);
  const std::vector<std::string> cols = split(header);
  const auto col = [&](const std::string& name) {
    return static_cast<size_t>(std::find(cols.begin(), cols.end(), name) - cols.begin());
  };
  ASSERT_LT(col("id"), cols.size());
  ASSERT_LT(col("miss_cause_name"), cols.size());
  std::vector<std::string> ids, causes;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = split(line);
    ids.push_back(f[col("id")]);
    causes.push_back(f[col("miss_cause_name")]);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(causes, (std::vector<std::string>{"none", "none", "evicted", "none"}));
  fs::remove_all(dir);
}

}  // namespace kvsim
