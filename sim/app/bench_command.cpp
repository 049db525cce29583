// kvsim bench: simulator speed on one scenario, or the suite of issue targets, each case in a process of
// its own so that its peak RSS and CPU time are its own (wait4's rusage of the child).
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/app/commands.h"
#include "sim/app/run_command.h"
#include "sim/app/simulation.h"
#include "sim/core/errors.h"

extern char** environ;

namespace po = boost::program_options;

namespace kvsim {
namespace {

// One case of `kvsim bench --suite`: a scenario, overrides, whether it writes the run file, and the
// reference figure its wall time is compared with.
struct SuiteCase {
  std::string label;
  std::string scenario;
  std::vector<std::string> overrides;
  bool hdf5 = false;
  double target_wall_s = 0;  // the target (0: none)
  double reference_s = 0;    // a reference wall time (Vidur's) for the ratio column (0: none)
  std::string reference;
};

std::vector<SuiteCase> suite_cases() {
  return {
      {"azure-conv llama-2-7b/a100", "scenarios/bench-azure-vidur.yaml", {}, true, 0.15, 15.21, "Vidur 15.21 s"},
      {"mooncake conversation", "scenarios/bench-mooncake.yaml", {}, false, 1.0, 0, ""},
      {"poisson 1M qwen3-8b/h100", "scenarios/bench-poisson-1m.yaml", {}, true, 0, 0, ""},
      {"poisson 10M qwen3-8b/h100",
       "scenarios/bench-poisson-1m.yaml",
       {"workload.synthetic.num_requests=10000000"},
       true,
       60.0,
       0,
       ""},
  };
}

struct ChildResult {
  std::string line;  // the child's --report line
  double cpu_s = 0;
  double rss_mib = 0;
  int status = -1;
};

// Runs this executable with `args` and returns its last output line, CPU time and peak RSS.
ChildResult run_child(const std::vector<std::string>& args) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string out_path = std::filesystem::temp_directory_path() / ("kvsim_bench_" + std::to_string(getpid()));
  std::vector<std::string> argv_s{self};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  ChildResult r;
  const int rc = posix_spawn(&pid, self.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw InputError("bench: cannot start " + self);
  rusage ru{};
  int status = 0;
  wait4(pid, &status, 0, &ru);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  r.rss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  std::ifstream in(out_path);
  for (std::string l; std::getline(in, l);)
    if (l.rfind("report ", 0) == 0) r.line = l;
  std::error_code ec;
  std::filesystem::remove(out_path, ec);
  return r;
}

int run_suite(std::ostream& out) {
  const std::string dir = std::filesystem::temp_directory_path() / ("kvsim_bench_suite_" + std::to_string(getpid()));
  out << "kvsim bench --suite: each case in its own process (wall from the run, CPU and peak RSS of the process)\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-28s %9s %9s %10s %12s %12s %10s  %s\n", "case", "wall s", "CPU s", "RSS MiB",
                "steps", "requests/s", "target", "reference");
  out << buf;
  int failed = 0;
  const std::vector<SuiteCase> cases = suite_cases();
  for (size_t k = 0; k < cases.size(); ++k) {
    const SuiteCase& c = cases[k];
    std::vector<std::string> args{"bench", "--scenario", c.scenario, "--report"};
    for (const std::string& o : c.overrides) args.insert(args.end(), {"--set", o});
    if (c.hdf5) args.insert(args.end(), {"--out", dir + "/" + std::to_string(k) + ".h5"});
    const ChildResult r = run_child(args);
    double wall = 0, steps = 0, requests = 0;
    std::istringstream is(r.line);
    std::string word;
    is >> word >> wall >> steps >> requests;
    if (r.status != 0 || r.line.empty()) {
      ++failed;
      out << c.label << ": failed (exit " << r.status << ")\n";
      continue;
    }
    const std::string target = c.target_wall_s > 0 ? (wall <= c.target_wall_s ? "met " : "MISSED ") +
                                                         std::to_string(c.target_wall_s).substr(0, 4) + " s"
                                                   : "-";
    std::string ref = "-";
    if (c.reference_s > 0) {
      char rb[96];
      std::snprintf(rb, sizeof rb, "%.0fx %s", c.reference_s / wall, c.reference.c_str());
      ref = rb;
    }
    std::snprintf(buf, sizeof buf, "%-28s %9.3f %9.2f %10.1f %12.0f %12.0f %10s  %s\n", c.label.c_str(), wall, r.cpu_s,
                  r.rss_mib, steps, requests / wall, target.c_str(), ref.c_str());
    out << buf;
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int run_bench_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "kvsim bench [options]\n\nReplays a scenario (default: the whole Mooncake conversation trace on Qwen3-8B / H100 "
      "with prefix caching) and reports simulator speed; --suite runs the speed targets, each in its own process",
      kHelpLineLength, kHelpLineLength / 2);
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("scenario", po::value<std::string>()->default_value("scenarios/bench-mooncake.yaml"), "scenario to replay")
    ("set", po::value<std::vector<std::string>>()->composing(), "override a scenario key (repeatable)")
    ("repeat", po::value<int>()->default_value(1), "runs; the fastest is reported (1 to 1000)")
    ("out", po::value<std::string>(), "also write the run file (HDF5), streamed as in kvsim run")
    ("suite", "run every speed target (Azure / Vidur, Mooncake, 1 M and 10 M Poisson) and print a table")
    ("report", "print one machine-readable line: report WALL_S STEPS REQUESTS EVENTS");
  // clang-format on
  po::variables_map vm;
  try {
    // No positional arguments: an empty description makes a stray word an error, not silently ignored.
    po::store(po::command_line_parser(args).options(desc).positional(po::positional_options_description()).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string("bench: ") + e.what());
  }
  if (vm.count("help")) {
    out << desc << "\n";
    return 0;
  }
  if (vm.count("suite")) {
    // The suite runs its own cases: another option would be read and ignored.
    for (const char* o : {"set", "out", "report"})
      if (vm.count(o)) throw InputError(std::string("bench: --") + o + " does not combine with --suite");
    if (!vm["scenario"].defaulted()) throw InputError("bench: --scenario does not combine with --suite");
    if (!vm["repeat"].defaulted()) throw InputError("bench: --repeat does not combine with --suite");
    return run_suite(out);
  }
  constexpr int kMaxRepeat = 1000;
  const int repeat = vm["repeat"].as<int>();
  if (repeat < 1 || repeat > kMaxRepeat)
    throw InputError("bench: --repeat must be in [1, " + std::to_string(kMaxRepeat) + "] (got " +
                     std::to_string(repeat) + ")");
  const std::vector<std::string> overrides =
      vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  Scenario s = load_scenario(vm["scenario"].as<std::string>(), overrides);
  s.output.hdf5.reset();
  s.output.summary_json.reset();
  double best = 1e300;
  SimulationResult res;
  RunOptions ro;
  ro.keep_records = false;  // as kvsim run: nothing per request or step is kept
  if (vm.count("out")) ro.hdf5_path = vm["out"].as<std::string>();
  for (int i = 0; i < repeat; ++i) {
    res = run_simulation(s, ro);
    best = std::min(best, res.wall_s);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  int64_t instances = 0;
  for (const PoolRun& p : res.pools) instances += p.info.instances;
  const auto steps = static_cast<double>(res.collector->num_steps());
  char buf[640];
  if (vm.count("report")) {
    std::snprintf(buf, sizeof buf, "report %.6f %.0f %lld %llu\n", best, steps,
                  static_cast<long long>(res.summary.requests.count), static_cast<unsigned long long>(res.events));
    out << buf;
    return 0;
  }
  std::snprintf(buf, sizeof buf,
                "bench %s: %lld requests, %lld instance%s, %.0f steps, %llu events, simulated %.1f s\n"
                "  wall %.3f s (best of %d): %.0f requests/s, %.0f events/s, %.2f us per step; peak RSS %.1f MiB\n",
                s.path.c_str(), static_cast<long long>(res.summary.requests.count), static_cast<long long>(instances),
                instances == 1 ? "" : "s", steps, static_cast<unsigned long long>(res.events), res.sim_time_s, best,
                repeat, res.summary.requests.count / best, res.events / best, steps > 0 ? best / steps * 1e6 : 0.0,
                ru.ru_maxrss / 1024.0);
  out << buf;
  return 0;
}

}  // namespace kvsim
