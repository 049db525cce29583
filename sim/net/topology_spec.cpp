#include "sim/net/topology_spec.h"

#include <array>
#include <utility>

namespace kvsim {
namespace {

constexpr std::array<std::pair<VertexKind, const char*>, 8> kKinds = {{
    {VertexKind::kGpu, "gpu"},
    {VertexKind::kNvSwitch, "nvswitch"},
    {VertexKind::kPcieSwitch, "pcie_switch"},
    {VertexKind::kNic, "nic"},
    {VertexKind::kCpu, "cpu"},
    {VertexKind::kLeaf, "leaf"},
    {VertexKind::kSpine, "spine"},
    {VertexKind::kStorage, "storage"},
}};

}  // namespace

const char* vertex_kind_name(VertexKind kind) {
  for (const auto& [k, name] : kKinds) {
    if (k == kind) return name;
  }
  return "?";
}

std::optional<VertexKind> vertex_kind_from_name(std::string_view name) {
  for (const auto& [k, n] : kKinds) {
    if (name == n) return k;
  }
  return std::nullopt;
}

std::string known_vertex_kinds() {
  std::string out;
  for (const auto& [k, name] : kKinds) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

}  // namespace kvsim
