#include "sim/app/validate_disagg.h"

#include <cmath>
#include <filesystem>
#include <iterator>

#include "sim/core/errors.h"
#include "sim/net/topology.h"
#include "sim/scenario/topology_file.h"

namespace kvsim {

std::string yaml_quoted(const std::string& text) {
  // Single-quoted YAML has one escape, '' for ': a backslash or a double quote in a path stays itself.
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

namespace {

constexpr int64_t kMaxWorkers = 65536;  // the cluster's instance limit (scenario.cpp read_cluster)
constexpr int64_t kMaxTp = 4096;        // as the tp column
constexpr int kHgxGpusPerNode = 8;

// Built-in fabrics for a node per side, smallest first (models/topologies/README.md).
struct BuiltIn {
  const char* name;
  int nodes;
};
constexpr BuiltIn kBuiltIns[] = {{"hgx-h100-2node-ib-ndr", 2}, {"hgx-4node-ib-ndr", 4}, {"hgx-h100-16node-ib-ndr", 16}};

// cluster.topology as the simulator resolves it (simulation.cpp topology_file): a name in
// <hardware_dir>/../topologies, or a path to a YAML file.
std::string resolve_topology(const std::string& t, const std::string& hardware_dir) {
  if (t.find('/') != std::string::npos || t.ends_with(".yaml")) return t;
  std::filesystem::path dir = std::filesystem::path(hardware_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  return topology_path(t, (dir.parent_path() / "topologies").string());
}

// Packs `instances` x `tp` GPUs from the cursor `*next`, each instance in one NVLink domain: the simulator's
// packing of a pool without a placement (simulation.cpp place_pools). Returns the instance index that
// did not fit, or -1.
int pack(const Topology& topo, int instances, int tp, int* next, std::vector<std::string>* names) {
  for (int k = 0; k < instances; ++k) {
    while (*next < topo.num_gpus()) {
      bool fits = *next + tp <= topo.num_gpus();
      for (int r = 0; fits && r < tp; ++r) fits = topo.gpu_domain(*next + r) == topo.gpu_domain(*next);
      if (fits) break;
      ++*next;
    }
    if (*next >= topo.num_gpus()) return k;
    for (int r = 0; r < tp; ++r) names->push_back(topo.gpu_name(*next + r));
    *next += tp;
  }
  return -1;
}

}  // namespace

std::optional<DisaggregatedPoint> read_disaggregated_columns(const CsvFile& f, size_t row, const std::string& gpu,
                                                             int tp, const HardwareCatalog& hw,
                                                             const std::string& hardware_dir) {
  const auto c_pw = f.find_column("prefill_workers"), c_ptp = f.find_column("prefill_tp"),
             c_dw = f.find_column("decode_workers"), c_dtp = f.find_column("decode_tp"),
             c_topo = f.find_column("topology");
  auto present = [&](const std::optional<int>& c) { return c && !f.text(row, *c).empty(); };
  std::optional<int> given;  // the first disaggregated column given
  for (const auto& c : {c_pw, c_ptp, c_dw, c_dtp, c_topo})
    if (!given && present(c)) given = *c;
  if (!given) return std::nullopt;
  auto whole = [&](int col, int64_t max) {
    const double v = f.number(row, col);
    if (v < 1 || v != std::floor(v))
      throw InputError(f.where(row, col) + ": must be a whole number >= 1 (got " + f.text(row, col) + ")");
    if (!(v <= static_cast<double>(max)))
      throw InputError(f.where(row, col) + ": must be <= " + std::to_string(max) + " (got " + f.text(row, col) + ")");
    return static_cast<int>(v);
  };
  auto required = [&](const std::optional<int>& c, const char* name) {
    if (!present(c))
      throw InputError(f.where(row, *given) + ": a disaggregated point needs prefill_workers and decode_workers (" +
                       name + " is " + (c ? "empty" : "not a column") + ")");
    return whole(*c, kMaxWorkers);
  };
  DisaggregatedPoint d;
  d.prefill_workers = required(c_pw, "prefill_workers");
  d.decode_workers = required(c_dw, "decode_workers");
  d.prefill_tp = present(c_ptp) ? whole(*c_ptp, kMaxTp) : tp;
  d.decode_tp = present(c_dtp) ? whole(*c_dtp, kMaxTp) : tp;
  const std::string sides = std::to_string(d.prefill_workers) + " prefill x TP " + std::to_string(d.prefill_tp) +
                            " + " + std::to_string(d.decode_workers) + " decode x TP " + std::to_string(d.decode_tp);
  int fit_col = *c_dw;  // the column a point that does not fit is reported under
  if (present(c_topo)) {
    d.topology = f.text(row, *c_topo);
    fit_col = *c_topo;
  } else {
    d.default_topology = true;
    if (gpu != "h100-sxm" && gpu != "h200")
      throw InputError(
          f.where(row, *given) + ": no built-in topology for GPU '" + gpu +
          "' (defaults exist for h100-sxm and h200); give a topology column (a file in models/topologies/)");
    // Each side on its own nodes.
    for (const auto& [c, t] : {std::pair{c_ptp, d.prefill_tp}, std::pair{c_dtp, d.decode_tp}})
      if (t > kHgxGpusPerNode)
        throw InputError(
            f.where(row, c && present(c) ? *c : f.column("tp")) + ": must be <= " + std::to_string(kHgxGpusPerNode) +
            " on the built-in HGX topologies (an instance's ranks stay on one node; got " + std::to_string(t) + ")");
    auto nodes = [](int workers, int side_tp) {
      const int per_node = kHgxGpusPerNode / side_tp;
      return (workers + per_node - 1) / per_node;
    };
    const int need = nodes(d.prefill_workers, d.prefill_tp) + nodes(d.decode_workers, d.decode_tp);
    for (const BuiltIn& b : kBuiltIns)
      if (d.topology.empty() && need <= b.nodes) d.topology = b.name;
    if (d.topology.empty())
      throw InputError(f.where(row, *c_dw) + ": " + sides + " need " + std::to_string(need) +
                       " HGX nodes with a node per side; the largest built-in topology, " +
                       std::end(kBuiltIns)[-1].name + ", has " + std::to_string(std::end(kBuiltIns)[-1].nodes) +
                       " (give a topology column)");
  }
  const std::string path = resolve_topology(d.topology, hardware_dir);
  if (!std::filesystem::exists(path))
    throw InputError(f.where(row, fit_col) + ": no topology '" + d.topology + "' (" + path + " does not exist)");
  std::optional<Topology> topo;
  try {
    topo.emplace(Topology::build(load_topology_file(path), hw));
  } catch (const InputError& e) {
    throw InputError(f.where(row, fit_col) + ": " + e.what());
  }
  int next = 0;
  auto place = [&](int workers, int side_tp, const char* side, std::vector<std::string>* names) {
    const int k = pack(*topo, workers, side_tp, &next, names);
    if (k >= 0)
      throw InputError(f.where(row, fit_col) + ": topology '" + d.topology + "' (" + std::to_string(topo->num_gpus()) +
                       " GPUs) has no room for " + side + " instance " + std::to_string(k) + " of " + sides +
                       (d.default_topology ? ", a node per side" : "") +
                       " (each instance needs TP free GPUs in one NVLink domain)");
  };
  place(d.prefill_workers, d.prefill_tp, "prefill", &d.prefill_gpus);
  if (d.default_topology) {
    const int last = topo->gpu_node(next - 1);
    while (next < topo->num_gpus() && topo->gpu_node(next) == last) ++next;
  }
  place(d.decode_workers, d.decode_tp, "decode", &d.decode_gpus);
  return d;
}

std::string disaggregated_cluster_yaml(const DisaggregatedPoint& d) {
  auto list = [](const std::vector<std::string>& gpus) {
    std::string s;
    for (const std::string& g : gpus) s += (s.empty() ? "" : ", ") + yaml_quoted(g);
    return "[" + s + "]";
  };
  std::string y;
  y += "  topology: " + yaml_quoted(d.topology) + "\n";
  y += "  pools:\n";
  y += "    - {name: prefill, role: prefill, instances: " + std::to_string(d.prefill_workers) +
       ", engine: {tensor_parallel_size: " + std::to_string(d.prefill_tp) + "}, placement: " + list(d.prefill_gpus) +
       "}\n";
  y += "    - {name: decode, role: decode, instances: " + std::to_string(d.decode_workers) +
       ", engine: {tensor_parallel_size: " + std::to_string(d.decode_tp) + "}, placement: " + list(d.decode_gpus) +
       "}\n";
  y += "  disaggregation: {decider: always}\n";
  return y;
}

}  // namespace kvsim
