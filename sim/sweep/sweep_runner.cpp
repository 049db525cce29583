#include "sim/sweep/sweep_runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "sim/sweep/point_result.h"
#include "sim/sweep/sweep_folder.h"

namespace kvsim {
namespace {

using Clock = std::chrono::steady_clock;

// Shared by the worker threads; the main thread draws the progress line from it.
struct Progress {
  std::mutex mu;
  std::condition_variable changed;
  int todo = 0;
  int done = 0;
  int running = 0;
  int failed = 0;
  std::map<int, std::string> errors;
};

PointResult run_point(const SweepPlan& plan, const SweepPoint& p, const PointSimulator& simulate) {
  PointResult r;
  r.index = p.index;
  r.key = p.key;
  r.seed = p.seed;
  r.overrides = p.overrides;
  const auto start = Clock::now();
  try {
    const Scenario s = point_scenario(plan, p);
    RunSummary summary = simulate(s);
    r.ok = true;
    r.figures = sweep_figures(summary);
    r.fingerprint = fingerprint_hex(summary.sim.fingerprint);
    r.summary_json = summary_to_json(summary, SummaryJsonOptions{false});
  } catch (const std::exception& e) {
    r.ok = false;
    r.error = e.what();
  }
  r.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

void draw(const Progress& pr, Clock::time_point start, int skipped) {
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const int finished = pr.done + pr.failed;
  char eta[32] = "?";
  if (finished > 0) std::snprintf(eta, sizeof eta, "%.0f s", wall / finished * (pr.todo - finished));
  std::fprintf(stderr, "\r  sweep: %d/%d done, %d running, %d failed, %d skipped, ETA %s   ", pr.done, pr.todo,
               pr.running, pr.failed, skipped, eta);
  std::fflush(stderr);
}

}  // namespace

SweepRunReport run_sweep_points(const SweepPlan& plan, const SweepRunOptions& options, const PointSimulator& simulate) {
  SweepRunReport report;
  std::vector<const SweepPoint*> todo;
  for (const SweepPoint& p : plan.points) {
    if (p.index % options.shards != options.shard) continue;
    ++report.assigned;
    if (std::filesystem::exists(point_file(options.out_dir, p.index)))
      ++report.skipped;
    else
      todo.push_back(&p);
  }

  Progress pr;
  pr.todo = static_cast<int>(todo.size());
  std::atomic<size_t> next{0};
  const auto worker = [&] {
    for (size_t i = next++; i < todo.size(); i = next++) {
      const SweepPoint& p = *todo[i];
      {
        std::lock_guard<std::mutex> lock(pr.mu);
        ++pr.running;
      }
      const PointResult r = run_point(plan, p, simulate);
      std::string write_error;
      try {
        if (r.ok) {
          write_file_atomically(point_file(options.out_dir, p.index), point_result_to_json(r));
          std::error_code ec;
          std::filesystem::remove(failed_point_file(options.out_dir, p.index), ec);
        } else {
          write_file_atomically(failed_point_file(options.out_dir, p.index), point_result_to_json(r));
        }
      } catch (const std::exception& e) {
        write_error = e.what();
      }
      std::lock_guard<std::mutex> lock(pr.mu);
      --pr.running;
      if (r.ok && write_error.empty()) {
        ++pr.done;
      } else {
        ++pr.failed;
        pr.errors[p.index] = "point " + std::to_string(p.index) + " (" + (p.key.empty() ? "base" : p.key) +
                             "): " + (r.ok ? write_error : r.error);
      }
      pr.changed.notify_all();
    }
  };

  const int threads = std::max(1, std::min<int>(options.threads, static_cast<int>(todo.size())));
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads && !todo.empty(); ++t) pool.emplace_back(worker);
  {
    std::unique_lock<std::mutex> lock(pr.mu);
    while (pr.done + pr.failed < pr.todo) {
      if (options.progress) draw(pr, start, report.skipped);
      pr.changed.wait_for(lock, std::chrono::milliseconds(500));
    }
    if (options.progress) {
      draw(pr, start, report.skipped);
      std::fprintf(stderr, "\n");
    }
  }
  for (std::thread& t : pool) t.join();

  report.ran = pr.done;
  report.failed = pr.failed;
  for (const auto& [index, e] : pr.errors) report.errors.push_back(e);
  return report;
}

}  // namespace kvsim
