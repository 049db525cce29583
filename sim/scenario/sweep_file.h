#pragma once
// A sweep file: a base scenario plus axes, read from YAML into plain structs (yaml-cpp stays in
// sim/scenario/). Point expansion, seeds and validation of every point are in sim/sweep/.
//
//   name: block-size                 # default: the file name without .yaml
//   base: ../quickstart.yaml         # a path relative to this file, or an inline scenario mapping
//   set: [workload.trace.limit=200]  # --set overrides applied to every point (optional)
//   axes:                            # scenario key path -> list of values (file order kept)
//     engine.block_size: [16, 32, 64]
//   combine: grid                    # grid (every combination, first axis slowest) | zip (i-th of each)
//   variants:                        # optional: name -> list of --set strings, an outer axis "variant"
//     fcfs: [engine.scheduling_policy=fcfs]
//   seeds: 3                         # optional: repeat every point 3 times, an inner axis "repeat"
//   seed_key: point                  # point (default: seed from the whole point key) | repeat
//
// Errors are InputErrors naming the file and key path, like the scenario reader's.
#include <optional>
#include <string>
#include <vector>

namespace kvsim {

// One value of an axis: as shown in the table, and as YAML text for the --set override.
struct SweepValue {
  std::string display;
  std::string yaml;
};

struct SweepAxis {
  std::string key;  // scenario key path, list elements by index: cluster.pools.0.instances
  std::vector<SweepValue> values;
};

struct SweepVariant {
  std::string name;
  std::vector<std::string> sets;  // "key.path=value"
};

enum class SweepCombine { kGrid, kZip };
// Which part of a point's key its seed derives from: the whole key, or only the repeat index (the
// same workload draws at every point of one repeat: common random numbers across the other axes).
enum class SweepSeedKey { kPoint, kRepeat };

struct SweepFile {
  std::string path;  // the sweep file (or the source name of parsed text)
  std::string name;
  std::string base_source;  // names the base scenario in errors: its path, or "<sweep file> (base)"
  std::string base_yaml;    // the base scenario's YAML text
  std::vector<std::string> sets;
  std::vector<SweepAxis> axes;
  SweepCombine combine = SweepCombine::kGrid;
  std::vector<SweepVariant> variants;
  int seeds = 0;  // 0: no repeat axis
  SweepSeedKey seed_key = SweepSeedKey::kPoint;
};

// Reads and checks the file's structure (not the points: see plan_sweep). A relative base path is
// resolved against the sweep file's folder.
SweepFile load_sweep_file(const std::string& path);
// Same from text; `dir` is the folder relative base paths are resolved against.
SweepFile parse_sweep_file(const std::string& yaml_text, const std::string& source, const std::string& dir);

}  // namespace kvsim
