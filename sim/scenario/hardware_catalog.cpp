#include "sim/scenario/hardware_catalog.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/errors.h"
#include "sim/core/input_file.h"
#include "sim/core/units.h"
#include "sim/scenario/yaml_document.h"

namespace kvsim {
namespace {

namespace fs = std::filesystem;

// A YAML map seen through its key path. Every key must be read once through this class;
// finish() rejects the rest as unknown. Duplicate keys (which yaml-cpp accepts) are rejected.
class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string file, std::string path)
      : node_(node), file_(std::move(file)), path_(std::move(path)) {
    if (!node_.IsMap()) fail(path_, "expected a map");
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (!it->first.IsScalar()) fail(path_, "map keys must be plain strings");
      std::string key = it->first.Scalar();
      if (!keys_.insert(key).second) fail(key_path(key_text(key)), "duplicate key");
    }
  }

  // "file: a.b.key"
  std::string where(const std::string& key) const { return file_ + ": " + key_path(key); }
  std::string key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  bool has(const std::string& key) const { return keys_.count(key) > 0; }

  // A key as written, or quoted and cut when it is not a short plain name (a newline, megabytes).
  static std::string key_text(const std::string& k) {
    const bool plain =
        !k.empty() && k.size() <= 100 &&
        k.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == std::string::npos;
    return plain ? k : quote_for_message(k, 100);
  }

  YAML::Node node(const std::string& key) {
    if (!has(key)) fail(path_, "missing key '" + key + "'");
    used_.insert(key);
    return node_[key];
  }

  std::string scalar(const std::string& key) {
    YAML::Node n = node(key);
    if (n.IsNull()) fail(key_path(key), "missing value");
    if (!n.IsScalar()) fail(key_path(key), "expected a single value, not a list or map");
    return n.Scalar();
  }

  // Keys in sorted order, so named entries load in a fixed order whatever the file order.
  std::vector<std::string> keys() const { return {keys_.begin(), keys_.end()}; }

  // Rejects keys that were never read.
  void finish() const {
    for (const auto& key : keys_) {
      if (!used_.count(key)) fail(key_path(key_text(key)), "unknown key");
    }
  }

  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    throw InputError(file_ + ": " + (path.empty() ? "" : path + ": ") + message);
  }

  const std::string& file() const { return file_; }

 private:
  YAML::Node node_;
  std::string file_;
  std::string path_;
  std::set<std::string> keys_;
  std::set<std::string> used_;
};

double parse_fraction(MapReader& r, const std::string& key) {
  std::string text = r.scalar(key);
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(text, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v)) {
    r.fail(r.key_path(key), "cannot parse '" + text + "' as a fraction (e.g. 0.8)");
  }
  // Below 1 % a step or a transfer of a real size runs past the clock (1e-12 exited with no key named).
  if (!(v >= 0.01 && v <= 1.0)) r.fail(r.key_path(key), "must be in [0.01, 1] (got " + text + ")");
  return v;
}

// "none" means the feature is absent; stored as 0.
double parse_flops_or_none(MapReader& r, const std::string& key) {
  std::string text = r.scalar(key);
  return text == "none" ? 0.0 : parse_flops(text, r.where(key));
}

double parse_bandwidth_or_none(MapReader& r, const std::string& key) {
  std::string text = r.scalar(key);
  return text == "none" ? 0.0 : parse_bandwidth(text, r.where(key));
}

// Per-kernel and per-step costs: above a second no GPU or link is described, and a step priced with
// many of them would run the simulated clock past its ~292 years.
Duration parse_duration_key(MapReader& r, const std::string& key) {
  const std::string text = r.scalar(key);
  const Duration d = parse_duration(text, r.where(key));
  if (d > Duration::s(1)) r.fail(r.key_path(key), "must be at most 1 s (got " + quote_for_message(text) + ")");
  return d;
}

// Reads `sources`: exactly one non-empty text per field in `fields`.
std::map<std::string, std::string> read_sources(MapReader& parent, const std::vector<std::string>& fields) {
  MapReader r(parent.node("sources"), parent.file(), parent.key_path("sources"));
  std::map<std::string, std::string> out;
  for (const auto& field : fields) {
    std::string text = r.scalar(field);
    if (text.find_first_not_of(" \t") == std::string::npos) r.fail(r.key_path(field), "empty source");
    out[field] = text;
  }
  r.finish();
  return out;
}

GpuSpec read_gpu(MapReader& r, const std::string& stem) {
  GpuSpec g;
  g.name = r.scalar("name");
  if (g.name != stem)
    r.fail(r.key_path("name"), "must match the file name '" + stem + "' (got " + quote_for_message(g.name) + ")");
  g.display_name = r.scalar("display_name");
  g.memory_bytes = parse_bytes(r.scalar("memory"), r.where("memory"));
  // A GPU below 1 GiB is a missing unit (81559 was read as 81,559 bytes and then blamed on activation_reserve).
  if (g.memory_bytes < (int64_t{1} << 30))
    r.fail(r.key_path("memory"), "must be at least 1 GiB (got " + r.scalar("memory") + "; a size needs a unit: 80GiB)");
  g.bf16_flops = parse_flops(r.scalar("bf16_flops"), r.where("bf16_flops"));
  g.fp8_flops = parse_flops_or_none(r, "fp8_flops");
  g.fp4_flops = parse_flops_or_none(r, "fp4_flops");
  g.hbm_bandwidth = parse_bandwidth(r.scalar("hbm_bandwidth"), r.where("hbm_bandwidth"));
  g.nvlink_bandwidth = parse_bandwidth_or_none(r, "nvlink_bandwidth");
  g.pcie_bandwidth = parse_bandwidth(r.scalar("pcie_bandwidth"), r.where("pcie_bandwidth"));
  std::vector<std::string> sourced = {"memory",         "bf16_flops",         "fp8_flops",
                                      "fp4_flops",      "hbm_bandwidth",      "nvlink_bandwidth",
                                      "pcie_bandwidth", "compute_efficiency", "memory_efficiency",
                                      "kernel_floor",   "step_overhead",      "activation_reserve"};
  if (r.has("nvlink_domain")) {  // optional: only rack-scale NVLink parts name one
    const std::string text = r.scalar("nvlink_domain");
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(text, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != text.size() || v < 2 || v > (1 << 20))
      r.fail(r.key_path("nvlink_domain"),
             "must be a whole number of GPUs from 2 to 1048576 (got " + quote_for_message(text) + ")");
    if (g.nvlink_bandwidth <= 0) r.fail(r.key_path("nvlink_domain"), "needs nvlink_bandwidth");
    g.nvlink_domain = static_cast<int>(v);
    sourced.push_back("nvlink_domain");
  }
  g.compute_efficiency = parse_fraction(r, "compute_efficiency");
  g.memory_efficiency = parse_fraction(r, "memory_efficiency");
  g.kernel_floor = parse_duration_key(r, "kernel_floor");
  g.step_overhead = parse_duration_key(r, "step_overhead");
  int64_t reserve = parse_bytes(r.scalar("activation_reserve"), r.where("activation_reserve"));
  if (reserve >= g.memory_bytes) r.fail(r.key_path("activation_reserve"), "must be smaller than memory");
  g.activation_reserve_fraction = static_cast<double>(reserve) / static_cast<double>(g.memory_bytes);
  g.sources = read_sources(r, sourced);
  return g;
}

LinkSpec read_link(MapReader& r, const std::string& name) {
  LinkSpec l;
  l.name = name;
  l.display_name = r.scalar("display_name");
  l.line_rate = parse_bandwidth(r.scalar("line_rate"), r.where("line_rate"));
  l.achieved_fraction = parse_fraction(r, "achieved_fraction");
  l.latency = parse_duration_key(r, "latency");
  l.sources = read_sources(r, {"line_rate", "achieved_fraction", "latency"});
  return l;
}

TierSpec read_tier(MapReader& r, const std::string& name) {
  TierSpec t;
  t.name = name;
  t.display_name = r.scalar("display_name");
  t.read_bandwidth = parse_bandwidth(r.scalar("read_bandwidth"), r.where("read_bandwidth"));
  t.write_bandwidth = parse_bandwidth(r.scalar("write_bandwidth"), r.where("write_bandwidth"));
  t.latency = parse_duration_key(r, "latency");
  t.capacity_bytes = parse_bytes(r.scalar("capacity"), r.where("capacity"));
  if (t.capacity_bytes <= 0) r.fail(r.key_path("capacity"), "must be > 0");
  t.sources = read_sources(r, {"read_bandwidth", "write_bandwidth", "latency", "capacity"});
  return t;
}

// Adds `value` under `name`, rejecting a name already defined (here or in an earlier file).
template <typename Spec>
void insert_unique(std::map<std::string, Spec>& into, std::map<std::string, std::string>& origin,
                   const std::string& what, const std::string& name, Spec value, const MapReader& r,
                   const std::string& path) {
  auto [it, fresh] = origin.emplace(name, r.file());
  if (!fresh) r.fail(path, what + " '" + name + "' is already defined in " + it->second);
  into.emplace(name, std::move(value));
}

struct Origins {
  std::map<std::string, std::string> gpus, links, tiers;
};

// Reads a `links:` or `tiers:` map of named entries.
template <typename Spec, typename ReadFn>
void read_named_entries(MapReader& top, const std::string& key, const std::string& what, ReadFn read,
                        std::map<std::string, Spec>& into, std::map<std::string, std::string>& origin) {
  MapReader entries(top.node(key), top.file(), key);
  for (const auto& name : entries.keys()) {
    MapReader entry(entries.node(name), top.file(), entries.key_path(name));
    Spec spec = read(entry, name);
    entry.finish();
    insert_unique(into, origin, what, name, std::move(spec), entry, entries.key_path(name));
  }
  entries.finish();
}

void load_file(const fs::path& path, const std::string& shown, HardwareCatalog& catalog, Origins& origins) {
  const std::string text = read_input_file(path.string(), "hardware file");
  const YAML::Node root = load_yaml_document(text, shown);
  if (!root.IsMap()) throw InputError(shown + ": expected a map with a 'kind' key (gpu, links or tiers)");
  MapReader top(root, shown, "");
  std::string kind = top.scalar("kind");
  if (kind == "gpu") {
    std::string stem = path.stem().string();
    GpuSpec gpu = read_gpu(top, stem);
    top.finish();
    const std::string name = gpu.name;  // copied: `gpu` is moved from in the same call
    insert_unique(catalog.gpus, origins.gpus, "GPU", name, std::move(gpu), top, "name");
  } else if (kind == "links") {
    read_named_entries(top, "links", "link", read_link, catalog.links, origins.links);
    top.finish();
  } else if (kind == "tiers") {
    read_named_entries(top, "tiers", "tier", read_tier, catalog.tiers, origins.tiers);
    top.finish();
  } else {
    top.fail("kind", "unknown kind '" + kind + "' (known: gpu, links, tiers)");
  }
}

}  // namespace

HardwareCatalog load_hardware_catalog(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir + ": hardware catalog directory not found");
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") names.push_back(entry.path().filename());
  }
  if (ec) throw InputError(dir + ": cannot list directory: " + ec.message());
  if (names.empty()) throw InputError(dir + ": no *.yaml files in the hardware catalog directory");
  std::sort(names.begin(), names.end());

  HardwareCatalog catalog;
  Origins origins;
  for (const auto& name : names) {
    fs::path path = fs::path(dir) / name;
    load_file(path, path.string(), catalog, origins);
  }
  return catalog;
}

}  // namespace kvsim
