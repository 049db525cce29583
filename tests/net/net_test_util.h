#pragma once
// Helpers for the network tests: a small catalog with round numbers, explicit specs, error capture.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/core/errors.h"
#include "sim/model/hardware.h"
#include "sim/net/topology_spec.h"
#include "sim/scenario/hardware_catalog.h"

namespace kvsim::net_test {

// Link types with round numbers: "fast" 10 GB/s, "slow" 2 GB/s, both fully achieved, 1 us latency.
inline HardwareCatalog round_catalog() {
  HardwareCatalog c;
  for (auto [name, rate] : {std::pair{"fast", 10e9}, std::pair{"slow", 2e9}}) {
    LinkSpec l;
    l.name = name;
    l.line_rate = rate;
    l.achieved_fraction = 1.0;
    l.latency = Duration::us(1);
    c.links[name] = l;
  }
  return c;
}

inline const HardwareCatalog& bundled_catalog() {
  static const HardwareCatalog c = load_hardware_catalog(kDefaultHardwareDir);
  return c;
}

// Vertices named in `gpus` are GPUs (node = position), in `switches` leaf switches.
inline TopologySpec make_spec(const std::vector<std::string>& gpus, const std::vector<std::string>& switches,
                              const std::vector<TopologySpec::Link>& links) {
  TopologySpec s;
  s.name = "test";
  s.source = "test.yaml";
  int node = 0;
  for (const auto& g : gpus) s.vertices.push_back({g, VertexKind::kGpu, node++});
  for (const auto& w : switches) s.vertices.push_back({w, VertexKind::kLeaf, -1});
  s.links = links;
  return s;
}

inline TopologySpec::Link link(const std::string& from, const std::string& to, const std::string& type = "fast") {
  TopologySpec::Link l;
  l.from = from;
  l.to = to;
  l.type = type;
  return l;
}

template <typename Fn>
std::string input_error(Fn fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected InputError";
  return "";
}

}  // namespace kvsim::net_test
