#pragma once
// The composition root of one run: scenario -> model, GPU, engine config, latency model, workload,
// engine instance, collector; runs it and returns the collector and summary. Used by `run`,
// `bench` and tests, so two simulations can run side by side in one process.
#include <functional>
#include <memory>
#include <string>

#include "sim/engine/engine_config.h"
#include "sim/metrics/run_collector.h"
#include "sim/metrics/summary.h"
#include "sim/model/hardware.h"
#include "sim/model/model_spec.h"
#include "sim/scenario/scenario.h"

namespace kvsim {

struct SimulationResult {
  Scenario scenario;
  ModelSpec model;
  EngineConfig engine;
  std::unique_ptr<RunCollector> collector;
  RunSummary summary;
  uint64_t events = 0;
  uint64_t fingerprint = 0;
  double wall_s = 0;
  int64_t skipped_lines = 0;
};

// Resolves the engine configuration for a scenario: block size (hybrid rule), memory rule or
// num_gpu_blocks, scheduler defaults by GPU as `vllm serve` picks them. Throws InputError when the
// model does not fit on the GPU.
EngineConfig resolve_engine_config(const Scenario& s, const ModelSpec& model);
// The same for a GPU already looked up in the scenario's hardware catalog.
EngineConfig resolve_engine_config(const Scenario& s, const ModelSpec& model, const GpuSpec& gpu);

// The calibrated latency model's table folder for a hardware catalog folder: its sibling "latency"
// (models/hardware -> models/latency).
std::string latency_tables_dir(const std::string& hardware_dir);

// Runs the scenario to the end. `progress(done_requests, sim_seconds)` is called as requests finish.
SimulationResult run_simulation(const Scenario& s, std::function<void(int64_t, double)> progress = {});

}  // namespace kvsim
