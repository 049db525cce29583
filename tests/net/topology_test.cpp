// Topology: canonical GPU order, link capacities and latencies, fewest-hop routes with ECMP, errors.
#include "sim/net/topology.h"

#include <gtest/gtest.h>

#include <set>

#include "sim/net/topology_generators.h"
#include "tests/net/net_test_util.h"

namespace kvsim {
namespace {

using net_test::bundled_catalog;
using net_test::input_error;
using net_test::link;
using net_test::make_spec;

Topology two_node_ib() {
  return Topology::build(leaf_spine(2, "nvlink4", "pcie5-x16", "ib-ndr", "ib-ndr", 1.0), bundled_catalog());
}

std::vector<std::string> link_names(const Topology& t, const Topology::Path& p) {
  std::vector<std::string> out;
  for (int l : p.links) out.push_back(t.link(l).name);
  return out;
}

TEST(Topology, GpusAreNumberedNodeByNodeAndFoundByName) {
  const Topology t = two_node_ib();
  EXPECT_EQ(t.num_gpus(), 16);
  EXPECT_EQ(t.num_nodes(), 2);
  EXPECT_EQ(t.gpu_name(0), "node0/gpu0");
  EXPECT_EQ(t.gpu_name(13), "node1/gpu5");
  EXPECT_EQ(t.gpu_node(13), 1);
  EXPECT_EQ(t.find_gpu("node1/gpu5"), 13);
  EXPECT_FALSE(t.find_gpu("node1/nic5").has_value());
  EXPECT_FALSE(t.find_gpu("node9/gpu0").has_value());
}

// Capacity = count x scale x achieved_fraction x line_rate: NVLink4 0.8 x 450 GB/s = 360 GB/s; a
// leaf of 2 nodes, non-blocking, has 2 fabric ports up: fewer than the 8 spines, so each goes whole to
// one spine (spines 0 and 1): 1 x 0.7 x 50 GB/s, what one cross-rail flow gets.
TEST(Topology, LinkCapacityIsAchievedFractionOfLineRateTimesScale) {
  const Topology t = two_node_ib();
  auto p = t.route(0, 1, 0);
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(t.link(p->links[0]).capacity, 360e9);
  auto cross = t.route(0, t.num_gpus() - 1, 0);  // node0/gpu0 -> node1/gpu7: through a spine
  ASSERT_TRUE(cross.has_value());
  int uplinks = 0;
  for (int l : cross->links) {
    if (t.link(l).name.rfind("leaf0->spine", 0) == 0) {
      ++uplinks;
      EXPECT_DOUBLE_EQ(t.link(l).capacity, 1.0 * 0.7 * 50e9);
    }
  }
  EXPECT_EQ(uplinks, 1);
  EXPECT_EQ(t.num_links() % 2, 0);  // every full-duplex link is two directed links
}

// 16 nodes, 8 spines, 2:1 oversubscribed: a leaf's 16 ports down face 8 fabric ports up, one per
// spine: scale 16 / (8 x 2) = 1, so a leaf-spine link is one IB NDR port, 0.7 x 50 GB/s = 35 GB/s.
TEST(Topology, OversubscriptionDividesLeafUplinks) {
  const Topology t =
      Topology::build(leaf_spine(16, "nvlink4", "pcie5-x16", "ib-ndr", "ib-ndr", 2.0), bundled_catalog());
  const int leaf = *t.find_vertex("leaf3"), spine = *t.find_vertex("spine5");
  int found = 0;
  for (int l = 0; l < t.num_links(); ++l) {
    if (t.link(l).from == leaf && t.link(l).to == spine) {
      ++found;
      EXPECT_DOUBLE_EQ(t.link(l).capacity, 35e9);
    }
  }
  EXPECT_EQ(found, 1);
}

// 3 nodes at 2:1: 1.5 ports up per leaf, fewer than the 8 spines: all on spine0 (floor(1.5) = 1), so
// a cross-rail flow gets 1.5 x 35 GB/s there, never less than a port as more nodes are added.
TEST(Topology, AFractionalUplinkCountStaysOnWholeSpines) {
  const Topology t = Topology::build(leaf_spine(3, "nvlink4", "pcie5-x16", "ib-ndr", "ib-ndr", 2.0), bundled_catalog());
  const int leaf = *t.find_vertex("leaf3");
  int found = 0;
  for (int l = 0; l < t.num_links(); ++l) {
    if (t.link(l).from != leaf || t.vertex_name(t.link(l).to).rfind("spine", 0) != 0) continue;
    ++found;
    EXPECT_EQ(t.vertex_name(t.link(l).to), "spine0");
    EXPECT_DOUBLE_EQ(t.link(l).capacity, 1.5 * 35e9);
  }
  EXPECT_EQ(found, 1);
}

TEST(Topology, RouteWithinNodeGoesOverNvlinkNotTheNic) {
  const Topology t = two_node_ib();
  auto p = t.route(*t.find_gpu("node0/gpu0"), *t.find_gpu("node0/gpu3"), 42);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(link_names(t, *p), (std::vector<std::string>{"node0/gpu0->node0/nvswitch", "node0/nvswitch->node0/gpu3"}));
  EXPECT_EQ(p->latency, Duration::us(5));  // 2.5 + 2.5 us: one NVLink4 floor
}

TEST(Topology, RouteAcrossNodesStaysOnTheRail) {
  const Topology t = two_node_ib();
  auto p = t.route(*t.find_gpu("node0/gpu2"), *t.find_gpu("node1/gpu2"), 7);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(link_names(t, *p),
            (std::vector<std::string>{"node0/gpu2->node0/pcie2", "node0/pcie2->node0/nic2", "node0/nic2->leaf2",
                                      "leaf2->node1/nic2", "node1/nic2->node1/pcie2", "node1/pcie2->node1/gpu2"}));
  EXPECT_EQ(p->latency, Duration::us(17));  // 8.5 + 8.5 us: one IB NDR floor
  EXPECT_EQ(t.hops(*t.find_gpu("node0/gpu2"), *t.find_gpu("node1/gpu2")), 6);
}

// Cross-rail traffic goes leaf -> spine -> leaf; the spine is picked per flow hash (two nodes: the two
// spines the leaves' two ports reach).
TEST(Topology, EcmpSpreadsHashesOverSpinesAndRepeatsForTheSameHash) {
  const Topology t = two_node_ib();
  const int src = *t.find_gpu("node0/gpu0"), dst = *t.find_gpu("node1/gpu3");
  std::set<std::string> spines;
  for (uint64_t h = 0; h < 64; ++h) {
    auto p = t.route(src, dst, h);
    ASSERT_TRUE(p.has_value());
    ASSERT_EQ(p->links.size(), 8u);
    EXPECT_EQ(t.link(p->links[2]).name, "node0/nic0->leaf0");
    spines.insert(t.vertex_name(t.link(p->links[3]).to));
    EXPECT_EQ(t.route(src, dst, h)->links, p->links);
  }
  EXPECT_EQ(spines, (std::set<std::string>{"spine0", "spine1"}));  // 2 ports up: 2 spines, both hit
  EXPECT_NE(t.route(src, dst, 1)->links, t.route(src, dst, 2)->links);
}

// The documented top of leaf_spine's range: 4,096 nodes of 8 GPUs. Distances are searched per destination as
// routes need them; all 32,768 searched at build took 3.6 GB at 2,048 nodes (a 5-request run).
TEST(Topology, LargestLeafSpineRoutesWithoutSearchingEveryGpu) {
  const Topology t =
      Topology::build(leaf_spine(4096, "nvlink4", "pcie5-x16", "ib-ndr", "ib-ndr", 1.0), bundled_catalog());
  EXPECT_EQ(t.num_gpus(), 4096 * 8);
  const int a = *t.find_gpu("node0/gpu2"), b = *t.find_gpu("node4095/gpu2"), c = *t.find_gpu("node4095/gpu5");
  // Same rail: gpu -> pcie -> nic -> leaf2 -> nic -> pcie -> gpu. Another rail: up to a spine and down.
  EXPECT_EQ(t.hops(a, b), 6);
  EXPECT_EQ(t.hops(a, c), 8);
  EXPECT_EQ(t.route(a, c, 3)->links.size(), 8u);
  EXPECT_EQ(t.hops(b, a), 6);
}

TEST(Topology, SameGpuIsAnEmptyRouteAndUnreachableIsNullopt) {
  const Topology t = Topology::build(make_spec({"a", "b", "c", "d"}, {"s1", "s2"},
                                               {link("a", "s1"), link("s1", "b"), link("c", "s2"), link("s2", "d")}),
                                     net_test::round_catalog());
  auto self = t.route(0, 0, 0);
  ASSERT_TRUE(self.has_value());
  EXPECT_TRUE(self->links.empty());
  EXPECT_EQ(self->latency, Duration::zero());
  EXPECT_FALSE(t.route(*t.find_gpu("a"), *t.find_gpu("c"), 0).has_value());
  EXPECT_EQ(t.hops(*t.find_gpu("a"), *t.find_gpu("c")), -1);
  EXPECT_TRUE(t.route(*t.find_gpu("a"), *t.find_gpu("b"), 0).has_value());
}

// A route never relays through another GPU: with a -- b -- c only, a cannot reach c.
TEST(Topology, RoutesNeverPassThroughAnotherGpu) {
  const Topology t =
      Topology::build(make_spec({"a", "b", "c"}, {}, {link("a", "b"), link("b", "c")}), net_test::round_catalog());
  EXPECT_FALSE(t.route(*t.find_gpu("a"), *t.find_gpu("c"), 0).has_value());
  EXPECT_TRUE(t.route(*t.find_gpu("a"), *t.find_gpu("b"), 0).has_value());
}

TEST(Topology, Gb200Nvl72IsOneNvlinkDomainOf72Gpus) {
  const Topology t = Topology::build(gb200_nvl72(), bundled_catalog());
  EXPECT_EQ(t.num_gpus(), 72);
  EXPECT_EQ(t.num_nodes(), 18);
  auto p = t.route(*t.find_gpu("node0/gpu0"), *t.find_gpu("node17/gpu3"), 0);
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->links.size(), 2u);
  EXPECT_EQ(t.link(p->links[0]).type, "nvlink5");
  EXPECT_EQ(t.gpu_domain(*t.find_gpu("node0/gpu0")), t.gpu_domain(*t.find_gpu("node17/gpu3")));
  // An HGX node's NVSwitch makes the node a domain: two nodes, two domains.
  const Topology hgx = two_node_ib();
  EXPECT_EQ(hgx.gpu_domain(*hgx.find_gpu("node0/gpu0")), 0);
  EXPECT_EQ(hgx.gpu_domain(*hgx.find_gpu("node0/gpu7")), 0);
  EXPECT_EQ(hgx.gpu_domain(*hgx.find_gpu("node1/gpu0")), 1);
  // A node without NVLink (four PCIe GPUs under one switch) is one domain too: its TP runs over PCIe.
  TopologySpec pcie = make_spec({"p0", "p1", "p2", "p3"}, {"sw"},
                                {link("p0", "sw"), link("p1", "sw"), link("p2", "sw"), link("p3", "sw")});
  for (auto& v : pcie.vertices)
    if (v.kind == VertexKind::kGpu) v.node = 0;
  const Topology one_node = Topology::build(pcie, net_test::round_catalog());
  for (int g = 0; g < 4; ++g) EXPECT_EQ(one_node.gpu_domain(g), 0);
}

TEST(Topology, UnknownLinkTypeNamesSourceKeyAndKnownTypes) {
  auto spec = make_spec({"a", "b"}, {"s"}, {link("a", "s"), link("s", "b", "ib-xdr")});
  std::string msg = input_error([&] { Topology::build(spec, net_test::round_catalog()); });
  EXPECT_NE(msg.find("test.yaml: links[1].type: unknown link type 'ib-xdr' (known: fast, slow)"), std::string::npos)
      << msg;
  auto gen = leaf_spine(2, "nvlink4", "pcie5-x16", "ib-xdr", "ib-ndr", 1.0);
  msg = input_error([&] { Topology::build(gen, bundled_catalog()); });
  EXPECT_NE(msg.find("generator leaf_spine: nic_link: unknown link type 'ib-xdr' (known: eth-100g,"), std::string::npos)
      << msg;
}

TEST(Topology, LinkToMissingVertexIsAnError) {
  auto spec = make_spec({"a", "b"}, {"s"}, {link("a", "s"), link("s", "nowhere")});
  std::string msg = input_error([&] { Topology::build(spec, net_test::round_catalog()); });
  EXPECT_NE(msg.find("test.yaml: links[1].to: unknown vertex 'nowhere'"), std::string::npos) << msg;
}

TEST(Topology, DuplicateVertexAndLinkAreErrors) {
  auto spec = make_spec({"a", "b"}, {"a"}, {link("a", "b")});
  std::string msg = input_error([&] { Topology::build(spec, net_test::round_catalog()); });
  EXPECT_NE(msg.find("test.yaml: vertices[2].name: duplicate vertex 'a' (also vertices[0])"), std::string::npos) << msg;
  spec = make_spec({"a", "b"}, {}, {link("a", "b"), link("b", "a")});
  msg = input_error([&] { Topology::build(spec, net_test::round_catalog()); });
  EXPECT_NE(msg.find("test.yaml: links[1]: second link between 'b' and 'a'"), std::string::npos) << msg;
}

TEST(Topology, GpuThatReachesNoOtherGpuIsAnError) {
  auto spec = make_spec({"a", "b", "c"}, {"s"}, {link("a", "s"), link("s", "b")});
  std::string msg = input_error([&] { Topology::build(spec, net_test::round_catalog()); });
  EXPECT_NE(msg.find("test.yaml: vertices[2]: GPU 'c' reaches no other GPU"), std::string::npos) << msg;
}

TEST(Topology, BadCountScaleAndNodeAreErrors) {
  auto spec = make_spec({"a", "b"}, {}, {link("a", "b")});
  spec.links[0].count = 0;
  EXPECT_NE(input_error([&] { Topology::build(spec, net_test::round_catalog()); }).find("links[0].count: must be >= 1"),
            std::string::npos);
  spec.links[0].count = 1;
  spec.links[0].scale = 0;
  EXPECT_NE(input_error([&] { Topology::build(spec, net_test::round_catalog()); }).find("links[0].scale: must be"),
            std::string::npos);
  spec.links[0].scale = 1;
  spec.vertices[1].node = 5;
  EXPECT_NE(input_error([&] { Topology::build(spec, net_test::round_catalog()); }).find("with no gap"),
            std::string::npos);
}

TEST(Topology, EcmpPickIsAFixedFunctionOfHashAndHop) {
  // A pure function of its arguments (never a pointer or std::hash) that reaches every choice.
  EXPECT_EQ(ecmp_pick(0, 0, 8), ecmp_pick(0, 0, 8));
  std::set<size_t> seen;
  for (uint64_t h = 0; h < 100; ++h) seen.insert(ecmp_pick(h, 3, 4));
  EXPECT_EQ(seen.size(), 4u);
  for (uint64_t h = 0; h < 100; ++h) EXPECT_LT(ecmp_pick(h, 1, 3), 3u);
}

}  // namespace
}  // namespace kvsim
