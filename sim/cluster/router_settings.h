#pragma once
// RouterSettings: the router of a cluster as a scenario states it (cluster.router in
// scenarios/README.md). Plain data; the scenario layer fills and validates it, make_router
// (router_registry.h) builds the policy.
#include <cstdint>
#include <string>

namespace kvsim {

// cluster.router: the policy and its options. Every option is typed here with its default and source;
// options of another policy are rejected at load (scenarios/README.md lists which belong to which).
struct RouterSettings {
  std::string policy = "round_robin";
  double report_interval_s = 0;  // load reports every this many seconds (0: the router sees live load)
  double routing_latency_s = 0;  // delay between a request's arrival and its submission to the instance
  // llm_d (llm-d EPP, cluster-offload.md B.1): score = prefix_weight * prefix + queue_weight * queue +
  // kv_weight * (1 - KV usage), argmax with seeded random ties.
  double prefix_weight = 3, queue_weight = 2, kv_weight = 2;
  int block_size = 0;           // approximate index block in tokens; 0: the instance's block size (autoTune)
  int max_prefix_blocks = 256;  // maxPrefixBlocksToMatch
  int64_t lru_capacity = 0;     // per-instance LRU of block hashes; 0: the instance's block count (autoTune)
  bool precise = false;         // read the instances' real cached blocks (precise-prefix-cache-scorer)
  // dynamo (Dynamo KV router, B.2): cost = overlap_weight * prefill_blocks + decode_blocks, argmin.
  double overlap_weight = 1.0;
  double temperature = 0.0;  // > 0: softmax over range-normalised -cost / temperature
  bool kv_events = true;     // true: the index follows the instances' real caches; false: predicted
  // sglang (cache_aware, B.3; sglang_router CLI defaults).
  double cache_threshold = 0.3;
  int64_t balance_abs_threshold = 64;
  double balance_rel_threshold = 1.5;
  double eviction_interval_s = 120;
  int64_t max_tree_size = int64_t{1} << 26;  // tokens per instance's tree
  // session_affinity: points per instance on the consistent-hash ring.
  int virtual_nodes = 160;
};

}  // namespace kvsim
