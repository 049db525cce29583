#include "sim/sweep/sweep_plan.h"

#include <algorithm>
#include <utility>

#include "sim/core/errors.h"
#include "sim/core/random.h"
#include "sim/model/json.h"

namespace kvsim {
namespace {

struct Assignment {
  std::string column;
  std::string display;
  std::vector<std::string> sets;
};

// Rows of axis assignments in point order (grid: first axis slowest; zip: i-th of each).
std::vector<std::vector<Assignment>> axis_rows(const SweepFile& f) {
  std::vector<std::vector<Assignment>> rows{{}};
  if (f.axes.empty()) return rows;
  const auto assign = [](const SweepAxis& a, size_t i) {
    return Assignment{a.key, a.values[i].display, {a.key + "=" + a.values[i].yaml}};
  };
  if (f.combine == SweepCombine::kZip) {
    rows.clear();
    for (size_t i = 0; i < f.axes.front().values.size(); ++i) {
      std::vector<Assignment> row;
      for (const SweepAxis& a : f.axes) row.push_back(assign(a, i));
      rows.push_back(std::move(row));
    }
    return rows;
  }
  for (const SweepAxis& a : f.axes) {
    std::vector<std::vector<Assignment>> next;
    for (const auto& row : rows)
      for (size_t i = 0; i < a.values.size(); ++i) {
        next.push_back(row);
        next.back().push_back(assign(a, i));
      }
    rows = std::move(next);
  }
  return rows;
}

std::string point_key(std::vector<Assignment> row) {
  std::sort(row.begin(), row.end(), [](const Assignment& a, const Assignment& b) { return a.column < b.column; });
  std::string key;
  for (const Assignment& a : row) key += (key.empty() ? "" : ",") + a.column + "=" + a.display;
  return key;
}

}  // namespace

uint64_t sweep_point_seed(uint64_t base_seed, const std::string& key) {
  uint64_t state = base_seed ^ fnv1a64(key);
  return splitmix64(state) & 0x7fffffffffffffffULL;
}

SweepPlan plan_sweep(const SweepFile& file, const std::vector<std::string>& extra_sets) {
  SweepPlan plan;
  plan.file = file;
  plan.file.sets.insert(plan.file.sets.end(), extra_sets.begin(), extra_sets.end());
  plan.base_hash = fnv1a64(file.base_yaml);
  // The base seed is the base scenario's after the sweep-wide overrides.
  try {
    plan.base_seed = parse_scenario(file.base_yaml, file.base_source, plan.file.sets).seed;
  } catch (const InputError& e) {
    throw InputError(file.path + ": base: " + e.what());
  }

  // A variant and an axis setting one key: the axis would win silently (its override comes later) and the
  // row would carry the variant's name without its value.
  const auto key_of = [](const std::string& set) { return set.substr(0, set.find('=')); };
  const auto overlap = [](const std::string& a, const std::string& b) {
    return a == b || a.starts_with(b + ".") || b.starts_with(a + ".");
  };
  for (const SweepVariant& v : file.variants)
    for (const std::string& set : v.sets) {
      // Each point's seed override comes last: a variant's seed would be dropped without a word.
      if (key_of(set) == "seed")
        throw InputError(file.path + ": variants." + v.name +
                         ": sets seed, which every point's own seed replaces; set the base seed under set:, or "
                         "repeat points with seeds:");
      for (const SweepAxis& a : file.axes)
        if (overlap(key_of(set), a.key))
          throw InputError(file.path + ": variants." + v.name + ": sets " + key_of(set) + ", which the axis " + a.key +
                           " also sets; set it in one place");
    }
  // Two axes, one inside the other (cluster.router and cluster.router.policy): the later replaces the
  // earlier's value in every point while the table still shows both.
  for (size_t i = 0; i < file.axes.size(); ++i)
    for (size_t j = i + 1; j < file.axes.size(); ++j)
      if (overlap(file.axes[i].key, file.axes[j].key))
        throw InputError(file.path + ": axes." + file.axes[j].key + ": overlaps the axis " + file.axes[i].key +
                         " (one sets a key inside the other); sweep them in one axis");
  // A sweep file's set: on a key an axis sets would lose to it in every point (a variant may override set:
  // for its own points: that is what variants are for).
  for (const std::string& set : file.sets) {
    // The same key or one inside the axis's; a parent the axis then changes a field of is fine.
    for (const SweepAxis& a : file.axes)
      if (key_of(set) == a.key || key_of(set).starts_with(a.key + "."))
        throw InputError(file.path + ": set: " + key_of(set) + ": the axis " + a.key +
                         " sets it in every point; drop one of them");
  }
  // A point writes its files into the sweep folder: output.* keys would be dropped without a word.
  const auto refuse_output = [&](const std::string& key, const std::string& where) {
    if (key == "output" || key.starts_with("output."))
      throw InputError(where + key +
                       ": output keys do not apply to sweep points (each point's summary goes into the sweep folder, " +
                       "points/p<index>.json)");
  };
  for (const std::string& set : file.sets) refuse_output(key_of(set), file.path + ": set: ");
  for (const std::string& set : extra_sets) refuse_output(key_of(set), "--set ");
  for (const SweepAxis& a : file.axes) refuse_output(a.key, file.path + ": axes.");
  for (const SweepVariant& v : file.variants)
    for (const std::string& vs : v.sets) refuse_output(key_of(vs), file.path + ": variants." + v.name + ": ");
  // Bounded before the points are built (each is parsed and checked): 4 axes of 100 values ran out of memory.
  {
    double count = std::max<size_t>(1, file.variants.size()) * std::max(1, file.seeds);
    if (file.combine == SweepCombine::kZip)
      count *= file.axes.empty() ? 1 : file.axes.front().values.size();
    else
      for (const SweepAxis& a : file.axes) count *= static_cast<double>(a.values.size());
    if (count > kMaxSweepPoints)
      throw InputError(file.path + ": axes, variants and seeds make " + json_number(count) + " points; at most " +
                       json_number(kMaxSweepPoints) + " (split the sweep)");
  }
  // A command-line --set on a key an axis or a variant sets would lose to it (their overrides come later).
  for (const std::string& set : extra_sets) {
    for (const SweepAxis& a : file.axes)
      if (overlap(key_of(set), a.key))
        throw InputError("--set " + key_of(set) + ": the axis " + a.key + " of " + file.path +
                         " sets it in every point; change the axis instead");
    for (const SweepVariant& v : file.variants)
      for (const std::string& vs : v.sets)
        if (overlap(key_of(set), key_of(vs)))
          throw InputError("--set " + key_of(set) + ": the variant " + v.name + " of " + file.path + " sets " +
                           key_of(vs) + "; change the variant instead");
  }

  if (!file.variants.empty()) plan.columns.push_back("variant");
  for (const SweepAxis& a : file.axes) plan.columns.push_back(a.key);
  if (file.seeds > 0) plan.columns.push_back("repeat");

  std::vector<std::vector<Assignment>> variant_rows{{}};
  if (!file.variants.empty()) {
    variant_rows.clear();
    for (const SweepVariant& v : file.variants) variant_rows.push_back({Assignment{"variant", v.name, v.sets}});
  }
  const auto rows = axis_rows(file);
  const int repeats = std::max(1, file.seeds);
  for (const auto& vrow : variant_rows)
    for (const auto& arow : rows)
      for (int r = 0; r < repeats; ++r) {
        std::vector<Assignment> row = vrow;
        row.insert(row.end(), arow.begin(), arow.end());
        if (file.seeds > 0) row.push_back(Assignment{"repeat", std::to_string(r), {}});
        SweepPoint p;
        p.index = static_cast<int>(plan.points.size());
        p.key = point_key(row);
        p.seed = sweep_point_seed(plan.base_seed, file.seed_key == SweepSeedKey::kRepeat
                                                      ? "repeat=" + std::to_string(file.seeds > 0 ? r : 0)
                                                      : p.key);
        p.overrides = plan.file.sets;
        for (const Assignment& a : row) {
          p.values.push_back(a.display);
          p.overrides.insert(p.overrides.end(), a.sets.begin(), a.sets.end());
        }
        p.overrides.push_back("seed=" + std::to_string(p.seed));
        plan.points.push_back(std::move(p));
      }

  for (const SweepPoint& p : plan.points) point_scenario(plan, p);
  return plan;
}

Scenario point_scenario(const SweepPlan& plan, const SweepPoint& point) {
  Scenario s;
  try {
    s = parse_scenario(plan.file.base_yaml, plan.file.base_source, point.overrides);
  } catch (const InputError& e) {
    throw InputError(plan.file.path + ": point " + std::to_string(point.index) + " (" +
                     (point.key.empty() ? "base" : point.key) + "): " + e.what());
  }
  s.output = {};
  return s;
}

}  // namespace kvsim
