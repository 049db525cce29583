#include "sim/app/simulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "sim/app/startup_check.h"
#include "sim/cluster/cluster.h"
#include "sim/core/errors.h"
#include "sim/core/sim_context.h"
#include "sim/core/units.h"
#include "sim/engine/engine_instance.h"
#include "sim/engine/engine_resolution.h"
#include "sim/metrics/hdf5_writer.h"
#include "sim/metrics/text_streams.h"
#include "sim/model/config_reader.h"
#include "sim/model/sizing.h"
#include "sim/perf/latency_factory.h"
#include "sim/scenario/hardware_catalog.h"
#include "sim/workload/workload_config.h"

namespace kvsim {
namespace {

// Writes `text` to `path` (creating its directory); OutputError naming the path on failure.
void write_text_file(const std::string& path, const std::string& text) {
  make_parent_directories(path);
  std::error_code ec;
  std::ofstream f(path, std::ios::binary);
  if (!f) throw OutputError(path + ": cannot write");
  f << text;
  f.close();
  if (!f) {
    std::filesystem::remove(path, ec);
    throw OutputError(path + ": write failed");
  }
}

// Error locations of a pool: the top-level keys for a scenario without a cluster: section.
ResolveContext pool_context(const Scenario& s, const PoolSettings& p) {
  ResolveContext where;
  where.file = s.path;
  if (s.cluster.present) {
    where.engine_key = p.key + ".engine";
    where.gpu_key = p.key + ".gpu";
  }
  return where;
}

const GpuSpec& lookup_gpu(const HardwareCatalog& hw, const std::string& name, const std::string& key) {
  try {
    return hw.gpu(name);
  } catch (const InputError& e) {
    throw InputError(key + ": " + e.what());
  }
}

}  // namespace

EngineConfig resolve_engine_config(const Scenario& s, const ModelSpec& model) {
  const HardwareCatalog hw = load_hardware_catalog(s.hardware_dir);
  const PoolSettings& p = s.cluster.pools.front();
  const ResolveContext where = pool_context(s, p);
  return resolve_engine_config(p.engine, model, lookup_gpu(hw, p.gpu, s.path + ": " + where.gpu_key), where);
}

std::string latency_tables_dir(const std::string& hardware_dir) {
  std::filesystem::path p = std::filesystem::path(hardware_dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "models/hardware/"
  return (p.parent_path() / "latency").string();
}

SimulationResult run_simulation(const Scenario& s, std::function<void(int64_t, double)> progress) {
  RunOptions o;
  o.progress = std::move(progress);
  return run_simulation(s, o);
}

SimulationResult run_simulation(const Scenario& s, const RunOptions& options) {
  const auto wall0 = std::chrono::steady_clock::now();
  SimulationResult res;
  res.scenario = s;
  res.model = read_model_config(s.model);
  const HardwareCatalog hw = load_hardware_catalog(s.hardware_dir);

  SimContext ctx(s.seed);
  std::unique_ptr<IRequestSource> source = make_request_source(s.workload, ctx.rng);
  // Every pool resolves its own engine on its own GPU; its instances share one latency model.
  std::vector<std::unique_ptr<ILatencyModel>> latency;
  std::vector<EngineConfig> configs;  // one per instance, in id order
  for (size_t pi = 0; pi < s.cluster.pools.size(); ++pi) {
    const PoolSettings& p = s.cluster.pools[pi];
    const ResolveContext where = pool_context(s, p);
    const GpuSpec& gpu = lookup_gpu(hw, p.gpu, s.path + ": " + where.gpu_key);
    EngineConfig cfg = resolve_engine_config(p.engine, res.model, gpu, where);
    check_engine_startup(cfg, p.engine, where);
    LatencyModelSpec lm;
    lm.name = p.engine.latency_model;
    lm.tp = p.engine.tensor_parallel_size;
    lm.weight_dtype = served_weight_dtype(
        res.model, resolve_weight_dtype(p.engine.weight_dtype, s.path + ": " + where.engine_key + ".weight_dtype"));
    lm.kv_dtype =
        resolve_kv_dtype(res.model, p.engine.kv_cache_dtype, s.path + ": " + where.engine_key + ".kv_cache_dtype");
    lm.tables_dir = latency_tables_dir(s.hardware_dir);  // <hardware_dir>/../latency (models/latency)
    lm.engine_kind = p.engine.kind;
    lm.block_size = cfg.layout.block_size;
    lm.default_block_size = cfg.default_block_size;
    lm.block_cost = p.engine.paged_block_cost;
    latency.push_back(make_latency_model(lm, res.model, gpu, s.path + ": " + where.engine_key + ".latency_model"));
    PoolRun run;
    run.info.name = p.name;
    run.info.role = p.role;
    run.info.gpu = gpu.name;
    run.info.tensor_parallel_size = p.engine.tensor_parallel_size;
    run.info.first_instance = static_cast<int>(configs.size());
    run.info.instances = p.instances;
    run.info.usable_blocks = cfg.layout.num_blocks - 1;  // block 0 is the null block
    run.engine = cfg;
    for (int k = 0; k < p.instances; ++k) {
      cfg.instance = static_cast<int>(configs.size());
      cfg.pool = static_cast<int>(pi);
      configs.push_back(cfg);
    }
    res.pools.push_back(std::move(run));
  }
  res.engine = res.pools.front().engine;

  std::unique_ptr<RunFileStream> file;
  CollectorOptions co;
  co.keep_records = options.keep_records;
  co.steps = s.output.steps;
  co.timeseries_interval_s = s.output.timeseries_interval_s;
  co.exact_request_samples = options.exact_request_samples;
  co.exact_itl_samples = options.exact_itl_samples;
  co.chunk_rows = options.chunk_rows;
  if (!options.hdf5_path.empty()) {
    RunFileOptions fo;
    fo.compression = s.output.compression;
    for (const PoolRun& p : res.pools)
      for (int k = 0; k < p.info.instances; ++k) fo.usable_blocks.push_back(p.info.usable_blocks);
    file = std::make_unique<RunFileStream>(options.hdf5_path, fo);
  }
  std::unique_ptr<CsvRequestStream> csv;
  std::unique_ptr<TraceEventStream> trace;
  if (!options.csv_path.empty()) csv = std::make_unique<CsvRequestStream>(options.csv_path);
  if (!options.trace_path.empty()) trace = std::make_unique<TraceEventStream>(options.trace_path);
  TeeStream tee;
  if (file) tee.add(file.get());
  if (csv) tee.add(csv.get());
  if (trace) tee.add(trace.get());
  if (!tee.empty()) co.stream = &tee;
  res.collector = std::make_unique<RunCollector>(co);
  std::vector<std::unique_ptr<EngineInstance>> engines;
  std::vector<EngineInstance*> instances;
  for (const EngineConfig& c : configs) {
    engines.push_back(std::make_unique<EngineInstance>(ctx, c, *latency[static_cast<size_t>(c.pool)], *res.collector));
    instances.push_back(engines.back().get());
  }
  Cluster cluster(ctx, *source, instances, s.cluster.router);
  cluster.set_arrival_sink(res.collector.get());
  if (options.progress) cluster.set_progress([&](int64_t done, SimTime now) { options.progress(done, now.seconds()); });
  if (options.stop) cluster.set_stop(options.stop);
  const ServingResult sr = cluster.run();
  res.interrupted = sr.interrupted;
  res.sim_time_s = ctx.now().seconds();
  res.events = sr.events;
  res.fingerprint = sr.fingerprint;
  res.skipped_lines = source->skipped_lines();
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  RunInfo info;
  info.events = sr.events;
  info.wall_s = res.wall_s;
  info.fingerprint = sr.fingerprint;
  for (const PoolRun& p : res.pools) {
    info.kv_blocks_total += p.engine.layout.num_blocks * p.info.instances;
    if (s.cluster.present) info.pools.push_back(p.info);
  }
  info.router = s.cluster.present ? s.cluster.router.policy : "";
  res.collector->flush();
  res.summary = res.collector->summarize(info);
  if (file) file->finish(res.summary, run_meta(res), /*commit_now=*/false);
  if (!options.summary_json_path.empty()) {
    const std::string& json = options.summary_json_path;
    write_text_file(json + ".tmp", summary_to_json(res.summary));
    std::error_code ec;
    std::filesystem::remove(json, ec);  // never an old summary beside the new run file
    if (file) file->commit();
    std::filesystem::rename(json + ".tmp", json, ec);
    if (ec) {
      std::filesystem::remove(json + ".tmp", ec);
      throw OutputError(json + ": cannot write: rename failed");
    }
  } else if (file) {
    file->commit();
  }
  if (csv) csv->commit();
  if (trace) trace->commit();
  return res;
}

RunMeta run_meta(const SimulationResult& r) {
  RunMeta meta;
  meta.scenario_yaml = r.scenario.resolved_yaml;
  meta.seed = r.scenario.seed;
  meta.events = r.events;
  meta.fingerprint = r.fingerprint;
  meta.complete = !r.interrupted;
  meta.sim_time_s = r.sim_time_s;
  return meta;
}

}  // namespace kvsim
