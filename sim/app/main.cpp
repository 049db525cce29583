// kvsim: a discrete-event simulator of LLM serving built around the KV cache.
// Subcommands: size, run, step, sweep, bench, calibrate, validate. Bad input prints one line "kvsim: error: ..." and
// exits with 2.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "sim/app/commands.h"
#include "sim/core/check.h"
#include "sim/core/errors.h"
#include "sim/metrics/hdf5_writer.h"

namespace {

const char* kUsage =
    "kvsim — a discrete-event simulator of LLM serving built around the KV cache\n"
    "\n"
    "usage: kvsim <command> [options]\n"
    "\n"
    "commands:\n"
    "  size CONFIG.json...   exact KV cache, state, weights and capacity per model\n"
    "  run SCENARIO.yaml     replay a workload through a vLLM-like engine or a cluster of them\n"
    "  step SCENARIO.yaml    the time of one engine step for a batch you name, split by operator\n"
    "  sweep SWEEP.yaml      run a scenario over axes of keys (threads, shards, MPI) into one table\n"
    "  bench                 replay the Mooncake conversation trace and report simulator speed (--suite: all targets)\n"
    "  calibrate             fit the calibrated latency model and report the fit error per operator\n"
    "  validate POINTS.csv   simulate measured end-to-end points and report TTFT/TPOT errors\n"
    "\n"
    "Run 'kvsim <command> --help' for the options of each command.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::cout << "kvsim " << KVSIM_VERSION << "\n";
    return 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  try {
    const int rc = kvsim::dispatch_command(cmd, args, std::cout);
    // Output that did not reach its file (a full disk, a closed pipe) is not a success.
    if (!std::cout.flush()) {
      std::cerr << "kvsim: error: writing the standard output failed (disk full or pipe closed?)\n";
      return 2;
    }
    return rc;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user named that cannot be examined (a symbolic-link loop, no permission): bad input.
    std::cerr << "kvsim: error: " << kvsim::one_line(e.what()) << "\n";
    return 2;
  } catch (const kvsim::InputError& e) {
    std::cerr << "kvsim: error: " << kvsim::one_line(e.what()) << "\n";
    return 2;
  } catch (const kvsim::OutputError& e) {
    // An output path that cannot be written is bad input too (the user named it); nothing is left
    // half-written (hdf5_writer.h).
    std::cerr << "kvsim: error: " << kvsim::one_line(e.what()) << "\n";
    return 2;
  } catch (const kvsim::InvariantError& e) {
    std::cerr << "kvsim: internal error: " << kvsim::one_line(e.what()) << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "kvsim: error: " << kvsim::one_line(e.what()) << "\n";
    return 1;
  }
}
