#include "sim/tier/offload_resolution.h"

#include <algorithm>
#include <vector>

#include "sim/core/errors.h"

namespace kvsim {

std::string tier_kind(const std::string& catalog_name) { return catalog_name.substr(0, catalog_name.find('-')); }

KvOffloadConfig resolve_kv_offload(const std::optional<KvOffloadSettings>& s, const KvCacheLayout& layout, int tp,
                                   int pp, bool enable_prefix_caching, const HardwareCatalog& hw,
                                   const std::string& file, const std::string& engine_key) {
  KvOffloadConfig c;
  if (!s) return c;
  const std::string key = file + ": " + engine_key + ".kv_offload";
  const auto fail = [&key](const std::string& sub, const std::string& msg) {
    throw InputError(key + (sub.empty() ? "" : "." + sub) + ": " + msg);
  };
  if (s->backend != "native" && s->backend != "lmcache")
    fail("backend", "must be native or lmcache (got " + s->backend + ")");
  if (s->eviction != "lru" && s->eviction != "arc") fail("eviction", "must be lru or arc (got " + s->eviction + ")");
  if (s->policy != "vllm" && s->policy != "cost") fail("policy", "must be vllm or cost (got " + s->policy + ")");
  if (s->tiers.empty()) fail("tiers", "must name at least the host tier");
  // The OffloadingConnector keys chunks by block hash: without prefix caching there are no hashes.
  if (!enable_prefix_caching) fail("", "needs enable_prefix_caching (chunks are keyed by block hash)");
  // Full-attention groups, optionally with state groups (hybrids: the saved states travel with the
  // chunks). Sliding-window groups (vLLM: a window of chunks per lookup) are not modelled.
  int64_t attention_bytes = 0, state_bytes = 0;
  for (const KvCacheGroup& g : layout.groups) {
    if (g.kind == KvGroupKind::kSlidingWindow)
      fail("", "models with sliding-window KV cache groups are not modelled for offload");
    (g.kind == KvGroupKind::kState ? state_bytes : attention_bytes) += g.page_bytes_per_layer * g.num_layers;
  }
  if (attention_bytes == 0) fail("", "needs a full-attention KV cache group (state-only models are not modelled)");
  // vLLM: a connector that is not SupportsHMA turns the hybrid KV cache manager off, and hybrid SSM models
  // then fail at start-up; LMCache's connectors (LMCacheConnectorV1, LMCacheMPConnector) are not.
  if (s->backend == "lmcache" && state_bytes > 0)
    fail("backend",
         "lmcache cannot serve a hybrid model: its connector does not support vLLM's hybrid KV cache "
         "manager (not SupportsHMA), and vLLM refuses hybrid SSM models without it; use native");
  // Catalog entry of tiers[i]; its kind is the name up to the first '-' (host, nvme, remote).
  const auto catalog = [&](size_t i) -> const std::pair<const std::string, TierSpec>& {
    std::string name = s->tiers[i].tier;
    std::replace(name.begin(), name.end(), '_', '-');
    const auto it = hw.tiers.find(name);
    if (it == hw.tiers.end()) {
      std::string known;
      for (const auto& [n, spec] : hw.tiers) known += (known.empty() ? "" : ", ") + n;
      fail("tiers[" + std::to_string(i) + "].tier", "unknown tier '" + s->tiers[i].tier + "' (known: " + known + ")");
    }
    return *it;
  };
  const auto kind = tier_kind;
  std::vector<std::string> kinds;
  for (size_t i = 0; i < s->tiers.size(); ++i) {
    const std::string kd = kind(catalog(i).first);
    const std::string w = "tiers[" + std::to_string(i) + "].tier";
    if (std::find(kinds.begin(), kinds.end(), kd) != kinds.end())
      fail(w, "two tiers of kind " + kd + " ('" + s->tiers[i].tier + "'); each kind at most once");
    if (i > 0 && kd == "host") fail(w, "the host tier must be the first entry (got '" + s->tiers[i].tier + "')");
    kinds.push_back(kd);
  }
  const KvOffloadTierSettings& t = s->tiers.front();
  const std::string name = catalog(0).first;
  const auto it = hw.tiers.find(name);
  const TierSpec& spec = it->second;
  const int64_t b = layout.block_size;
  const bool lmcache = s->backend == "lmcache";
  // LMCache chunk_size defaults to 256 tokens (lmcache/v1/config.py); native: one GPU block.
  c.chunk_tokens = s->chunk_tokens != 0 ? s->chunk_tokens : lmcache ? 256 : b;
  if (c.chunk_tokens <= 0 || c.chunk_tokens % b != 0)
    fail("chunk_tokens", "must be a multiple of the block size " + std::to_string(b) + " (got " +
                             std::to_string(c.chunk_tokens) + (s->chunk_tokens == 0 ? ", the lmcache default" : "") +
                             ")");
  if (t.size <= 0) fail("tiers[0].size", "must be > 0");
  c.enabled = true;
  c.tier = name;
  c.size_bytes = t.size;
  c.blocks_per_chunk = c.chunk_tokens / b;
  // One block id's bytes (every layer of a single attention group); hybrids: the attention groups' pages.
  const bool hybrid = state_bytes > 0;
  // Under pipeline parallelism each rank copies its own stage's layers (even stages assumed).
  const int64_t stages = std::max(pp, 1);
  const auto per_stage = [stages](int64_t bytes) { return (bytes + stages - 1) / stages; };
  c.chunk_bytes_rank = per_stage(hybrid ? attention_bytes : layout.bytes_per_block) * c.blocks_per_chunk;
  c.lmcache = lmcache;
  if (hybrid) {
    c.state_bytes_rank = per_stage(state_bytes);
    c.state_slots = (state_bytes + c.chunk_bytes_rank - 1) / c.chunk_bytes_rank;
  }
  // vLLM cpu/spec.py: num_cpu_blocks = cpu_bytes_to_use // (bytes per block x blocks_per_chunk x copies),
  // copies = TP (the MLA replicated layout, one copy, is not modelled), times the PP stages.
  const int ranks = std::max(tp, 1) * static_cast<int>(stages);
  c.chunk_bytes = c.chunk_bytes_rank * ranks;
  c.capacity_chunks = c.chunk_bytes > 0 ? c.size_bytes / c.chunk_bytes : 0;
  if (c.capacity_chunks < 1)
    fail("tiers[0].size", std::to_string(t.size) + " bytes hold no chunk of " + std::to_string(c.chunk_bytes) +
                              " bytes (chunk_tokens x every rank's bytes per token)");
  // The remote store's catalog bandwidth is the node's (models/hardware/tiers.yaml, remote-rdma: "Node-level;
  // about 10.85 GB/s per GPU when 8 GPUs share it"): each of the engine's ranks gets its share.
  const auto share_of = [&](const std::string& tier) { return kind(tier) == "remote" ? ranks : 1; };
  c.read_bandwidth = spec.read_bandwidth / share_of(name);
  c.write_bandwidth = spec.write_bandwidth / share_of(name);
  c.latency = spec.latency;
  c.eviction = s->eviction;
  c.offload_prompt_only = s->offload_prompt_only;
  c.cost_policy = s->policy == "cost";
  // vLLM TieringOffloadingSpec stages every secondary tier through the CPU: a lower tier without a host
  // tier above it is not modelled.
  if (kind(name) != "host" && s->tiers.size() > 1)
    fail("tiers[0].tier", "a lower tier needs the host tier first (got '" + t.tier + "')");
  for (size_t i = 1; i < s->tiers.size(); ++i) {
    const TierSpec& ls = catalog(i).second;
    if (s->tiers[i].size <= 0) fail("tiers[" + std::to_string(i) + "].size", "must be > 0");
    KvOffloadLowerTier l;
    l.tier = catalog(i).first;
    l.size_bytes = s->tiers[i].size;
    l.capacity_chunks = c.chunk_bytes > 0 ? l.size_bytes / c.chunk_bytes : 0;
    if (l.capacity_chunks < 1)
      fail("tiers[" + std::to_string(i) + "].size",
           std::to_string(l.size_bytes) + " bytes hold no chunk of " + std::to_string(c.chunk_bytes) + " bytes");
    l.read_bandwidth = ls.read_bandwidth / share_of(l.tier);
    l.write_bandwidth = ls.write_bandwidth / share_of(l.tier);
    l.latency = ls.latency;
    l.read_servers = s->tiers[i].read_threads;
    l.write_servers = s->tiers[i].write_threads;
    c.lower.push_back(l);
  }
  return c;
}

}  // namespace kvsim
