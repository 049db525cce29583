#include "sim/app/sweep_command.h"

#include <unistd.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "sim/app/commands.h"
#include "sim/app/simulation.h"
#include "sim/core/errors.h"
#include "sim/sweep/mpi_world.h"
#include "sim/sweep/sweep_folder.h"
#include "sim/sweep/sweep_plan.h"
#include "sim/sweep/sweep_runner.h"
#include "sim/sweep/sweep_table.h"

namespace po = boost::program_options;

namespace kvsim {
namespace {

const char* kSweepHelp =
    "\nSweep file keys (scenarios/sweeps/README.md has examples):\n"
    "  name      names the output folder runs/<name> (default: the file name)\n"
    "  base      the base scenario: a path relative to the sweep file, or an inline scenario mapping\n"
    "  set       --set overrides applied to every point\n"
    "  axes      scenario key path -> list of values (engine.block_size: [16, 64, 256])\n"
    "  combine   grid (every combination, first axis slowest; default) | zip (the i-th value of each)\n"
    "  variants  name -> list of --set strings: an outer axis 'variant' (none may set an axis's key)\n"
    "  seeds     N: repeat every point N times, an inner axis 'repeat'\n"
    "  seed_key  point (default: each point's seed derives from the base seed and the point's key) |\n"
    "            repeat (from the repeat index alone: the same random draws at every point of a repeat)\n"
    "\nEvery point is validated before any runs (its keys, its GPU, its engine resolved on it). The folder\n"
    "gets sweep.json, points/p<index>.json (one per point, written atomically; a point whose file exists\n"
    "is skipped, so rerunning resumes), then table.csv and table.h5 (one row per point, byte-identical\n"
    "however the points were spread) and wall_times.csv. A point that fails when it runs (a trace that\n"
    "cannot be read) is recorded (points/p<index>.failed.json, error column) and the others go on; the\n"
    "exit code is then 1.\n"
    "\nAcross machines: `mpirun -n N kvsim sweep SWEEP.yaml` deals points round-robin to the ranks and\n"
    "rank 0 merges (an MPI build; as root add --allow-run-as-root, and --oversubscribe for more ranks\n"
    "than cores). Slurm arrays: --shard $SLURM_ARRAY_TASK_ID/N in each task, then kvsim sweep merge DIR.\n";

// "i/n" with 0 <= i < n.
std::pair<int, int> parse_shard(const std::string& s) {
  const auto slash = s.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument(s);
    size_t a = 0, b = 0;
    const int i = std::stoi(s.substr(0, slash), &a);
    const int n = std::stoi(s.substr(slash + 1), &b);
    if (a != slash || b != s.size() - slash - 1 || n < 1 || i < 0 || i >= n) throw std::invalid_argument(s);
    return {i, n};
  } catch (const std::exception&) {
    throw InputError("sweep: --shard: expected i/n with 0 <= i < n (got '" + s + "')");
  }
}

int default_threads(int ranks_on_this_machine) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, ranks_on_this_machine));
}

void print_errors(const SweepRunReport& r) {
  for (const std::string& e : r.errors) std::cerr << "kvsim: sweep: " << e << "\n";
}

int print_table(const SweepTableReport& t, std::ostream& out) {
  out << "table: " << t.csv_path << ", " << t.hdf5_path << " (" << t.points
      << (t.points == 1 ? " point: " : " points: ") << t.ok << " ok, " << t.failed << " failed, " << t.missing
      << " missing)\n";
  return t.failed + t.missing > 0 ? 1 : 0;
}

int merge_command(const std::vector<std::string>& args, std::ostream& out) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') {
    if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
      out << "kvsim sweep merge DIR\n\nBuilds DIR/table.csv, DIR/table.h5 and DIR/wall_times.csv from a sweep "
             "folder's point files (missing points are rows with status 'missing'; exit code 1 then).\n";
      return 0;
    }
    throw InputError("sweep merge: expected one sweep folder (kvsim sweep merge runs/<name>)");
  }
  return print_table(merge_sweep(args[0]), out);
}

}  // namespace

int run_sweep_command(const std::vector<std::string>& args, std::ostream& out) {
  if (!args.empty() && args[0] == "merge") return merge_command({args.begin() + 1, args.end()}, out);
  po::options_description desc(
      "kvsim sweep SWEEP.yaml [options]\nkvsim sweep merge DIR\n\nRuns every point of a sweep (a base scenario "
      "plus axes of scenario keys) as an independent simulation, on local threads, as one shard of an array job, "
      "or on MPI ranks, and merges one table",
      kHelpLineLength, kHelpLineLength / 2);
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("jobs,j", po::value<int>(), "points run at once on this machine (default: all cores; under mpirun: cores / ranks "
     "on the machine)")
    ("out", po::value<std::string>(), "sweep folder (default: runs/<sweep name>)")
    ("shard", po::value<std::string>(), "run only points with index % n == i (i/n), and do not merge")
    ("set", po::value<std::vector<std::string>>()->composing(),
     "override a scenario key in every point (after the file's set:; not a key an axis or a variant sets, nor an output key; repeatable)")
    ("list", "print the points (index, key, seed) and exit without running")
    ("no-merge", "do not build the table after running")
    ("sweep", po::value<std::string>(), "sweep YAML file (positional)");
  // clang-format on
  po::positional_options_description pos;
  pos.add("sweep", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string("sweep: ") + e.what());
  }
  if (vm.count("help")) {
    out << desc << kSweepHelp << "This build: MPI runner " << (built_with_mpi() ? "on" : "off (configured without MPI)")
        << ".\n";
    return 0;
  }
  if (!vm.count("sweep")) throw InputError("sweep: no sweep file given (try: kvsim sweep scenarios/sweeps/...yaml)");
  const std::vector<std::string> sets =
      vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  const SweepPlan plan = plan_sweep(load_sweep_file(vm["sweep"].as<std::string>()), sets);
  // Every point resolves before any runs: an unknown GPU on an axis, or a model that does not fit on
  // one, is one line naming the point (exit 2), not a failed point after the others ran.
  CheckCache inputs;
  for (const SweepPoint& p : plan.points) {
    try {
      check_scenario(point_scenario(plan, p), &inputs);
    } catch (const InputError& e) {
      throw InputError(plan.file.path + ": point " + std::to_string(p.index) + " (" + (p.key.empty() ? "base" : p.key) +
                       "): " + e.what());
    }
  }
  if (vm.count("list")) {
    for (const SweepPoint& p : plan.points)
      out << p.index << "\t" << (p.key.empty() ? "base" : p.key) << "\tseed=" << p.seed << "\n";
    return 0;
  }
  SweepRunOptions opt;
  opt.out_dir = vm.count("out") ? vm["out"].as<std::string>() : "runs/" + plan.file.name;
  // An empty --out would write the sweep folder's files into the working directory.
  if (opt.out_dir.empty()) throw InputError("sweep: --out: empty; name the sweep folder");
  opt.progress = isatty(STDERR_FILENO);
  if (vm.count("jobs") && vm["jobs"].as<int>() < 1) throw InputError("sweep: --jobs: must be >= 1");
  // Nothing per request or step is kept: a point's memory stays flat however long its trace.
  const PointSimulator simulate = [](const Scenario& s) {
    RunOptions ro;
    ro.keep_records = false;
    return run_simulation(s, ro).summary;
  };

  if (launched_by_mpirun()) {
    if (vm.count("shard")) throw InputError("sweep: --shard and mpirun: use one or the other");
    MpiWorld world;
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    opt.threads = vm.count("jobs") ? vm["jobs"].as<int>() : default_threads(local ? std::atoi(local) : 1);
    opt.shard = world.rank();
    opt.shards = world.size();
    opt.progress = opt.progress && world.rank() == 0;
    int code = 0;
    try {
      if (world.rank() == 0) prepare_sweep_folder(plan, opt.out_dir);
      world.barrier();
      const SweepRunReport r = run_sweep_points(plan, opt, simulate);
      print_errors(r);
      const auto all = world.gather({r.assigned, r.skipped, r.ran, r.failed});
      if (world.rank() == 0) {
        std::array<int, 4> sum{};
        for (const auto& c : all)
          for (int i = 0; i < 4; ++i) sum[i] += c[i];
        out << "kvsim sweep " << plan.file.name << ": " << plan.points.size() << " points on " << world.size()
            << " ranks (" << sum[2] << " run, " << sum[1] << " skipped, " << sum[3] << " failed) in " << opt.out_dir
            << "\n";
        code = vm.count("no-merge") ? (sum[3] > 0) : print_table(merge_sweep(opt.out_dir), out);
      }
    } catch (const std::exception& e) {
      std::cerr << "kvsim: error: " << e.what() << "\n";
      world.abort(2);
    }
    return code;
  }

  opt.threads = vm.count("jobs") ? vm["jobs"].as<int>() : default_threads(1);
  if (vm.count("shard")) std::tie(opt.shard, opt.shards) = parse_shard(vm["shard"].as<std::string>());
  prepare_sweep_folder(plan, opt.out_dir);
  const SweepRunReport r = run_sweep_points(plan, opt, simulate);
  print_errors(r);
  out << "kvsim sweep " << plan.file.name << ": " << r.assigned << " of " << plan.points.size() << " points"
      << (opt.shards > 1 ? " (shard " + std::to_string(opt.shard) + "/" + std::to_string(opt.shards) + ")" : "") << " ("
      << r.ran << " run, " << r.skipped << " skipped, " << r.failed << " failed) in " << opt.out_dir << "\n";
  if (opt.shards > 1 || vm.count("no-merge")) {
    if (opt.shards > 1) out << "merge the shards with: kvsim sweep merge " << opt.out_dir << "\n";
    return r.failed > 0 ? 1 : 0;
  }
  return print_table(merge_sweep(opt.out_dir), out);
}

}  // namespace kvsim
