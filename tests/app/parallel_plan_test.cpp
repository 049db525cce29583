// resolve_parallel_plan (sim/app/parallel_plan.h): the links of a multi-node TP group from the bundled
// catalog (models/hardware/links.yaml), and whether NCCL's NVLink or PCI latencies apply inside a node.
#include "sim/app/parallel_plan.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/scenario/hardware_catalog.h"

namespace kvsim {
namespace {

const HardwareCatalog& bundled() {
  static const HardwareCatalog c = load_hardware_catalog(std::string(KVSIM_SOURCE_DIR) + "/models/hardware");
  return c;
}

EngineSettings tp16() {
  EngineSettings e;
  e.tensor_parallel_size = 16;  // two 8-GPU nodes
  return e;
}

TEST(ParallelPlanLinks, TpAcrossNodesTakesTheGpusNvlinkAndTheNic) {
  const ParallelPlan p = resolve_parallel_plan(tp16(), bundled().gpu("h100-sxm"), bundled(), "engine");
  // links.yaml: nvlink4 450 GB/s x 0.8, 5 us; ib-ndr 400 Gb/s = 50 GB/s x 0.7, 17 us.
  EXPECT_TRUE(p.intra_nvlink);
  EXPECT_DOUBLE_EQ(p.intra.bandwidth, 450e9 * 0.8);
  EXPECT_DOUBLE_EQ(p.inter.bandwidth, 50e9 * 0.7);
  EXPECT_DOUBLE_EQ(p.inter.latency_s, 17e-6);
  // The all-reduce over those 2 nodes: NCCL's Tree LL latency with NVLink inside the node,
  // 6.8 + 2 x (7 x 0.6 + 5.0) = 25.2 us.
  const ParallelTerms t(p, 4096, 0, 0, 0);
  EXPECT_NEAR(t.cross_node_allreduce_seconds(0), 25.2e-6, 1e-12);
}

TEST(ParallelPlanLinks, APcieNodeGetsNcclsPciLatencies) {
  EngineSettings e = tp16();
  e.intra_node_link = "pcie5-x16";
  const ParallelPlan p = resolve_parallel_plan(e, bundled().gpu("h100-sxm"), bundled(), "engine");
  EXPECT_FALSE(p.intra_nvlink);
  // 6.8 + 2 x (7 x 1.0 + 5.0) = 30.8 us.
  EXPECT_NEAR(ParallelTerms(p, 4096, 0, 0, 0).cross_node_allreduce_seconds(0), 30.8e-6, 1e-12);
}

TEST(ParallelPlanLinks, Gb200TraysShareTheRacksNvlink) {
  // GB200 NVL72: 18 trays of 4 GPUs on one NVLink fabric (gb200.yaml nvlink_domain 72). TP 16 over four
  // trays stays inside it (no NIC is read); the same layout of H100 nodes of 4 crosses the NIC (ib-ndr:
  // 50 GB/s x 0.7).
  EngineSettings e = tp16();
  e.gpus_per_node = 4;
  const ParallelPlan rack = resolve_parallel_plan(e, bundled().gpu("gb200"), bundled(), "engine");
  EXPECT_EQ(rack.node_size(), 72);
  EXPECT_DOUBLE_EQ(rack.inter.bandwidth, 0.0);
  EXPECT_FALSE(ParallelTerms(rack, 7168, 0, 0, 0).tp_crosses_nodes());
  const ParallelPlan hgx = resolve_parallel_plan(e, bundled().gpu("h100-sxm"), bundled(), "engine");
  EXPECT_EQ(hgx.node_size(), 4);
  EXPECT_DOUBLE_EQ(hgx.inter.bandwidth, 50e9 * 0.7);
  EXPECT_TRUE(ParallelTerms(hgx, 7168, 0, 0, 0).tp_crosses_nodes());
}

TEST(ParallelPlanLinks, BeyondTheRackTheNic) {
  // DP 2 x TP 64 = 128 GPUs: two NVL72 domains, joined by the inter-node link (ib-ndr: 50 GB/s x 0.7).
  EngineSettings e;
  e.tensor_parallel_size = 64;
  e.data_parallel_size = 2;
  const ParallelPlan p = resolve_parallel_plan(e, bundled().gpu("gb300"), bundled(), "engine");
  EXPECT_EQ(p.node_size(), 72);
  EXPECT_DOUBLE_EQ(p.inter.bandwidth, 50e9 * 0.7);
}

}  // namespace
}  // namespace kvsim
