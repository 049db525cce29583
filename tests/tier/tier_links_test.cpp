// Offload copies over a topology (sim/tier/tier_links.h; issue 12: "Copies use the topology's PCIe and NIC
// links (sharing bandwidth with P/D transfers) when the scenario has a topology"). Expected times are worked
// out by hand in the comments from the round link catalog (tests/net/net_test_util.h: fast 10 GB/s, slow
// 2 GB/s, 1 us per hop) and the tier settings of each test.
#include "sim/tier/tier_links.h"

#include <gtest/gtest.h>

#include <memory>

#include "sim/cluster/cluster.h"
#include "sim/net/topology_generators.h"
#include "sim/tier/kv_offload.h"
#include "tests/engine/engine_test_util.h"
#include "tests/net/net_test_util.h"
#include "tests/tier/tier_test_util.h"

namespace kvsim {
namespace {

using net_test::link;
using testing::make_request;
using testing::RecordingSink;
using testing::text;
using tier_test::host_tier;
using tier_test::ms_ns;

// One GPU, its PCIe switch and its CPU: gpu0 -(pcie_type)- pcie0 -(fast)- cpu0.
Topology one_gpu(const std::string& pcie_type) {
  TopologySpec s;
  s.name = "one_gpu";
  s.source = "test.yaml";
  s.vertices = {{"gpu0", VertexKind::kGpu, 0}, {"pcie0", VertexKind::kPcieSwitch, 0}, {"cpu0", VertexKind::kCpu, 0}};
  s.links = {link("gpu0", "pcie0", pcie_type), link("pcie0", "cpu0")};
  return Topology::build(s, net_test::round_catalog());
}

// The engine test KvOffload.StoreThenLoadRoundTripTiming (tests/tier/kv_offload_test.cpp), now with its
// copies as flows over gpu0 - pcie0 - cpu0 (10 GB/s each way, 2 us): the tier's 2 / 1 GB/s are below the
// links' and its 10 us latency above the path's, so every copy takes what the tier alone gives and the
// hand-computed times of that test hold: the load takes 2.010 ms when late and, when B's blocks are
// still being stored from (the store fence, now an event), 5.984 ms; first token 15.011 / 14.085 ms.
TEST(TierLinks, IdleLinksFasterThanTheTierGiveTheTierFileTiming) {
  const Topology topo = one_gpu("fast");
  for (const bool late : {true, false}) {
    SimContext ctx(1);
    FlowNetwork net(ctx, topo);
    testing::FixedLatency lat;
    RecordingSink sink;
    EngineConfig cfg = testing::config_for(testing::full_layout(16, 5));
    cfg.kv_offload = host_tier(100, 2e9, 1e9);
    EngineInstance engine(ctx, cfg, lat, sink);
    engine.offload()->set_links(std::make_unique<TierLinks>(net, std::vector<int>{0}, cfg.kv_offload, "test"));
    std::vector<RequestSpec> reqs = {make_request(1, 0, {text(7, 64)}, 1), make_request(2, 6, {text(8, 64)}, 1)};
    RequestSpec b = make_request(3, 0, {text(7, 64)}, 1);
    b.arrival = SimTime::from_ns(late ? 12000000 : 7100000);
    reqs.push_back(b);
    testing::VectorSource src(std::move(reqs));
    Cluster sim(ctx, src, engine);
    sim.run();
    const RequestRecord& r = sink.requests.at(3);
    ASSERT_TRUE(r.finished);
    EXPECT_EQ(r.tier_cached_tokens, 63);
    EXPECT_EQ(r.tier_load_ns, ms_ns(late ? 2.010 : 5.984));
    EXPECT_EQ(r.first_token.ns(), ms_ns(late ? 15.011 : 14.085));
    // Stores of A (4 chunks) and C (4), the load of B's 4: 12 MB over gpu0 <-> pcie0.
    EXPECT_DOUBLE_EQ(net.link_bytes(0) + net.link_bytes(1), 12e6);
  }
}

// A store shares the GPU's PCIe link with another flow (a P/D pull leaving through the same switch).
// gpu0 - pcie0 is "slow", 2 GB/s; the tier writes at 2 GB/s too. At 0: a 3 MB flow X over gpu0 -> pcie0
// (1 us latency) and a store of 4 chunks (4 MB): path latency 2 us, so it waits 10 us in all.
//  - alone: 10 us + 4 MB / 2 GB/s = 2.010 ms;
//  - with X: X alone 1-10 us moves 18 kB; then 1 GB/s each: X's 2.982 MB end at 2.992 ms, the store has
//    moved as much and its last 1.018 MB take 0.509 ms at 2 GB/s: 3.501 ms.
TEST(TierLinks, AStoreSharesTheGpusPcieLinkWithAnotherFlow) {
  const Topology topo = one_gpu("slow");
  for (const bool shared : {false, true}) {
    SimContext ctx(1);
    FlowNetwork net(ctx, topo);
    testing::FixedLatency lat;
    const KvOffloadConfig cfg = host_tier(100, 2e9, 2e9);
    KvOffload o(ctx, cfg, 16, lat, 8192);
    o.set_links(std::make_unique<TierLinks>(net, std::vector<int>{0}, cfg, "test"));
    SimTime x_end;
    if (shared) {
      Topology::Path p;
      p.links = {0};  // gpu0 -> pcie0
      p.latency = Duration::us(1);
      net.start_on(p, 3'000'000, [&] { x_end = ctx.now(); });
    }
    const std::vector<uint64_t> hashes = {1, 2, 3, 4};
    const std::vector<int32_t> blocks = {0, 1, 2, 3};
    int64_t next = 0;
    RequestRecord rec;
    o.offer_store(RequestId(1), hashes, blocks, next, 64, rec, {});
    o.submit_stores();
    const std::vector<int32_t> reused = {2};
    const StoreFence fence = o.store_fence(reused, {});
    EXPECT_TRUE(o.waiting(fence));
    EXPECT_EQ(fence.job, 1);
    SimTime stored;
    o.after(fence, [&] { stored = ctx.now(); });
    while (ctx.queue.run_one()) {
    }
    // Completion times are rounded up to the nanosecond: the exact value or one or two more.
    EXPECT_GE(stored.ns(), ms_ns(shared ? 3.501 : 2.010));
    EXPECT_LE(stored.ns(), ms_ns(shared ? 3.501 : 2.010) + 2);
    if (shared) {
      EXPECT_GE(x_end.ns(), ms_ns(2.992));
      EXPECT_LE(x_end.ns(), ms_ns(2.992) + 1);
    }
    EXPECT_FALSE(o.waiting(fence));
    EXPECT_EQ(o.tier().state(4), HostTier::State::kReady);  // the chunks are hits once stored
  }
}

// Paths on the bundled HGX topology: GPU 5 of a node reaches its host memory through its own PCIe switch
// (socket 5 * 2 / 8 = 1); a remote store without a storage vertex is reached through the GPU's NIC and
// its rail's leaf; with a shared storage vertex, through it. A local NVMe tier without a drive on the
// node stays off the network.
TEST(TierLinks, PathsFollowTheGpusPcieSwitchNicAndRail) {
  const HardwareCatalog& hw = net_test::bundled_catalog();
  TopologySpec spec = leaf_spine(2, "nvlink4", "pcie5-x16", "ib-ndr", "ib-ndr", 1.0);
  const auto names = [](const Topology& t, const Topology::Path& p) {
    std::vector<std::string> out;
    for (int l : p.links) out.push_back(t.link(l).name);
    return out;
  };
  KvOffloadConfig cfg = host_tier(100, 2e9, 2e9);
  for (const char* name : {"nvme-gen4", "remote-rdma"}) {
    KvOffloadLowerTier l;
    l.tier = name;
    cfg.lower.push_back(l);
  }
  {
    const Topology t = Topology::build(spec, hw);
    SimContext ctx(1);
    FlowNetwork net(ctx, t);
    const int g = *t.find_gpu("node1/gpu5");
    const TierLinks tl(net, {g}, cfg, "test");
    EXPECT_EQ(names(t, tl.path_into(0, 0)),
              (std::vector<std::string>{"node1/gpu5->node1/pcie5", "node1/pcie5->node1/cpu1"}));
    EXPECT_FALSE(tl.routed(1));
    EXPECT_EQ(names(t, tl.path_into(2, 0)),
              (std::vector<std::string>{"node1/cpu1->node1/pcie5", "node1/pcie5->node1/nic5", "node1/nic5->leaf5"}));
  }
  spec.vertices.push_back({"store", VertexKind::kStorage, -1});
  TopologySpec::Link l = link("store", "spine0", "ib-ndr");
  spec.links.push_back(l);
  spec.vertices.push_back({"node1/nvme0", VertexKind::kStorage, 1});
  spec.links.push_back(link("node1/nvme0", "node1/cpu1", "pcie5-x16"));
  const Topology t = Topology::build(spec, hw);
  SimContext ctx(1);
  FlowNetwork net(ctx, t);
  const TierLinks tl(net, {*t.find_gpu("node1/gpu5")}, cfg, "test");
  EXPECT_EQ(names(t, tl.path_into(1, 0)), (std::vector<std::string>{"node1/cpu1->node1/nvme0"}));
  const std::vector<std::string> remote = names(t, tl.path_into(2, 0));
  ASSERT_EQ(remote.size(), 5u);  // cpu1 -> pcie -> nic -> leaf -> spine0 -> store
  EXPECT_EQ(remote.back(), "spine0->store");
}

TEST(TierLinks, AHostTierNeedsACpuOnTheGpusNode) {
  TopologySpec s;
  s.name = "no_cpu";
  s.source = "no_cpu.yaml";
  s.vertices = {{"gpu0", VertexKind::kGpu, 0}, {"pcie0", VertexKind::kPcieSwitch, 0}};
  s.links = {link("gpu0", "pcie0")};
  const Topology t = Topology::build(s, net_test::round_catalog());
  SimContext ctx(1);
  FlowNetwork net(ctx, t);
  const std::string msg = net_test::input_error(
      [&] { TierLinks(net, {0}, host_tier(100, 1e9, 1e9), "s.yaml: cluster.pools[0].engine.kv_offload"); });
  EXPECT_NE(msg.find("cluster.pools[0].engine.kv_offload"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no cpu vertex on node 0"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kvsim
