#include "sim/scenario/sweep_file.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "sim/core/errors.h"
#include "sim/core/input_file.h"
#include "sim/scenario/yaml_document.h"

namespace kvsim {
namespace {

[[noreturn]] void fail(const std::string& source, const std::string& key, const std::string& msg) {
  throw InputError(source + ": " + key + ": " + msg);
}

std::string read_text(const std::string& path, const std::string& source, const std::string& key) {
  try {
    return read_input_file(path, "scenario file");
  } catch (const InputError& e) {
    fail(source, key, e.what());
  }
}

// Flow-style YAML text of a node, as --set reads it back (quoted where a plain scalar would not survive).
std::string flow_yaml(const YAML::Node& n) {
  YAML::Emitter em;
  em << YAML::Flow << n;
  return em.c_str();
}

SweepValue read_value(const YAML::Node& n) {
  SweepValue v;
  v.yaml = flow_yaml(n);
  v.display = n.IsScalar() ? n.Scalar() : v.yaml;
  return v;
}

std::vector<std::string> read_sets(const YAML::Node& n, const std::string& source, const std::string& key) {
  if (!n.IsSequence()) fail(source, key, "must be a list of key.path=value strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string k = key + "[" + std::to_string(i) + "]";
    if (!n[i].IsScalar()) fail(source, k, "must be a key.path=value string");
    const std::string s = n[i].Scalar();
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      fail(source, k, "expected key.path=value (got " + quote_for_message(s) + ")");
    out.push_back(s);
  }
  return out;
}

}  // namespace

SweepFile parse_sweep_file(const std::string& text, const std::string& source, const std::string& dir) {
  const YAML::Node root = load_yaml_document(text, source);
  if (!root || !root.IsMap()) fail(source, "(top level)", "must be a mapping");
  const std::set<std::string> known = {"name", "base", "set", "axes", "combine", "variants", "seeds", "seed_key"};
  std::set<std::string> seen;
  for (const auto& kv : root) {
    const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (!seen.insert(k).second) fail(source, k, "duplicate key");
    if (!known.count(k)) {
      std::string list;
      for (const auto& a : known) list += (list.empty() ? "" : ", ") + a;
      const bool plain =
          !k.empty() && k.size() <= 100 && k.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos;
      fail(source, plain ? k : quote_for_message(k, 100), "unknown key (known: " + list + ")");
    }
  }

  SweepFile f;
  f.path = source;
  if (root["name"]) {
    if (!root["name"].IsScalar() || root["name"].Scalar().empty()) fail(source, "name", "must be a non-empty string");
    f.name = root["name"].Scalar();
    if (f.name.find_first_of("/\\") != std::string::npos || f.name == "." || f.name == "..")
      fail(source, "name", "must be a plain name (it names the output folder runs/<name>)");
  } else {
    f.name = std::filesystem::path(source).stem().string();
  }

  const YAML::Node base = root["base"];
  if (!base) fail(source, "base", "missing (a scenario path relative to this file, or an inline scenario)");
  if (base.IsScalar()) {
    std::filesystem::path p(base.Scalar());
    if (p.is_relative() && !dir.empty()) p = std::filesystem::path(dir) / p;
    f.base_source = p.lexically_normal().string();
    f.base_yaml = read_text(f.base_source, source, "base");
  } else if (base.IsMap()) {
    f.base_source = source + " (base)";
    YAML::Emitter em;
    em << base;
    f.base_yaml = em.c_str();
  } else {
    fail(source, "base", "must be a scenario path or an inline scenario mapping");
  }

  if (root["set"]) f.sets = read_sets(root["set"], source, "set");

  if (const YAML::Node axes = root["axes"]) {
    if (!axes.IsMap()) fail(source, "axes", "must be a mapping of scenario key path -> list of values");
    std::set<std::string> keys;
    for (const auto& kv : axes) {
      const std::string k = kv.first.IsScalar() ? kv.first.Scalar() : "";
      const std::string where = "axes." + k;
      if (k.empty()) fail(source, "axes", "keys must be scenario key paths");
      if (k == "variant" || k == "repeat" || k == "seed")
        fail(source, where, "'" + k + "' is not an axis key (use variants: / seeds:, or the scenario seed via set:)");
      if (!keys.insert(k).second) fail(source, where, "duplicate axis");
      if (!kv.second.IsSequence() || kv.second.size() == 0) fail(source, where, "must be a non-empty list of values");
      SweepAxis a;
      a.key = k;
      std::set<std::string> values;
      for (size_t i = 0; i < kv.second.size(); ++i) {
        a.values.push_back(read_value(kv.second[i]));
        if (!values.insert(a.values.back().yaml).second)
          fail(source, where + "[" + std::to_string(i) + "]", "repeated value " + a.values.back().display);
      }
      f.axes.push_back(std::move(a));
    }
  }

  if (const YAML::Node c = root["combine"]) {
    const std::string v = c.IsScalar() ? c.Scalar() : "";
    if (v == "grid")
      f.combine = SweepCombine::kGrid;
    else if (v == "zip")
      f.combine = SweepCombine::kZip;
    else
      fail(source, "combine", "must be grid or zip (got " + quote_for_message(v) + ")");
  }
  if (f.combine == SweepCombine::kZip) {
    for (const SweepAxis& a : f.axes)
      if (a.values.size() != f.axes.front().values.size())
        fail(source, "axes." + a.key,
             "combine: zip needs lists of one length (" + std::to_string(f.axes.front().values.size()) + " for axes." +
                 f.axes.front().key + ", got " + std::to_string(a.values.size()) + ")");
  }

  if (const YAML::Node v = root["variants"]) {
    if (!v.IsMap() || v.size() == 0) fail(source, "variants", "must be a mapping of name -> list of --set strings");
    std::set<std::string> names;
    for (const auto& kv : v) {
      const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "";
      if (name.empty()) fail(source, "variants", "names must be plain strings");
      if (!names.insert(name).second) fail(source, "variants." + name, "duplicate variant");
      SweepVariant var;
      var.name = name;
      if (!kv.second.IsNull()) var.sets = read_sets(kv.second, source, "variants." + name);
      f.variants.push_back(std::move(var));
    }
  }

  if (const YAML::Node s = root["seeds"]) {
    int64_t n = 0;
    try {
      size_t used = 0;
      n = s.IsScalar() ? std::stoll(s.Scalar(), &used) : 0;
      if (used != s.Scalar().size()) n = 0;
    } catch (const std::exception&) {
      n = 0;
    }
    if (n < 1 || n > 100000) fail(source, "seeds", "must be an integer from 1 to 100000 (repeats of every point)");
    f.seeds = static_cast<int>(n);
  }
  if (const YAML::Node k = root["seed_key"]) {
    const std::string v = k.IsScalar() ? k.Scalar() : "";
    if (v == "point")
      f.seed_key = SweepSeedKey::kPoint;
    else if (v == "repeat")
      f.seed_key = SweepSeedKey::kRepeat;
    else
      fail(source, "seed_key", "must be point or repeat (got " + quote_for_message(v) + ")");
  }
  return f;
}

SweepFile load_sweep_file(const std::string& path) {
  return parse_sweep_file(read_input_file(path, "sweep file"), path,
                          std::filesystem::path(path).parent_path().string());
}

}  // namespace kvsim
