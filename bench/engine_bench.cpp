// Google Benchmark: simulator speed on the bundled Mooncake conversation trace (run from the
// repository root: build/kvsim_bench). `kvsim bench` reports the same end to end.
#include <benchmark/benchmark.h>

#include "sim/app/simulation.h"
#include "sim/scenario/scenario.h"

namespace kvsim {
namespace {

void BM_MooncakeReplay(benchmark::State& state) {
  const Scenario s =
      load_scenario("scenarios/bench-mooncake.yaml", {"workload.trace.limit=" + std::to_string(state.range(0))});
  int64_t requests = 0;
  uint64_t events = 0;
  for (auto _ : state) {
    SimulationResult r = run_simulation(s);
    requests += r.summary.requests.count;
    events += r.events;
  }
  state.counters["requests/s"] = benchmark::Counter(static_cast<double>(requests), benchmark::Counter::kIsRate);
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MooncakeReplay)->Arg(1000)->Arg(12031)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvsim
