#include "sim/sweep/sweep_folder.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "sim/core/errors.h"
#include "sim/core/random.h"
#include "sim/model/json.h"

namespace kvsim {
namespace {

std::string hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string plan_hash(const SweepPlan& plan) {
  uint64_t h = fnv1a64(plan.file.base_yaml);
  for (const SweepPoint& p : plan.points) {
    h = fnv1a64(p.key + "\n", h);
    for (const std::string& o : p.overrides) h = fnv1a64(o + "\n", h);
  }
  return hex(h);
}

std::string string_list(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + json_quote(v[i]);
  return s + "]";
}

std::string manifest_json(const SweepPlan& plan) {
  std::string j = "{\n";
  j += "  \"name\": " + json_quote(plan.file.name) + ",\n";
  j += "  \"plan_hash\": " + json_quote(plan_hash(plan)) + ",\n";
  j += "  \"base\": " + json_quote(plan.file.base_source) + ",\n";
  j += "  \"base_seed\": " + std::to_string(plan.base_seed) + ",\n";
  j += "  \"columns\": " + string_list(plan.columns) + ",\n";
  j += "  \"points\": [";
  for (size_t i = 0; i < plan.points.size(); ++i) {
    const SweepPoint& p = plan.points[i];
    j += std::string(i ? "," : "") + "\n    {\"point\": " + std::to_string(p.index) +
         ", \"key\": " + json_quote(p.key) + ", \"seed\": " + std::to_string(p.seed) +
         ", \"values\": " + string_list(p.values) + ", \"overrides\": " + string_list(p.overrides) + "}";
  }
  j += "\n  ]\n}\n";
  return j;
}

std::string index_name(int index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%06d", index);
  return buf;
}

}  // namespace

std::string point_file(const std::string& dir, int index) {
  return (std::filesystem::path(dir) / "points" / (index_name(index) + ".json")).string();
}
std::string failed_point_file(const std::string& dir, int index) {
  return (std::filesystem::path(dir) / "points" / (index_name(index) + ".failed.json")).string();
}

std::string unique_tmp_tag() {
  return std::to_string(getpid()) + "." + hex(std::hash<std::thread::id>{}(std::this_thread::get_id()));
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + unique_tmp_tag();
  std::error_code ec;
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw InputError(path + ": cannot write");
    f << text;
    f.close();
    if (!f) {
      std::filesystem::remove(tmp, ec);
      throw InputError(path + ": write failed");
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw InputError(path + ": cannot write: " + ec.message());
  }
}

void prepare_sweep_folder(const SweepPlan& plan, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(dir) / "points", ec);
  if (ec) throw InputError(dir + ": cannot create the sweep folder: " + ec.message());
  const std::string path = (std::filesystem::path(dir) / "sweep.json").string();
  if (std::filesystem::exists(path)) {
    const SweepManifest m = read_manifest(dir);
    if (m.plan_hash != plan_hash(plan))
      throw InputError(dir + ": holds another sweep (" + m.name + ", " + std::to_string(m.points.size()) +
                       " points, other points or base scenario); give another --out or remove the folder");
    return;
  }
  write_file_atomically(path, manifest_json(plan));
}

SweepManifest read_manifest(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "sweep.json").string();
  if (!std::filesystem::exists(path)) throw InputError(dir + ": not a sweep folder (no sweep.json)");
  // kvsim's own manifest, 10 values a point: only the file-size bound applies.
  const JsonValue v = parse_json_file(path, INT64_MAX);
  const auto need = [&](const JsonValue& o, const char* key) -> const JsonValue& {
    const JsonValue* m = o.is_object() ? o.find(key) : nullptr;
    if (!m) throw InputError(path + ": " + key + ": missing");
    return *m;
  };
  SweepManifest m;
  m.name = need(v, "name").str();
  m.plan_hash = need(v, "plan_hash").str();
  for (const JsonValue& c : need(v, "columns").array()) m.columns.push_back(c.str());
  for (const JsonValue& p : need(v, "points").array()) {
    ManifestPoint mp;
    mp.index = static_cast<int>(need(p, "point").integer());
    mp.key = need(p, "key").str();
    mp.seed = static_cast<uint64_t>(need(p, "seed").integer());
    for (const JsonValue& x : need(p, "values").array()) mp.values.push_back(x.str());
    if (mp.values.size() != m.columns.size() || mp.index != static_cast<int>(m.points.size()))
      throw InputError(path + ": points: point " + std::to_string(mp.index) + " does not match the columns");
    m.points.push_back(std::move(mp));
  }
  return m;
}

}  // namespace kvsim
