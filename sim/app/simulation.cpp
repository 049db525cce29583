#include "sim/app/simulation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include "sim/app/parallel_plan.h"
#include "sim/app/startup_check.h"
#include "sim/cluster/cluster.h"
#include "sim/core/check.h"
#include "sim/core/errors.h"
#include "sim/core/sim_context.h"
#include "sim/core/units.h"
#include "sim/engine/engine_instance.h"
#include "sim/engine/engine_resolution.h"
#include "sim/metrics/hdf5_writer.h"
#include "sim/metrics/text_streams.h"
#include "sim/model/config_reader.h"
#include "sim/model/sizing.h"
#include "sim/net/flow_network.h"
#include "sim/net/topology.h"
#include "sim/perf/latency_factory.h"
#include "sim/perf/latency_tables.h"
#include "sim/scenario/hardware_catalog.h"
#include "sim/scenario/topology_file.h"
#include "sim/tier/offload_resolution.h"
#include "sim/tier/tier_links.h"
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

// cluster.topology: a name in <hardware_dir>/../topologies, or a path to a YAML file.
std::string topology_file(const Scenario& s) {
  const std::string& t = s.cluster.topology;
  std::filesystem::path dir = std::filesystem::path(s.hardware_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  const std::string bundled = (dir.parent_path() / "topologies").string();
  if (t.find('/') != std::string::npos || t.ends_with(".yaml")) {
    if (std::filesystem::exists(t)) return t;
    // "hgx-h100-1node.yaml": a bundled topology's file name.
    const std::string named = bundled + "/" + t;
    if (t.find('/') == std::string::npos && std::filesystem::exists(named)) return named;
    throw InputError(s.path + ": cluster.topology: " + t + " does not exist (relative paths resolve against the " +
                     "scenario's folder, its parents, then the current directory)");
  }
  const std::string path = topology_path(t, bundled);
  if (!std::filesystem::exists(path))
    throw InputError(s.path + ": cluster.topology: no topology '" + t + "' (" + path + " does not exist)");
  return path;
}

// The first tp free GPUs (in GPU order) of the first domain, by its lowest free GPU, that has tp free; none
// if no domain has.
std::vector<int> free_gpus_in_one_domain(const Topology& topo, const std::vector<uint8_t>& used, int tp) {
  std::map<int, std::vector<int>> free_by_domain;
  std::vector<int> order;  // domains by their lowest free GPU
  for (int g = 0; g < topo.num_gpus(); ++g) {
    if (used[static_cast<size_t>(g)] != 0) continue;
    auto [it, fresh] = free_by_domain.try_emplace(topo.gpu_domain(g));
    if (fresh) order.push_back(it->first);
    it->second.push_back(g);
  }
  for (int d : order) {
    std::vector<int>& free = free_by_domain[d];
    if (std::ssize(free) < tp) continue;
    free.resize(static_cast<size_t>(tp));
    return free;
  }
  return {};
}

// The topology GPU of each rank of each instance (instance ids in pool order): explicit placement, or
// packed in the topology's GPU order, an instance's ranks always in one NVLink domain (a node, or a
// rack-scale NVLink fabric such as GB200 NVL72's).
std::vector<std::vector<int>> place_pools(const Scenario& s, const Topology& topo, const HardwareCatalog& hw) {
  std::vector<std::vector<int>> out;
  std::vector<uint8_t> used(static_cast<size_t>(topo.num_gpus()), 0);
  auto take = [&](int g, const std::string& key) {
    if (used[static_cast<size_t>(g)] != 0)
      throw InputError(s.path + ": " + key + ": GPU " + topo.gpu_name(g) + " is already taken by another instance");
    used[static_cast<size_t>(g)] = 1;
  };
  int next = 0;  // packing cursor
  for (const PoolSettings& p : s.cluster.pools) {
    const int tp = p.engine.tensor_parallel_size;
    // TP beyond the NVLink domain is priced from the links (gpus_per_node, inter_node_link), not placed.
    const int domain = nvlink_domain(p.engine, lookup_gpu(hw, p.gpu, s.path + ": " + p.key + ".gpu"));
    if (p.engine.pipeline_parallel_size > 1 || tp > domain)
      throw InputError(s.path + ": " + p.key +
                       ".engine: pipeline_parallel_size > 1 and TP across NVLink domains are priced from the links "
                       "(gpus_per_node, inter_node_link), not placed on cluster.topology; drop one of them");
    for (int k = 0; k < p.instances; ++k) {
      std::vector<int> gpus;
      if (!p.placement.empty()) {
        for (int r = 0; r < tp; ++r) {
          const size_t j = static_cast<size_t>(k * tp + r);
          const std::string key = p.key + ".placement[" + std::to_string(j) + "]";
          const auto g = topo.find_gpu(p.placement[j]);
          if (!g)
            throw InputError(s.path + ": " + key + ": topology '" + topo.name() + "' has no GPU " +
                             quote_for_message(p.placement[j]) + " (it has " + topo.gpu_name(0) + " ... " +
                             topo.gpu_name(topo.num_gpus() - 1) + ")");
          take(*g, key);
          gpus.push_back(*g);
        }
        for (int g : gpus)
          if (topo.gpu_domain(g) != topo.gpu_domain(gpus.front()))
            throw InputError(s.path + ": " + p.key + ".placement: instance " + std::to_string(k) + " spans " +
                             topo.gpu_name(gpus.front()) + " and " + topo.gpu_name(g) +
                             ", which no NVLink joins; kvsim places tensor parallelism inside one NVLink domain");
      } else {
        // The next run of tp free GPUs in one NVLink domain.
        while (next < topo.num_gpus()) {
          bool fits = next + tp <= topo.num_gpus();
          for (int r = 0; fits && r < tp; ++r)
            fits = used[static_cast<size_t>(next + r)] == 0 && topo.gpu_domain(next + r) == topo.gpu_domain(next);
          if (fits) break;
          ++next;
        }
        if (next < topo.num_gpus()) {
          for (int r = 0; r < tp; ++r) {
            take(next + r, p.key);
            gpus.push_back(next + r);
          }
          next += tp;
        } else {
          // No such run (a domain whose GPUs are not adjacent in the topology's order, or holes left
          // behind the cursor): the first domain, in GPU order, with tp free GPUs anywhere in it.
          gpus = free_gpus_in_one_domain(topo, used, tp);
          if (gpus.empty())
            throw InputError(s.path + ": " + p.key + ": topology '" + topo.name() + "' has no room for instance " +
                             std::to_string(k) + " (" + std::to_string(topo.num_gpus()) +
                             " GPUs; every instance needs TP " + std::to_string(tp) +
                             " free GPUs in one NVLink domain)");
          for (int g : gpus) take(g, p.key);
        }
      }
      out.push_back(std::move(gpus));
    }
  }
  return out;
}

}  // namespace

EngineConfig resolve_engine_config(const Scenario& s, const ModelSpec& model) {
  const HardwareCatalog hw = load_hardware_catalog(s.hardware_dir);
  const PoolSettings& p = s.cluster.pools.front();
  const ResolveContext where = pool_context(s, p);
  EngineConfig cfg =
      resolve_engine_config(p.engine, model, lookup_gpu(hw, p.gpu, s.path + ": " + where.gpu_key), where);
  cfg.kv_offload =
      resolve_kv_offload(p.engine.kv_offload, cfg.layout, p.engine.tensor_parallel_size,
                         p.engine.pipeline_parallel_size, cfg.enable_prefix_caching, hw, s.path, where.engine_key);
  return cfg;
}

namespace {

// One pool's engine on its GPU, with the checks a run makes before it simulates anything (the
// offload chunk, vLLM's start-up refusal, SGLang's scheduler in a P/D cluster).
EngineConfig resolve_pool(const Scenario& s, const PoolSettings& p, const ModelSpec& model, const HardwareCatalog& hw) {
  const ResolveContext where = pool_context(s, p);
  const GpuSpec& gpu = lookup_gpu(hw, p.gpu, s.path + ": " + where.gpu_key);
  EngineConfig cfg = resolve_engine_config(p.engine, model, gpu, where);
  cfg.kv_offload =
      resolve_kv_offload(p.engine.kv_offload, cfg.layout, p.engine.tensor_parallel_size,
                         p.engine.pipeline_parallel_size, cfg.enable_prefix_caching, hw, s.path, where.engine_key);
  if (cfg.kv_offload.enabled && cfg.kv_offload.chunk_tokens > cfg.max_model_len)
    throw InputError(s.path + ": " + where.engine_key + ".kv_offload.chunk_tokens: " +
                     std::to_string(cfg.kv_offload.chunk_tokens) + " tokens is longer than max_model_len " +
                     std::to_string(cfg.max_model_len) + ": no chunk could ever fill, so nothing would be stored");
  check_engine_startup(cfg, p.engine, where);
  if (s.cluster.disaggregated && cfg.step_policy == StepPolicy::kSglang)
    throw InputError(s.path + ": " + where.engine_key +
                     ".scheduler: SGLang's scheduler is not modelled in a disaggregated cluster (set scheduler: "
                     "vllm; the P/D flow follows vLLM's NIXL connector)");
  return cfg;
}

}  // namespace

void check_scenario(const Scenario& s, CheckCache* cache) {
  if (!cache) {
    CheckCache once;
    return check_scenario(s, &once);
  }
  auto model = cache->models.find(s.model);
  if (model == cache->models.end()) model = cache->models.emplace(s.model, read_model_config(s.model)).first;
  auto hw = cache->catalogs.find(s.hardware_dir);
  if (hw == cache->catalogs.end())
    hw = cache->catalogs.emplace(s.hardware_dir, load_hardware_catalog(s.hardware_dir)).first;
  for (const PoolSettings& p : s.cluster.pools) resolve_pool(s, p, model->second, hw->second);
}

std::string latency_tables_dir(const std::string& hardware_dir) {
  std::filesystem::path p = std::filesystem::path(hardware_dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "models/hardware/"
  return (p.parent_path() / "latency").string();
}

namespace {

// The latency model pool p's instances share (resolved engine cfg on gpu).
std::unique_ptr<ILatencyModel> pool_latency_model(const Scenario& s, const PoolSettings& p, const ModelSpec& model,
                                                  const EngineConfig& cfg, const GpuSpec& gpu,
                                                  const HardwareCatalog& hw) {
  const ResolveContext where = pool_context(s, p);
  LatencyModelSpec lm;
  lm.name = p.engine.latency_model;
  lm.tp = p.engine.tensor_parallel_size;
  const std::optional<DType> forced = weight_override(
      model, resolve_weight_dtype(p.engine.weight_dtype, s.path + ": " + where.engine_key + ".weight_dtype"));
  lm.weight_dtype = served_weight_dtype(model, forced);
  if (!forced) {  // as quantization_config stores them
    lm.weight_bits = checkpoint_weight_bits(model);
    lm.dense_weights_16bit = checkpoint_dense_weights_16bit(model);
  }
  lm.fp8_block_scaled = fp8_block_scaled(p.engine.weight_dtype);
  lm.mla_module_rows = p.engine.mla_attention == "module_rows";
  lm.dsa_module_rows = p.engine.mla_attention != "roofline";
  lm.moe_routing =
      resolve_moe_routing(p.engine.moe_routing, model.architecture, s.path + ": " + where.engine_key + ".moe_routing");
  lm.kv_dtype = resolve_kv_dtype(model, p.engine.kv_cache_dtype, s.path + ": " + where.engine_key + ".kv_cache_dtype");
  lm.tables_dir = latency_tables_dir(s.hardware_dir);  // <hardware_dir>/../latency (models/latency)
  lm.engine_kind = p.engine.kind;
  lm.engine_version = p.engine.version;
  lm.block_size = cfg.layout.block_size;
  lm.default_block_size = cfg.default_block_size;
  lm.block_cost = p.engine.paged_block_cost;
  lm.max_num_seqs = cfg.max_num_seqs;
  lm.max_num_batched_tokens = cfg.max_num_batched_tokens;
  lm.parallel = resolve_parallel_plan(p.engine, gpu, hw, s.path + ": " + where.engine_key);
  return make_latency_model(lm, model, gpu, s.path + ": " + where.engine_key + ".latency_model");
}

}  // namespace

PoolModel build_pool_model(const Scenario& s, size_t pool) {
  KVSIM_CHECK(pool < s.cluster.pools.size(), "build_pool_model: no such pool");
  PoolModel m;
  m.model = read_model_config(s.model);
  const HardwareCatalog hw = load_hardware_catalog(s.hardware_dir);
  const PoolSettings& p = s.cluster.pools[pool];
  const GpuSpec& gpu = lookup_gpu(hw, p.gpu, s.path + ": " + pool_context(s, p).gpu_key);
  m.gpu = gpu.name;
  m.engine = resolve_pool(s, p, m.model, hw);
  m.latency = pool_latency_model(s, p, m.model, m.engine, gpu, hw);
  return m;
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
    EngineConfig cfg = resolve_pool(s, p, res.model, hw);
    latency.push_back(pool_latency_model(s, p, res.model, cfg, gpu, hw));
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
  // The offload outputs (summary per tier, /requests and /timeseries tier columns) are laid out by the
  // first pool's tiers: pools whose tier lists differ are refused rather than summed under wrong names.
  const auto tier_names = [](const KvOffloadConfig& o) {
    std::string t = o.enabled ? o.tier : "(none)";
    for (const KvOffloadLowerTier& l : o.lower) t += ", " + l.tier;
    return t;
  };
  for (size_t i = 1; i < res.pools.size(); ++i) {
    const std::string a = tier_names(res.pools.front().engine.kv_offload),
                      b = tier_names(res.pools[i].engine.kv_offload);
    if (a != b)
      throw InputError(s.path + ": cluster.pools[" + std::to_string(i) + "].engine.kv_offload: tiers [" + b +
                       "] differ from the first pool's [" + a +
                       "]; every pool must use the same tiers (the outputs are per tier) or none");
  }

  std::unique_ptr<RunFileStream> file;
  CollectorOptions co;
  co.keep_records = options.keep_records;
  co.steps = s.output.steps;
  co.timeseries_interval_s = s.output.timeseries_interval_s;
  co.exact_request_samples = options.exact_request_samples;
  co.exact_itl_samples = options.exact_itl_samples;
  co.chunk_rows = options.chunk_rows;
  const KvOffloadConfig& off0 = res.pools.front().engine.kv_offload;
  if (off0.enabled) co.offload_tiers = 1 + static_cast<int>(off0.lower.size());
  if (!options.hdf5_path.empty()) {
    RunFileOptions fo;
    fo.compression = s.output.compression;
    for (const PoolRun& p : res.pools)
      for (int k = 0; k < p.info.instances; ++k) fo.usable_blocks.push_back(p.info.usable_blocks);
    fo.kv_offload = off0.enabled;
    fo.offload_tiers = std::max(co.offload_tiers, 1);
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
  // Topology, placement and, for prefill and decode pools, the network their pulls cross.
  std::unique_ptr<Topology> topology;
  std::unique_ptr<FlowNetwork> network;
  DisaggregationSetup disagg;
  if (!s.cluster.topology.empty()) {
    topology = std::make_unique<Topology>(Topology::build(load_topology_file(topology_file(s)), hw));
    disagg.instance_gpus = place_pools(s, *topology, hw);
  }
  // Offload copies cross the topology too (sim/tier/tier_links.h), sharing its links with the P/D pulls.
  const bool offload_on_topology = topology && std::any_of(configs.begin(), configs.end(),
                                                           [](const EngineConfig& c) { return c.kv_offload.enabled; });
  if (s.cluster.disaggregated || offload_on_topology) {
    FlowOptions fo;
    if (s.cluster.disaggregated) {
      fo.per_flow_cap = s.cluster.disaggregation.per_flow_cap;
      fo.per_descriptor = duration_from_seconds(s.cluster.disaggregation.per_descriptor_s);
    }
    network = std::make_unique<FlowNetwork>(ctx, *topology, fo);
  }
  if (offload_on_topology) {
    for (size_t i = 0; i < engines.size(); ++i) {
      KvOffload* o = engines[i]->offload();
      if (o == nullptr) continue;
      const std::string key =
          s.path + ": " + s.cluster.pools[static_cast<size_t>(configs[i].pool)].key + ".engine.kv_offload";
      o->set_links(std::make_unique<TierLinks>(*network, disagg.instance_gpus[i], configs[i].kv_offload, key));
    }
  }
  if (s.cluster.disaggregated) {
    disagg.settings = s.cluster.disaggregation;
    disagg.network = network.get();
    for (const PoolSettings& p : s.cluster.pools) disagg.pool_roles.push_back(p.role);
    for (size_t pi = 0; pi < s.cluster.pools.size(); ++pi) {
      const PoolSettings& pp = s.cluster.pools[pi];
      if (pp.role != "prefill") continue;
      for (size_t di = 0; di < s.cluster.pools.size(); ++di) {
        const PoolSettings& dp = s.cluster.pools[di];
        if (dp.role != "decode") continue;
        TransferSides sides;
        sides.prefill_tp = pp.engine.tensor_parallel_size;
        sides.decode_tp = dp.engine.tensor_parallel_size;
        sides.prefill_block_size = res.pools[pi].engine.layout.block_size;
        sides.decode_block_size = res.pools[di].engine.layout.block_size;
        sides.prefill_kv = resolve_kv_dtype(res.model, pp.engine.kv_cache_dtype, s.path + ": " + pp.key + ".engine");
        sides.decode_kv = resolve_kv_dtype(res.model, dp.engine.kv_cache_dtype, s.path + ": " + dp.key + ".engine");
        sides.hybrid_hetero_tp = disagg.settings.hybrid_hetero_tp;
        // Every prefill rank must reach the decode ranks it may be read by.
        for (int pk = 0; pk < pp.instances; ++pk)
          for (int dk = 0; dk < dp.instances; ++dk) {
            const int pi_id = res.pools[pi].info.first_instance + pk, di_id = res.pools[di].info.first_instance + dk;
            for (int src : disagg.instance_gpus[static_cast<size_t>(pi_id)])
              for (int dst : disagg.instance_gpus[static_cast<size_t>(di_id)])
                if (topology->hops(src, dst) < 0)
                  throw InputError(s.path + ": cluster.topology: no path in '" + topology->name() + "' from " +
                                   topology->gpu_name(src) + " (pool " + pp.name + ") to " + topology->gpu_name(dst) +
                                   " (pool " + dp.name + ")");
          }
        try {
          disagg.transfer.emplace(
              std::make_pair(static_cast<int>(pi), static_cast<int>(di)),
              KvTransferModel(res.model, resolve_state_dtypes(res.model, dp.engine.state_dtype), sides));
        } catch (const InputError& e) {
          throw InputError(s.path + ": cluster.pools: " + pp.name + " -> " + dp.name + ": " + e.what());
        }
      }
    }
  }
  Cluster cluster(ctx, *source, instances, s.cluster.router);
  if (s.cluster.disaggregated) cluster.set_disaggregation(&disagg);
  cluster.set_arrival_sink(res.collector.get());
  if (options.progress) cluster.set_progress([&](int64_t done, SimTime now) { options.progress(done, now.seconds()); });
  if (options.stop) cluster.set_stop(options.stop);
  const ServingResult sr = [&] {
    try {
      return cluster.run();
    } catch (const InputError& e) {
      // A generator's key found wanting only as it runs (arrival times past the clock) names the file too.
      if (std::string_view(e.what()).starts_with("workload.")) throw InputError(s.path + ": " + e.what());
      throw;
    }
  }();
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
  info.skipped_trace_lines = res.skipped_lines;
  for (const PoolRun& p : res.pools) {
    info.kv_blocks_total += p.engine.layout.num_blocks * p.info.instances;
    if (s.cluster.present) info.pools.push_back(p.info);
  }
  info.router = s.cluster.present ? s.cluster.router.policy : "";
  if (network) {
    info.disaggregated = s.cluster.disaggregated;
    for (int l = 0; l < topology->num_links(); ++l) {
      const Topology::LinkInfo& li = topology->link(l);
      LinkTotal t;
      t.id = l;
      t.name = li.name;
      t.type = li.type;
      t.capacity = li.capacity;
      t.bytes = network->link_bytes(l);
      t.peak_utilisation = network->link_peak_rate(l) / li.capacity;  // exact; samples can miss a short pull
      info.links.push_back(std::move(t));
    }
  }
  const KvOffloadConfig& off = res.pools.front().engine.kv_offload;
  if (off.enabled) {
    info.kv_offload = true;
    info.offload_tier = off.tier;
    info.offload_size_bytes = off.size_bytes;
    info.offload_policy = off.cost_policy ? "cost" : "vllm";
    info.offload_backend = off.lmcache ? "lmcache" : "native";
    // Per tier, summed over the instances that run with the first pool's tiers.
    for (int t = 0; t <= static_cast<int>(off.lower.size()); ++t) {
      KvOffloadTier kt;
      kt.name = t == 0 ? off.tier : off.lower[static_cast<size_t>(t - 1)].tier;
      kt.size_bytes = t == 0 ? off.size_bytes : off.lower[static_cast<size_t>(t - 1)].size_bytes;
      for (const auto& e : engines) {
        const KvOffload* o = e->offload();
        if (o == nullptr || o->num_tiers() <= t) continue;
        const TierTotals& tt = o->totals(t);
        kt.stored_bytes += tt.stored_bytes;
        kt.loaded_bytes += tt.loaded_bytes;
        kt.stores_skipped_chunks += tt.stores_skipped_chunks;
        kt.peak_used_bytes = std::max(kt.peak_used_bytes, tt.peak_used_bytes);
      }
      info.offload_tiers.push_back(kt);
    }
  }
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
