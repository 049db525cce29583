#pragma once
// KV offload to a storage tier below GPU memory (engine.kv_offload), vLLM's native OffloadingConnector
// (vllm/distributed/kv_transfer/kv_connector/v1/offloading_connector.py, vllm/v1/kv_offload/;
// cluster-offload.md A.1, rules 19-24, 27). Two forms: the settings as a scenario states them
// (KvOffloadSettings, filled by the scenario layer) and the resolved config one engine runs with
// (KvOffloadConfig, resolve_kv_offload in offload_resolution.h). Plain data.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/time.h"

namespace kvsim {

struct KvOffloadTierSettings {
  std::string tier;  // hardware catalog key (models/hardware/tiers.yaml); '_' and '-' are the same
  int64_t size = 0;  // bytes (vLLM --kv-offloading-size, summed over the TP ranks)
};

struct KvOffloadSettings {
  std::string backend = "native";  // native (OffloadingConnector); lmcache is not modelled yet
  std::vector<KvOffloadTierSettings> tiers;
  int64_t chunk_tokens = 0;  // 0 = the engine block size; must be a multiple of it (vLLM block_size)
  bool offload_prompt_only = true;
  std::string eviction = "lru";  // lru | arc (vLLM cpu/policies/{lru,arc}.py)
  std::string policy = "vllm";   // vllm: every hit >= 1 chunk is loaded; cost: only if faster than prefill
};

// A tier below the host tier (rule 25, vLLM TieringOffloadingSpec): written through from the host tier
// when a host store completes; a host miss that hits here is promoted lower -> host -> GPU.
struct KvOffloadLowerTier {
  std::string tier;  // catalog name
  int64_t size_bytes = 0;
  int64_t capacity_chunks = 0;  // size_bytes / chunk_bytes, LRU
  double read_bandwidth = 0;    // bytes/s tier -> host, per GPU
  double write_bandwidth = 0;   // bytes/s host -> tier, per GPU
  Duration latency;             // fixed cost of each job
};

struct KvOffloadConfig {
  bool enabled = false;
  std::string tier;          // catalog name
  int64_t size_bytes = 0;    // tier size over all TP ranks
  int64_t chunk_tokens = 0;  // a multiple of the block size
  int64_t blocks_per_chunk = 1;
  int64_t chunk_bytes = 0;       // bytes of one chunk over all TP ranks (rule 20: one copy per rank)
  int64_t chunk_bytes_rank = 0;  // bytes one GPU copies for one chunk (its DMA queues run in parallel)
  int64_t capacity_chunks = 0;   // size_bytes / chunk_bytes (vLLM cpu/spec.py num_cpu_blocks)
  double read_bandwidth = 0;     // bytes/s tier -> GPU, per GPU
  double write_bandwidth = 0;    // bytes/s GPU -> tier, per GPU
  Duration latency;              // fixed cost of each transfer job
  std::string eviction = "lru";  // make_eviction_policy name
  bool offload_prompt_only = true;
  bool cost_policy = false;
  std::vector<KvOffloadLowerTier> lower;  // tiers[1..] in lookup order
};

}  // namespace kvsim
