// Mooncake's measured vLLM P/D KV transfers (Qwen3-8B, H800, TP8 prefill -> TP8 decode on two nodes,
// 8 x CX-7 RoCE; latency-model.md §4.1, cluster-offload.md F1) on models/topologies/hgx-h800-2node-roce-cx7.yaml.
//
// NOT an independent prediction: the NIC type roce-cx7-mooncake is FITTED on these same five points
// (links.yaml sources): achieved_fraction 0.685 = 137 / 200 GB/s and latency 0.374 ms are the
// least-squares fit t = 0.374 ms + S / 137 GB/s of latency-model.md §4.1. What this test checks is that
// the network reproduces the fit's structure: one flow per rank pair (rank r -> rank r) on its own
// rail, the 8 flows in parallel, each carrying S / 8, the connector cost paid once per flow as path
// latency (half on each NIC<->leaf hop), and no sharing between rails.
//
// By hand: per NIC 200 Gb/s = 25 GB/s x 0.685 = 17.125 GB/s (the PCIe hops, 0.78 x 64 = 50 GB/s, are
// not the bottleneck), 8 NICs = 137 GB/s; path latency 187 + 187 us = 0.374 ms; so
// t(S) = 0.374 ms + (S / 8) / 17.125 GB/s:
//   20 MB  -> 0.520 ms (measured 0.54, -3.7 %)    146 MB -> 1.440 ms (1.50, -4.0 %)
//   578 MB -> 4.593 ms (4.75, -3.3 %)             2.25 GB -> 16.80 ms (16.43, +2.2 %)
//   4.50 GB -> 33.22 ms (31.65, +5.0 %)
// Sizes are decimal, as the table writes them (its bandwidth column is S / t in GB/s).
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/net/flow_network.h"
#include "sim/net/topology.h"
#include "sim/scenario/topology_file.h"
#include "tests/net/net_test_util.h"

namespace kvsim {
namespace {

TEST(NetMooncakePdTransfer, Tp8ToTp8TransfersMatchMeasuredWithinTenPercent) {
  const Topology t =
      Topology::build(load_topology_file(topology_path("hgx-h800-2node-roce-cx7")), net_test::bundled_catalog());
  struct Point {
    double bytes, measured_ms, model_ms;
  };
  for (const Point& p : {Point{20e6, 0.54, 0.520}, Point{146e6, 1.50, 1.440}, Point{578e6, 4.75, 4.593},
                         Point{2.25e9, 16.43, 16.797}, Point{4.50e9, 31.65, 33.221}}) {
    SCOPED_TRACE(p.bytes);
    SimContext ctx(1);
    FlowNetwork net(ctx, t);
    SimTime last;
    for (int r = 0; r < 8; ++r) {
      const int src = *t.find_gpu("node0/gpu" + std::to_string(r));
      const int dst = *t.find_gpu("node1/gpu" + std::to_string(r));
      net.start(src, dst, static_cast<int64_t>(p.bytes / 8), r, [&] { last = std::max(last, ctx.now()); });
    }
    ctx.queue.run_until(SimTime::from_ns(400'000));
    for (int r = 0; r < 8; ++r) EXPECT_NEAR(net.flow_rate(r), 17.125e9, 1.0);  // every rail alone
    while (ctx.queue.run_one()) {
    }
    const double ms = last.seconds() * 1e3;
    EXPECT_NEAR(ms, p.model_ms, 0.001);
    EXPECT_LT(std::abs(ms - p.measured_ms) / p.measured_ms, 0.10) << ms << " ms vs measured " << p.measured_ms;
  }
}

// Squeezing the same 8 flows through one rail (all from rank 0's NIC) shares 17.125 GB/s eight ways:
// 146 MB takes 0.374 ms + 146 MB / 17.125 GB/s = 8.900 ms instead of 1.440 ms.
TEST(NetMooncakePdTransfer, FlowsOnOneRailShareItsNic) {
  const Topology t =
      Topology::build(load_topology_file(topology_path("hgx-h800-2node-roce-cx7")), net_test::bundled_catalog());
  SimContext ctx(1);
  FlowNetwork net(ctx, t);
  SimTime last;
  const int src = *t.find_gpu("node0/gpu0"), dst = *t.find_gpu("node1/gpu0");
  for (int r = 0; r < 8; ++r) {
    net.start(src, dst, static_cast<int64_t>(146e6 / 8), r, [&] { last = std::max(last, ctx.now()); });
  }
  while (ctx.queue.run_one()) {
  }
  EXPECT_NEAR(last.seconds() * 1e3, 0.374 + 146e6 / 17.125e9 * 1e3, 0.001);
}

}  // namespace
}  // namespace kvsim
