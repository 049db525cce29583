#pragma once
// The composition root of one run: scenario -> model, workload, collector and a cluster of pools (each
// pool: GPU, engine config, latency model, engine instances) behind a router; runs it and returns the collector and
// summary. Used by `run`, `bench` and tests, so two simulations can run side by side in one process.
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "sim/engine/engine_config.h"
#include "sim/metrics/hdf5_writer.h"
#include "sim/metrics/run_collector.h"
#include "sim/metrics/summary.h"
#include "sim/model/hardware.h"
#include "sim/model/model_spec.h"
#include "sim/perf/i_latency_model.h"
#include "sim/scenario/scenario.h"

namespace kvsim {

// One pool as resolved for the run: what the summary reports of it (name, role, GPU, TP, instance range,
// usable blocks) and its resolved engine (instance / pool ids of its first instance).
struct PoolRun {
  PoolInfo info;
  EngineConfig engine;
};

struct SimulationResult {
  Scenario scenario;
  ModelSpec model;
  EngineConfig engine;  // the first pool's (the only one without a cluster: section)
  std::vector<PoolRun> pools;
  std::unique_ptr<RunCollector> collector;
  RunSummary summary;
  uint64_t events = 0;
  uint64_t fingerprint = 0;
  double wall_s = 0;
  int64_t skipped_lines = 0;
  bool interrupted = false;  // stopped by RunOptions::stop before the end
  double sim_time_s = 0;     // simulated time reached
};

struct RunOptions {
  // Keep every request row, step and sample in memory (tests and tools that read them back). kvsim
  // run streams them to the run file instead, so memory does not grow with the run.
  bool keep_records = true;
  std::function<void(int64_t, double)> progress;  // (requests done, simulated seconds)
  std::function<bool()> stop;                     // checked before every event; true stops the run
  // The run file, opened before the run (a path that cannot be written fails at once) and filled as it
  // goes; /meta/complete = false when the run was stopped. Empty: no file.
  std::string hdf5_path;
  // The summary JSON, written with the run file as a pair: both are complete in temporaries first,
  // the old summary is removed, then the run file and the summary are renamed, so a summary never
  // sits beside a run file of another run. Empty: none.
  std::string summary_json_path;
  // Per-request CSV and Chrome / Perfetto trace (sim/metrics/text_streams.h), streamed too. Empty: none.
  std::string csv_path;
  std::string trace_path;
  // Collector limits (tests force the sketch or small chunks): exact quantiles up to this many samples.
  int64_t exact_request_samples = CollectorOptions{}.exact_request_samples;
  int64_t exact_itl_samples = CollectorOptions{}.exact_itl_samples;
  size_t chunk_rows = CollectorOptions{}.chunk_rows;
};

// Resolves the engine configuration of the scenario's first pool (the top-level engine and gpu without a
// cluster: section) with resolve_engine_config (sim/engine/engine_resolution.h). Throws InputError when
// the model does not fit on the GPU.
EngineConfig resolve_engine_config(const Scenario& s, const ModelSpec& model);

// What a run checks before it simulates: the model config, every pool's GPU in the catalog, its engine
// resolved on it (the model fits, the settings hold) and its start-up checks. Throws InputError naming
// the file and key. `kvsim sweep` runs it on every point before any point runs, with a cache that parses
// each model config and hardware catalog once (re-parsing the catalog's YAML cost 3.3 ms a point).
struct CheckCache {
  std::map<std::string, ModelSpec> models;          // by model path
  std::map<std::string, HardwareCatalog> catalogs;  // by hardware_dir
};
void check_scenario(const Scenario& s, CheckCache* cache = nullptr);

// The calibrated latency model's table folder for a hardware catalog folder: its sibling "latency"
// (models/hardware -> models/latency).
std::string latency_tables_dir(const std::string& hardware_dir);

// One pool's resolved engine and the latency model its instances run with, built as run_simulation builds
// them (`kvsim step` prices single steps with it). Throws InputError where a run would.
struct PoolModel {
  ModelSpec model;
  EngineConfig engine;
  std::string gpu;
  std::unique_ptr<ILatencyModel> latency;
};
PoolModel build_pool_model(const Scenario& s, size_t pool);

// Runs the scenario to the end. `progress(done_requests, sim_seconds)` is called as requests finish.
SimulationResult run_simulation(const Scenario& s, std::function<void(int64_t, double)> progress = {});
// The same with streaming outputs, an optional run file and a stop check.
SimulationResult run_simulation(const Scenario& s, const RunOptions& options);
// The run file's /meta of a result: resolved scenario, seed, events, fingerprint, complete, time reached.
RunMeta run_meta(const SimulationResult& r);

}  // namespace kvsim
