// analysis/plot.py reads a run file written by write_run_file and produces every PNG it promises.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "sim/metrics/hdf5_writer.h"

namespace kvsim {

TEST(PlotScript, WritesEveryPngForARunFile) {
  // The first interpreter that has Debian's python3-h5py/-pandas/-matplotlib (a pyenv shim may not).
  std::string python;
  for (const char* candidate : {"python3", "/usr/bin/python3"}) {
    const std::string probe = std::string(candidate) + " -c 'import h5py, pandas, matplotlib' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) {
      python = candidate;
      break;
    }
  }
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
  for (const char* png : {"ttft_cdf.png", "e2e_cdf.png", "concurrency.png", "kv_usage.png", "hit_rate.png"}) {
    EXPECT_GT(fs::file_size(dir / "plots" / png), 1000u) << png;
  }
  fs::remove_all(dir);
}

}  // namespace kvsim
