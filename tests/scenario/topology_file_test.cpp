// Topology files: the bundled ones load and build; bad keys, numbers and types name file and key.
#include "sim/scenario/topology_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "sim/net/topology.h"
#include "tests/net/net_test_util.h"

namespace kvsim {
namespace {

using net_test::bundled_catalog;
using net_test::input_error;

Topology build_file(const std::string& name) {
  return Topology::build(load_topology_file(topology_path(name)), bundled_catalog());
}

TEST(TopologyFile, BundledFilesLoadAndBuild) {
  struct Case {
    const char* name;
    int gpus, nodes;
  };
  for (const Case& c :
       {Case{"hgx-h100-1node", 8, 1}, Case{"hgx-h100-2node-ib-ndr", 16, 2}, Case{"hgx-h100-2node-roce-200", 16, 2},
        Case{"hgx-h800-2node-roce-cx7", 16, 2}, Case{"hgx-h100-16node-ib-ndr", 128, 16}, Case{"gb200-nvl72", 72, 18},
        Case{"hgx-4node-ib-ndr", 32, 4}, Case{"hgx-4node-roce-200", 32, 4}}) {
    SCOPED_TRACE(c.name);
    const Topology t = build_file(c.name);
    EXPECT_EQ(t.name(), c.name);
    EXPECT_EQ(t.num_gpus(), c.gpus);
    EXPECT_EQ(t.num_nodes(), c.nodes);
  }
  // Every file in the directory is one of the above (a new file needs a case here).
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(kDefaultTopologyDir))
    files += e.path().extension() == ".yaml";
  EXPECT_EQ(files, 8);
}

// 16 nodes on 8 rails: NIC r of every node on leaf r; cross-node same-rail is 6 hops, cross-rail 8.
TEST(TopologyFile, SixteenNodeFabricIsRailOptimised) {
  const Topology t = build_file("hgx-h100-16node-ib-ndr");
  EXPECT_EQ(t.hops(*t.find_gpu("node0/gpu4"), *t.find_gpu("node15/gpu4")), 6);
  EXPECT_EQ(t.hops(*t.find_gpu("node0/gpu4"), *t.find_gpu("node15/gpu5")), 8);
  EXPECT_EQ(t.hops(*t.find_gpu("node3/gpu0"), *t.find_gpu("node3/gpu7")), 2);
}

TEST(TopologyFile, ExplicitVerticesAndLinks) {
  const std::string text =
      "kind: topology\n"
      "vertices:\n"
      "  - {name: a, kind: gpu, node: 0}\n"
      "  - {name: b, kind: gpu, node: 1}\n"
      "  - {name: sw, kind: leaf}\n"
      "links:\n"
      "  - {from: a, to: sw, type: ib-ndr, count: 2}\n"
      "  - {from: sw, to: b, type: ib-ndr, scale: 0.5, latency: 3us}\n";
  const Topology t = Topology::build(parse_topology(text, "x.yaml", "x"), bundled_catalog());
  auto p = t.route(0, 1, 0);
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(t.link(p->links[0]).capacity, 2 * 0.7 * 50e9);
  EXPECT_DOUBLE_EQ(t.link(p->links[1]).capacity, 0.5 * 0.7 * 50e9);
  EXPECT_EQ(p->latency, Duration::us(17 + 3));
}

std::string load_error(const std::string& text) {
  return input_error([&] { Topology::build(parse_topology(text, "x.yaml", "x"), bundled_catalog()); });
}

const char* kLeafSpine =
    "kind: topology\ngenerator: leaf_spine\nnodes: 2\ngpu_link: nvlink4\npcie_link: pcie5-x16\n"
    "nic_link: ib-ndr\nfabric_link: ib-ndr\noversubscription: 1\n";

TEST(TopologyFile, UnknownLinkTypeNamesFileAndKey) {
  std::string text = kLeafSpine;
  text.replace(text.find("nic_link: ib-ndr"), 16, "nic_link: ib-xdr");
  std::string msg = load_error(text);
  EXPECT_NE(msg.find("x.yaml: nic_link: unknown link type 'ib-xdr' (known: "), std::string::npos) << msg;
  msg = load_error(
      "kind: topology\nvertices:\n  - {name: a, kind: gpu, node: 0}\n  - {name: b, kind: gpu, node: 0}\n"
      "links:\n  - {from: a, to: b, type: nvlink9}\n");
  EXPECT_NE(msg.find("x.yaml: links[0].type: unknown link type 'nvlink9'"), std::string::npos) << msg;
}

TEST(TopologyFile, MissingVertexNamesFileAndKey) {
  std::string msg = load_error(
      "kind: topology\nvertices:\n  - {name: a, kind: gpu, node: 0}\n  - {name: b, kind: gpu, node: 0}\n"
      "links:\n  - {from: a, to: b, type: nvlink4}\n  - {from: c, to: b, type: nvlink4}\n");
  EXPECT_NE(msg.find("x.yaml: links[1].from: unknown vertex 'c'"), std::string::npos) << msg;
}

TEST(TopologyFile, UnknownKeyNamesFileAndKey) {
  std::string msg = load_error(std::string(kLeafSpine) + "spines_per_leaf: 4\n");
  EXPECT_NE(msg.find("x.yaml: spines_per_leaf: unknown key"), std::string::npos) << msg;
  msg = load_error("kind: topology\nvertices:\n  - {name: a, kind: gpu, node: 0, colour: red}\nlinks: []\n");
  EXPECT_NE(msg.find("x.yaml: vertices[0].colour: unknown key"), std::string::npos) << msg;
  msg = load_error("kind: topology\nvertices:\n  - {name: a, kind: switch}\nlinks: []\n");
  EXPECT_NE(msg.find("x.yaml: vertices[0].kind: unknown vertex kind 'switch' (known: gpu, nvswitch,"),
            std::string::npos)
      << msg;
  msg = load_error("kind: topology\ngenerator: torus\n");
  EXPECT_NE(msg.find("x.yaml: generator: unknown generator 'torus' (known: gb200_nvl72, hgx_node, leaf_spine)"),
            std::string::npos)
      << msg;
  msg = load_error("kind: links\n");
  EXPECT_NE(msg.find("x.yaml: kind: expected 'topology'"), std::string::npos) << msg;
}

TEST(TopologyFile, BadNumberNamesFileAndKey) {
  std::string text = kLeafSpine;
  text.replace(text.find("nodes: 2"), 8, "nodes: two");
  std::string msg = load_error(text);
  EXPECT_NE(msg.find("x.yaml: nodes: cannot parse 'two' as an integer"), std::string::npos) << msg;
  text = kLeafSpine;
  text.replace(text.find("nodes: 2"), 8, "nodes: 0");
  msg = load_error(text);
  EXPECT_NE(msg.find("x.yaml: nodes: must be in [1, 4096] (got 0)"), std::string::npos) << msg;
  text = kLeafSpine;
  text.replace(text.find("oversubscription: 1"), 19, "oversubscription: 0.5");
  msg = load_error(text);
  EXPECT_NE(msg.find("x.yaml: oversubscription: must be in [1, 64]"), std::string::npos) << msg;
  msg = load_error(
      "kind: topology\nvertices:\n  - {name: a, kind: gpu, node: 0}\n  - {name: b, kind: gpu, node: 0}\n"
      "links:\n  - {from: a, to: b, type: nvlink4, scale: fast}\n");
  EXPECT_NE(msg.find("x.yaml: links[0].scale: cannot parse 'fast' as a number"), std::string::npos) << msg;
  msg = load_error(
      "kind: topology\nvertices:\n  - {name: a, kind: gpu, node: 0}\n  - {name: b, kind: gpu, node: 0}\n"
      "links:\n  - {from: a, to: b, type: nvlink4, latency: soon}\n");
  EXPECT_NE(msg.find("x.yaml: links[0].latency: cannot parse 'soon'"), std::string::npos) << msg;
  // Bounds that keep the network finite and on the clock: a 1e300 scale made capacities infinite (a
  // hang), 1e-15 put flows past the clock, 1e9 s hops summed past it (both internal errors).
  const std::string two =
      "kind: topology\nvertices:\n  - {name: a, kind: gpu, node: 0}\n"
      "  - {name: b, kind: gpu, node: 0}\nlinks:\n  - {from: a, to: b, type: nvlink4, ";
  for (const char* scale : {"1e300", "1e-15", "2e6"}) {
    msg = load_error(two + "scale: " + scale + "}\n");
    EXPECT_NE(msg.find(std::string("x.yaml: links[0].scale: must be in [1e-6, 1e6] (got ") + scale + ")"),
              std::string::npos)
        << msg;
  }
  msg = load_error(two + "latency: 2s}\n");
  EXPECT_NE(msg.find("x.yaml: links[0].latency: must be at most 1 s (got '2s')"), std::string::npos) << msg;
  // The bounds themselves are fine.
  EXPECT_NO_THROW(
      Topology::build(parse_topology(two + "scale: 1e6, latency: 1s}\n", "x.yaml", "x"), bundled_catalog()));
}

TEST(TopologyFile, MissingFileIsAnInputError) {
  std::string msg = input_error([] { load_topology_file(topology_path("no-such-topology")); });
  EXPECT_NE(msg.find("models/topologies/no-such-topology.yaml"), std::string::npos) << msg;
}

}  // namespace
}  // namespace kvsim
