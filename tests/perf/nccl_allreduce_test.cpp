// NCCL's all-reduce cost model (sim/perf/nccl_allreduce.h). Expected values are written out by hand from
// the constants of NCCL's tuner (NVIDIA/nccl src/graph/tuning.cc, ncclTunerConstantsDefaults, in
// microseconds): base latencies Tree {6.8, 14.0, 8.4}, Ring {6.6, 14.0, 8.4} for LL / LL128 / Simple;
// NVLink Tree {0.6, 1.25, 4.0}, Ring {0.6, 1.9, 3.4}; PCI Tree {1.0, 1.9, 4.0}, Ring {1.0, 2.5, 5.7};
// NET Tree {5.0, 8.5, 14}, Ring {2.7, 4.0, 14.0}.
#include "sim/perf/nccl_allreduce.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kvsim {
namespace {

NcclAllReduceLayout layout(int ranks, int nodes, bool nvlink = true, double bw = 280e9) {
  NcclAllReduceLayout l;
  l.ranks = ranks;
  l.nodes = nodes;
  l.nvlink_intra = nvlink;
  l.bus_bandwidth = bw;
  return l;
}

TEST(NcclAllReduce, EmptyMessageCostsTreeLLsLatency) {
  // 8 nodes of 8: Tree LL 6.8 + 2 x (7 x 0.6 + log2(8) x 5.0) = 45.2 us. Ring LL would take
  // 6.6 + (126 - 14) x max(0.6, 1 us net overhead) + 14 x 2.7 = 156.4 us.
  EXPECT_NEAR(nccl_allreduce_seconds(layout(64, 8), 0), 45.2e-6, 1e-12);
  // 2 nodes of 8: 6.8 + 2 x (7 x 0.6 + 1 x 5.0) = 25.2 us.
  EXPECT_NEAR(nccl_allreduce_seconds(layout(16, 2), 0), 25.2e-6, 1e-12);
  // PCIe inside the node: 6.8 + 2 x (7 x 1.0 + 5.0) = 30.8 us.
  EXPECT_NEAR(nccl_allreduce_seconds(layout(16, 2, false), 0), 30.8e-6, 1e-12);
  // One rank per node, 4 nodes: Tree LL 6.8 + 2 x (0 + 2 x 5.0) = 26.8 us; Ring LL, every step a network
  // step at Tree's network latency (NCCL's ppn = 1 rule): 6.6 + 6 x 5.0 = 36.6 us.
  EXPECT_NEAR(nccl_allreduce_seconds(layout(4, 4), 0), 26.8e-6, 1e-12);
}

TEST(NcclAllReduce, LatencyGrowsWithTheNodeCountLogarithmically) {
  // Tree: 2 x log2(N) x 5.0 us of network latency; 16 nodes of 8 add one more level than 8 nodes.
  EXPECT_NEAR(nccl_allreduce_seconds(layout(128, 16), 0) - nccl_allreduce_seconds(layout(64, 8), 0), 10e-6, 1e-12);
}

TEST(NcclAllReduce, LargeMessagesTakeTheFasterBandwidthProtocol) {
  // A prefill of 8,192 tokens x 7,168 x 2 B over TP 16 on 2 nodes at 280 GB/s: the ring traffic
  // 2 x 15/16 x 117,440,512 B / 280 GB/s, at each protocol's share of the bandwidth.
  const double bytes = 8192.0 * 7168 * 2;
  const double traffic = 2.0 * 15 / 16 * bytes / 280e9;
  const double candidates[] = {
      6.8e-6 + 2 * (7 * 0.6 + 5.0) * 1e-6 + traffic / (0.92 / 3.8),             // Tree LL
      (14.0 + 2 * (7 * 1.25 + 8.5)) * 1e-6 + traffic / (0.92 * 120.0 / 128.0),  // Tree LL128
      (8.4 + 2 * (7 * 4.0 + 14.0)) * 1e-6 + traffic / 0.92,                     // Tree Simple
      (6.6 + 28 * 1.0 + 2 * 2.7) * 1e-6 + traffic / 0.5,                        // Ring LL
      (14.0 + 28 * 1.9 + 2 * 4.0) * 1e-6 + traffic / 0.92,                      // Ring LL128
      1.4 * (8.4 + 28 * 3.4 + 2 * 14.0) * 1e-6 + traffic,                       // Ring Simple (x1.4 plateau)
  };
  const double expected = *std::min_element(std::begin(candidates), std::end(candidates));
  EXPECT_NEAR(nccl_allreduce_seconds(layout(16, 2), bytes), expected, 1e-12);
  // That is Ring LL128 (75.2 us + traffic / 0.92), within 2 % of the bare traffic at this size.
  EXPECT_NEAR(expected, candidates[4], 1e-15);
  EXPECT_LT(expected, 1.2 * traffic);
}

TEST(NcclAllReduce, TimeNeverFallsAsTheMessageGrows) {
  const NcclAllReduceLayout l = layout(32, 4);
  double last = 0;
  for (double bytes = 0; bytes < 1e9; bytes = bytes * 2 + 1024) {
    const double t = nccl_allreduce_seconds(l, bytes);
    EXPECT_GE(t, last);
    last = t;
  }
}

}  // namespace
}  // namespace kvsim
