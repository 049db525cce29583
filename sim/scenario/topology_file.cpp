#include "sim/scenario/topology_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <utility>

#include "sim/core/errors.h"
#include "sim/core/input_file.h"
#include "sim/core/units.h"
#include "sim/net/topology_generators.h"
#include "sim/scenario/yaml_document.h"

namespace kvsim {
namespace {

// A YAML map seen through its key path: every key must be read once; finish() rejects the rest.
// (The same contract as hardware_catalog.cpp's reader, which is private to that file.)
class Keys {
 public:
  Keys(const YAML::Node& node, std::string file, std::string path)
      : node_(node), file_(std::move(file)), path_(std::move(path)) {
    if (!node_.IsMap()) fail(path_, "expected a map");
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (!it->first.IsScalar()) fail(path_, "map keys must be plain strings");
      if (!keys_.insert(it->first.Scalar()).second) fail(at(key_text(it->first.Scalar())), "duplicate key");
    }
  }
  std::string at(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  // A key as written, or quoted and cut when it is not a short plain name (a newline, megabytes).
  static std::string key_text(const std::string& k) {
    const bool plain =
        !k.empty() && k.size() <= 100 &&
        k.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == std::string::npos;
    return plain ? k : quote_for_message(k, 100);
  }
  bool has(const std::string& key) const { return keys_.count(key) > 0; }
  YAML::Node node(const std::string& key) {
    if (!has(key)) fail(path_, "missing key '" + key + "'");
    used_.insert(key);
    return node_[key];
  }
  std::string scalar(const std::string& key) {
    YAML::Node n = node(key);
    if (n.IsNull()) fail(at(key), "missing value");
    if (!n.IsScalar()) fail(at(key), "expected a single value, not a list or map");
    return n.Scalar();
  }
  int64_t integer(const std::string& key, int64_t lo, int64_t hi) {
    const std::string text = scalar(key);
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(text, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != text.size()) fail(at(key), "cannot parse " + quote_for_message(text) + " as an integer");
    if (v < lo || v > hi) {
      fail(at(key), "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got " + text + ")");
    }
    return v;
  }
  double number(const std::string& key) {
    const std::string text = scalar(key);
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(text, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != text.size() || !std::isfinite(v)) {
      fail(at(key), "cannot parse " + quote_for_message(text) + " as a number");
    }
    return v;
  }
  void finish() const {
    for (const auto& key : keys_) {
      if (!used_.count(key)) fail(at(key_text(key)), "unknown key");
    }
  }
  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    throw InputError(file_ + ": " + (path.empty() ? "" : path + ": ") + message);
  }
  const std::string& file() const { return file_; }

 private:
  YAML::Node node_;
  std::string file_, path_;
  std::set<std::string> keys_, used_;
};

void read_sources(Keys& top) {
  if (!top.has("sources")) return;
  Keys s(top.node("sources"), top.file(), "sources");
  YAML::Node n = top.node("sources");
  for (auto it = n.begin(); it != n.end(); ++it) s.scalar(it->first.Scalar());
  s.finish();
}

void read_explicit(Keys& top, TopologySpec& spec) {
  YAML::Node vs = top.node("vertices");
  if (!vs.IsSequence()) top.fail("vertices", "expected a list");
  for (size_t i = 0; i < vs.size(); ++i) {
    Keys v(vs[i], top.file(), "vertices[" + std::to_string(i) + "]");
    TopologySpec::Vertex out;
    out.name = v.scalar("name");
    // Names appear in links, placements and reports: printable characters only (a newline split the
    // report's link lines).
    if (out.name.empty() || std::any_of(out.name.begin(), out.name.end(),
                                        [](char c) { return static_cast<unsigned char>(c) < 0x21 || c == 0x7f; }))
      v.fail(v.at("name"),
             "must be a non-empty name without blanks or control characters (got " + quote_for_message(out.name) + ")");
    const std::string kind = v.scalar("kind");
    auto k = vertex_kind_from_name(kind);
    if (!k)
      v.fail(v.at("kind"), "unknown vertex kind " + quote_for_message(kind) + " (known: " + known_vertex_kinds() + ")");
    out.kind = *k;
    // -1: shared by every node (a remote store), the value a vertex without the key has.
    if (v.has("node")) out.node = static_cast<int>(v.integer("node", -1, 1 << 20));
    v.finish();
    spec.vertices.push_back(std::move(out));
  }
  YAML::Node ls = top.node("links");
  if (!ls.IsSequence()) top.fail("links", "expected a list");
  for (size_t i = 0; i < ls.size(); ++i) {
    Keys l(ls[i], top.file(), "links[" + std::to_string(i) + "]");
    TopologySpec::Link out;
    out.from = l.scalar("from");
    out.to = l.scalar("to");
    out.type = l.scalar("type");
    if (l.has("count")) out.count = static_cast<int>(l.integer("count", 1, 1 << 16));
    // Bounded so that what the network derives stays finite and on the simulated clock: a link a million
    // times faster than its type overflowed capacities to infinity (flows never ended), one a million
    // times slower put a flow's end past the clock, and hop latencies of up to 1 s (the catalog's cap)
    // cannot add up past it along any path.
    if (l.has("scale")) {
      out.scale = l.number("scale");
      if (!(out.scale >= 1e-6 && out.scale <= 1e6))
        l.fail(l.at("scale"), "must be in [1e-6, 1e6] (got " + l.scalar("scale") + ")");
    }
    if (l.has("latency")) {
      out.latency = parse_duration(l.scalar("latency"), top.file() + ": " + l.at("latency"));
      if (out.latency > Duration::s(1))
        l.fail(l.at("latency"), "must be at most 1 s (got " + quote_for_message(l.scalar("latency")) + ")");
    }
    l.finish();
    spec.links.push_back(std::move(out));
  }
}

void read_generator(Keys& top, TopologySpec& spec) {
  const std::string gen = top.scalar("generator");
  TopologySpec made;
  if (gen == "hgx_node") {
    NodeLinks links{top.scalar("gpu_link"), top.scalar("pcie_link"), top.scalar("nic_link")};
    const int gpus = top.has("gpus") ? static_cast<int>(top.integer("gpus", 1, 64)) : 8;
    made = hgx_node(links, 0, gpus);
  } else if (gen == "leaf_spine") {
    const int nodes = static_cast<int>(top.integer("nodes", 1, 4096));
    const std::string gpu = top.scalar("gpu_link"), pcie = top.scalar("pcie_link"), nic = top.scalar("nic_link");
    const std::string fabric = top.scalar("fabric_link");
    const double over = top.number("oversubscription");
    if (!(over >= 1 && over <= 64))
      top.fail("oversubscription", "must be in [1, 64] (ratio down:up, 1 = non-blocking)");
    const int rails = top.has("rails") ? static_cast<int>(top.integer("rails", 1, 64)) : 8;
    const int spines = top.has("spines") ? static_cast<int>(top.integer("spines", 1, 1024)) : 0;
    made = leaf_spine(nodes, gpu, pcie, nic, fabric, over, rails, spines);
  } else if (gen == "gb200_nvl72") {
    const std::string gpu = top.scalar("gpu_link"), host = top.scalar("host_link");
    made = gb200_nvl72(gpu, host, top.scalar("pcie_link"), top.scalar("nic_link"));
  } else {
    top.fail("generator",
             "unknown generator " + quote_for_message(gen) + " (known: gb200_nvl72, hgx_node, leaf_spine)");
  }
  spec.vertices = std::move(made.vertices);
  spec.links = std::move(made.links);
}

}  // namespace

std::string topology_path(const std::string& name, const std::string& dir) { return dir + "/" + name + ".yaml"; }

TopologySpec parse_topology(const std::string& text, const std::string& source, const std::string& name) {
  const YAML::Node root = load_yaml_document(text, source);
  if (!root.IsMap()) throw InputError(source + ": expected a map with 'kind: topology'");
  Keys top(root, source, "");
  const std::string kind = top.scalar("kind");
  if (kind != "topology") top.fail("kind", "expected 'topology' (got " + quote_for_message(kind) + ")");
  TopologySpec spec;
  spec.name = name;
  spec.source = source;
  if (top.has("description")) top.scalar("description");
  read_sources(top);
  if (top.has("generator")) {
    if (top.has("vertices") || top.has("links")) top.fail("generator", "give a generator or vertices/links, not both");
    read_generator(top, spec);
  } else {
    read_explicit(top, spec);
  }
  top.finish();
  return spec;
}

TopologySpec load_topology_file(const std::string& path) {
  const std::string text = read_input_file(path, "topology file");
  return parse_topology(text, path, std::filesystem::path(path).stem().string());
}

}  // namespace kvsim
