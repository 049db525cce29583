#include "sim/app/run_command.h"

#include <sys/resource.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "sim/app/commands.h"
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

// The signal that asked the run to stop (0: none). A signal handler can only reach static storage;
// this is the one piece of it, read through RunOptions::stop.
volatile std::sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int sig) { g_stop_signal = sig; }

// SIGINT / SIGTERM stop the run at the next event while alive; the previous handlers come back after.
class SignalGuard {
 public:
  SignalGuard() {
    g_stop_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalGuard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// Fails now (OutputError naming the path) if `path` cannot be written later: creates its directory and
// a probe file beside it, then removes the probe.
void check_writable(const std::string& path) {
  make_parent_directories(path);
  std::error_code ec;
  const std::string probe = path + ".tmp";
  {
    std::ofstream f(probe, std::ios::binary);
    if (!f) throw OutputError(path + ": cannot write");
  }
  std::filesystem::remove(probe, ec);
}

}  // namespace

int run_run_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "kvsim run SCENARIO.yaml [options]\n\nReplays a workload through one vLLM-like engine, or through pools of them "
      "behind a router (the "
      "scenario's cluster: section)",
      kHelpLineLength, kHelpLineLength / 2);
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("set", po::value<std::vector<std::string>>()->composing(),
     "override a scenario key: --set engine.block_size=528 (repeatable)")
    ("out", po::value<std::string>(), "HDF5 run file (overrides output.hdf5)")
    ("summary-json", po::value<std::string>(), "write the summary as JSON to this path (overrides output.summary_json)")
    ("csv", po::value<std::string>(), "write one CSV line per request to this path, streamed as the run goes")
    ("trace-out", po::value<std::string>(), "write a Chrome / Perfetto trace (JSON) of steps and requests to this path")
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

  // Output paths are checked before the run, not after minutes of simulation: each writable and not a
  // folder, and no file named by two outputs (one would overwrite the other at the end).
  std::vector<std::pair<std::string, std::string>> outputs;  // (option, path)
  if (s.output.hdf5) outputs.emplace_back("--out (output.hdf5)", *s.output.hdf5);
  if (s.output.summary_json) outputs.emplace_back("--summary-json (output.summary_json)", *s.output.summary_json);
  if (vm.count("csv")) outputs.emplace_back("--csv", vm["csv"].as<std::string>());
  if (vm.count("trace-out")) outputs.emplace_back("--trace-out", vm["trace-out"].as<std::string>());
  // The inputs an output must not replace (a summary written over the scenario destroyed it).
  std::vector<std::pair<std::string, std::string>> inputs = {{"the scenario", s.path}, {"the model config", s.model}};
  if (s.workload.trace) inputs.emplace_back("the trace", s.workload.trace->path);
  if (!s.cluster.topology.empty()) inputs.emplace_back("the topology file", s.cluster.topology);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& path = outputs[i].second;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      throw OutputError(path + ": is a folder, not a file (" + outputs[i].first + " names it)");
    // Outputs are written beside the path and renamed over it: a device, FIFO or link there would be
    // replaced by a plain file (as root, /dev/null itself).
    const auto st = std::filesystem::symlink_status(path, ec);
    if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
      throw OutputError(path + ": not a plain file (a link, device or FIFO; " + outputs[i].first +
                        " names it): kvsim writes a new file and renames it over the path, so name a plain file");
    for (const auto& [what, in] : inputs)
      if (std::filesystem::exists(in, ec) && std::filesystem::equivalent(in, path, ec))
        throw OutputError(path + ": is " + what + " (" + outputs[i].first + " would overwrite it)");
    for (size_t j = 0; j < i; ++j)
      if (std::filesystem::weakly_canonical(outputs[j].second, ec) == std::filesystem::weakly_canonical(path, ec))
        throw OutputError(path + ": named by both " + outputs[j].first + " and " + outputs[i].first +
                          "; give each its own file");
    check_writable(path);
  }
  RunOptions ro;
  ro.keep_records = false;  // rows stream to the run file; memory stays flat however long the run
  if (s.output.hdf5) ro.hdf5_path = *s.output.hdf5;
  if (s.output.summary_json) ro.summary_json_path = *s.output.summary_json;
  if (vm.count("csv")) ro.csv_path = vm["csv"].as<std::string>();
  if (vm.count("trace-out")) ro.trace_path = vm["trace-out"].as<std::string>();
  ro.stop = [] { return g_stop_signal != 0; };
  SimulationResult res;
  {
    ProgressBar bar;
    ro.progress = [&](int64_t done, double sim_s) { bar.update(done, sim_s); };
    const SignalGuard signals;
    res = run_simulation(s, ro);
  }
  if (!vm.count("quiet")) {
    out << "kvsim run " << s.path << ": " << res.model.name << " on " << s.gpu << ", block size "
        << res.engine.layout.block_size << ", " << res.engine.layout.num_blocks << " blocks ("
        << res.engine.layout.describe() << ")\n";
    out << summary_to_text(res.summary);
    if (s.output.hdf5) out << "run file: " << *s.output.hdf5 << "\n";
    if (s.output.summary_json) out << "summary: " << *s.output.summary_json << "\n";
  } else if (res.skipped_lines > 0) {
    // Quiet: the lines a trace lost still show (the summary JSON has them too).
    std::cerr << "kvsim: skipped " << res.skipped_lines << " malformed trace lines\n";
  }
  if (res.interrupted) {
    const int sig = g_stop_signal;
    std::cerr << "kvsim: interrupted by " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << " at simulated "
              << res.sim_time_s << " s; partial results written"
              << (s.output.hdf5 ? " (" + *s.output.hdf5 + ": /meta/complete = 0)" : std::string()) << "\n";
    return 128 + sig;
  }
  return 0;
}

}  // namespace kvsim
