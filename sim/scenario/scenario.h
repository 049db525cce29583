#pragma once
// A scenario: one experiment as a YAML file, turned into validated plain structs. Every key is
// documented in scenarios/README.md; unknown keys, wrong types and wrong units are InputErrors that
// name the file and the key path ("scenarios/a.yaml: engine.block_size: must be > 0 (got 0)").
// `--set key.path=value` overrides are applied to the YAML tree before validation.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/cluster/disagg_settings.h"
#include "sim/cluster/router_settings.h"
#include "sim/engine/engine_settings.h"
#include "sim/metrics/hdf5_writer.h"
#include "sim/workload/workload_config.h"

namespace kvsim {

struct OutputSettings {
  std::optional<std::string> hdf5;                        // run file path
  std::optional<std::string> summary_json;                // summary path
  StepsOutput steps;                                      // which step records reach /steps: all | none | every N
  double timeseries_interval_s = 0;                       // 0: a /timeseries sample at every step end
  int compression = RunFileOptions::kDefaultCompression;  // deflate level of the run file, 0..9
};

// One pool of identical engine instances (cluster.pools[i]).
struct PoolSettings {
  std::string name;
  std::string role = "colocated";  // colocated | prefill | decode (the last two: disaggregation)
  int instances = 1;
  // Topology GPU names of its instances' ranks, instance by instance (instances x TP entries); empty:
  // packed node by node (cluster.topology).
  std::vector<std::string> placement;
  std::string gpu;        // hardware catalog key; default: the scenario's gpu
  EngineSettings engine;  // the top-level engine section with this pool's `engine:` overrides applied
  std::string key;        // "cluster.pools[0]": names the pool in errors
};

// cluster: pools of engine instances behind one router. A scenario without the section is one
// colocated pool of one instance ("default") on the top-level gpu and engine.
struct ClusterSettings {
  bool present = false;  // the scenario has a cluster: section (the summary then has one block per pool)
  std::vector<PoolSettings> pools;
  RouterSettings router;
  // The topology file (cluster.topology: a name in <hardware_dir>/../topologies, or a path); "" = none.
  std::string topology;
  bool disaggregated = false;  // prefill and decode pools
  DisaggSettings disaggregation;
};

struct Scenario {
  std::string path;           // the YAML file
  std::string resolved_yaml;  // the tree after overrides, as stored in /meta
  std::string name;
  std::string model;  // config.json path
  std::string gpu;    // hardware catalog key
  std::string hardware_dir = "models/hardware";
  uint64_t seed = 1;
  EngineSettings engine;
  ClusterSettings cluster;  // always holds at least one pool after loading
  WorkloadConfig workload;
  OutputSettings output;
};

// Loads, applies overrides ("engine.block_size=528", "workload.trace.limit=100"), validates.
// Input paths (model, hardware_dir, workload.trace.path) that are relative resolve against the
// scenario file's folder, then each of its parent folders in turn (so the bundled scenarios' repo-
// relative paths such as models/qwen3-8b.json work from any directory), then the current directory:
// the first candidate that exists is used; none existing leaves the path as written (the current
// directory's), so the reader's error names it. Output paths stay relative to the current directory.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
// Same from YAML text; `source` names it in errors and, when it is an existing file, anchors the
// relative input paths as above.
Scenario parse_scenario(const std::string& yaml_text, const std::string& source,
                        const std::vector<std::string>& overrides = {});

}  // namespace kvsim
