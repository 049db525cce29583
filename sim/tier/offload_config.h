#pragma once
// KV offload to storage tiers below GPU memory (engine.kv_offload): vLLM's native OffloadingConnector
// (vllm/distributed/kv_transfer/kv_connector/v1/offloading_connector.py, vllm/v1/kv_offload/) or LMCache
// (lmcache/v1/storage_backend/storage_manager.py); cluster-offload.md A.1, A.2, rules 19-28. Two forms:
// the settings as a scenario states them (KvOffloadSettings, filled by the scenario layer) and the
// resolved config one engine runs with (KvOffloadConfig, resolve_kv_offload in offload_resolution.h).
// Plain data.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/time.h"

namespace kvsim {

struct KvOffloadTierSettings {
  std::string tier;  // hardware catalog key (models/hardware/tiers.yaml); '_' and '-' are the same
  int64_t size = 0;  // bytes (vLLM --kv-offloading-size, summed over the TP ranks)
  // Tiers below the host tier: I/O servers per direction (vLLM fs tier n_read_threads / n_write_threads,
  // default 16 each; rule 26).
  int read_threads = 16;
  int write_threads = 16;
};

struct KvOffloadSettings {
  std::string backend = "native";  // native (vLLM OffloadingConnector) | lmcache (LMCache, rule 28)
  std::vector<KvOffloadTierSettings> tiers;
  int64_t chunk_tokens = 0;  // 0 = the engine block size (native) or 256 (lmcache chunk_size); a block multiple
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
  int read_servers = 16;        // rule 26: N read + N write servers, each job base + bytes / bandwidth
  int write_servers = 16;
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
  // LMCache (backend: lmcache, rule 28; lmcache/v1/storage_manager.py): every chunk is written to every
  // tier (each tier admits or evicts on its own), the lookup is a tiered prefix (host run, then each lower
  // tier's run from where the previous stopped) and lower-tier hits are written back to the host tier.
  bool lmcache = false;
  // Hybrids (Mamba / gated-DeltaNet state groups): the saved state at a chunk's end is stored with the
  // chunk, as extra tier slots (state_slots, each chunk_bytes), and a hit must end at a chunk boundary
  // whose state the same tier holds (vLLM Mamba groups: a window of one chunk). 0: no state groups.
  int64_t state_bytes_rank = 0;  // bytes one GPU copies for one saved state (every state group's page)
  int64_t state_slots = 0;       // ceil(state bytes / chunk bytes), tier slots one saved state takes
};

}  // namespace kvsim
