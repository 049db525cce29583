#include "sim/app/run_command.h"

#include <sys/resource.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "sim/app/simulation.h"
#include "sim/core/errors.h"
#include "sim/metrics/hdf5_writer.h"

namespace po = boost::program_options;

namespace kvsim {
namespace {

// A progress bar on stderr, only when stderr is a terminal and the run has lasted over a second.
class ProgressBar {
 public:
  ProgressBar() : tty_(isatty(STDERR_FILENO)), start_(std::chrono::steady_clock::now()) {}
  void update(int64_t done, double sim_s) {
    if (!tty_) return;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (wall < 1.0 || wall - last_ < 0.1) return;
    last_ = wall;
    shown_ = true;
    std::fprintf(stderr, "\r  %lld requests done, simulated %.1f s, wall %.1f s", static_cast<long long>(done), sim_s,
                 wall);
    std::fflush(stderr);
  }
  ~ProgressBar() {
    if (shown_) std::fprintf(stderr, "\n");
  }

 private:
  bool tty_;
  bool shown_ = false;
  double last_ = 0;
  std::chrono::steady_clock::time_point start_;
};

// Writes "<path>.tmp" and renames it; on any failure the temporary file is removed and an
// OutputError names the path (a parent that is a file, a read-only directory, a full disk).
void write_text_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) {
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec) throw OutputError(path + ": cannot create directory " + p.parent_path().string() + ": " + ec.message());
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw OutputError(path + ": cannot write");
    f << text;
    f.close();
    if (!f) {
      std::filesystem::remove(tmp, ec);
      throw OutputError(path + ": write failed");
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw OutputError(path + ": cannot write: " + ec.message());
  }
}

}  // namespace

int run_run_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("kvsim run SCENARIO.yaml [options]\n\nReplays a workload through one vLLM-like engine");
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("set", po::value<std::vector<std::string>>()->composing(),
     "override a scenario key: --set engine.block_size=528 (repeatable)")
    ("out", po::value<std::string>(), "HDF5 run file (overrides output.hdf5)")
    ("summary-json", po::value<std::string>(), "write the summary as JSON to this path (overrides output.summary_json)")
    ("skip-bad-lines", "count and skip malformed trace lines instead of stopping")
    ("quiet,q", "do not print the summary table")
    ("scenario", po::value<std::string>(), "scenario YAML file (positional)");
  // clang-format on
  po::positional_options_description pos;
  pos.add("scenario", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string("run: ") + e.what());
  }
  if (vm.count("help")) {
    out << desc << "\nScenario keys are documented in scenarios/README.md.\n";
    return 0;
  }
  if (!vm.count("scenario")) throw InputError("run: no scenario given (try: kvsim run scenarios/quickstart.yaml)");
  std::vector<std::string> overrides =
      vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (vm.count("skip-bad-lines")) overrides.push_back("workload.trace.skip_bad_lines=true");
  Scenario s = load_scenario(vm["scenario"].as<std::string>(), overrides);
  if (vm.count("out")) s.output.hdf5 = vm["out"].as<std::string>();
  if (vm.count("summary-json")) s.output.summary_json = vm["summary-json"].as<std::string>();

  SimulationResult res;
  {
    ProgressBar bar;
    res = run_simulation(s, [&](int64_t done, double sim_s) { bar.update(done, sim_s); });
  }
  const std::string json = summary_to_json(res.summary);
  if (s.output.summary_json) write_text_atomically(*s.output.summary_json, json);
  if (s.output.hdf5) {
    RunMeta meta;
    meta.scenario_yaml = s.resolved_yaml;
    meta.seed = s.seed;
    meta.events = res.events;
    meta.fingerprint = res.fingerprint;
    write_run_file(*s.output.hdf5, *res.collector, res.summary, meta);
  }
  if (!vm.count("quiet")) {
    out << "kvsim run " << s.path << ": " << res.model.name << " on " << s.gpu << ", block size "
        << res.engine.layout.block_size << ", " << res.engine.layout.num_blocks << " blocks ("
        << res.engine.layout.describe() << ")\n";
    if (res.skipped_lines) out << "skipped " << res.skipped_lines << " malformed trace lines\n";
    out << summary_to_text(res.summary);
    if (s.output.hdf5) out << "run file: " << *s.output.hdf5 << "\n";
    if (s.output.summary_json) out << "summary: " << *s.output.summary_json << "\n";
  }
  return 0;
}

constexpr int kMaxBenchRepeat = 1000;

int run_bench_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "kvsim bench [options]\n\nReplays a scenario (default: the whole Mooncake conversation trace on Qwen3-8B / H100 "
      "with prefix caching) and reports simulator speed");
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("scenario", po::value<std::string>()->default_value("scenarios/bench-mooncake.yaml"), "scenario to replay")
    ("set", po::value<std::vector<std::string>>()->composing(), "override a scenario key (repeatable)")
    ("repeat", po::value<int>()->default_value(1), "runs; the fastest is reported");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string("bench: ") + e.what());
  }
  if (vm.count("help")) {
    out << desc << "\n";
    return 0;
  }
  const std::vector<std::string> overrides =
      vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  const int repeat = vm["repeat"].as<int>();
  if (repeat < 1 || repeat > kMaxBenchRepeat)
    throw InputError("--repeat must be in [1, " + std::to_string(kMaxBenchRepeat) + "] (got " + std::to_string(repeat) +
                     ")");
  Scenario s = load_scenario(vm["scenario"].as<std::string>(), overrides);
  s.output = {};
  double best = 1e300;
  SimulationResult res;
  for (int i = 0; i < repeat; ++i) {
    res = run_simulation(s);
    best = std::min(best, res.wall_s);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "bench %s: %lld requests, %llu events, simulated %.1f s\n"
                "  wall %.3f s (best of %d): %.0f requests/s, %.0f events/s; peak RSS %.1f MiB\n",
                s.path.c_str(), static_cast<long long>(res.summary.requests.count),
                static_cast<unsigned long long>(res.events),
                res.collector->steps().empty() ? 0.0 : res.collector->steps().back().end.seconds(), best, repeat,
                res.summary.requests.count / best, res.events / best, ru.ru_maxrss / 1024.0);
  out << buf;
  return 0;
}

}  // namespace kvsim
