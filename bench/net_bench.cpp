// Google Benchmark: FlowNetwork cost per flow event (a flow beginning to move bytes or ending, each
// with its component re-solve) on the 16-node, 128-GPU leaf/spine fabric
// (models/topologies/hgx-h100-16node-ib-ndr.yaml). Run from the repository root: build/kvsim_bench.
//
// 8 prefill TP8 instances on nodes 0-7 and 8 decode TP8 instances on nodes 8-15; every transfer is one
// flow per rank pair (8 flows). Transfer k goes from prefill instance k % 8 to decode instance
// (3k + 1) % 8, one every 50 us, 18-130 MB per transfer (about 2/3 of the prefill NICs' 2.24 TB/s), so
// flows overlap and share NIC links. range(0) = 0: rank r -> rank r (same rail, leaf only);
// 1: rank r -> rank (r + 1) % 8 (cross-rail, over the spines with ECMP: one component spans them all).
#include <benchmark/benchmark.h>

#include <cstdint>

#include "sim/core/sim_context.h"
#include "sim/net/flow_network.h"
#include "sim/net/topology.h"
#include "sim/scenario/hardware_catalog.h"
#include "sim/scenario/topology_file.h"

namespace kvsim {
namespace {

const Topology& fabric() {
  static const Topology t = Topology::build(load_topology_file(topology_path("hgx-h100-16node-ib-ndr")),
                                            load_hardware_catalog(kDefaultHardwareDir));
  return t;
}

void BM_FlowNetworkPdTransfers(benchmark::State& state) {
  const Topology& t = fabric();
  const bool cross_rail = state.range(0) != 0;
  constexpr int kTransfers = 2000;
  int64_t events = 0, solves = 0, visits = 0;
  int peak = 0;
  for (auto _ : state) {
    SimContext ctx(1);
    FlowNetwork net(ctx, t);
    for (int k = 0; k < kTransfers; ++k) {
      ctx.queue.schedule(SimTime::from_ns(int64_t{50'000} * k), Phase::kArrival, 1, [&, k] {
        const int p = k % 8, d = 8 + (3 * k + 1) % 8;
        const int64_t bytes = (18'000'000 + int64_t{16'000'000} * (k % 8)) / 8;
        for (int r = 0; r < 8; ++r) {
          const int dr = cross_rail ? (r + 1) % 8 : r;
          net.start(p * 8 + r, d * 8 + dr, bytes, static_cast<uint64_t>(k) * 8 + r, nullptr);
        }
        peak = std::max(peak, net.active_flows());
      });
    }
    while (ctx.queue.run_one()) {
    }
    events += 2 * net.stats().flows_done;
    solves += net.stats().solves;
    visits += net.stats().solve_flow_visits;
  }
  state.counters["flow_events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["s/flow_event"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["visits/solve"] = static_cast<double>(visits) / static_cast<double>(std::max<int64_t>(1, solves));
  state.counters["peak_flows"] = peak;
}
BENCHMARK(BM_FlowNetworkPdTransfers)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kvsim
