#pragma once
// EngineConfig: one serving instance, with vLLM's scheduler/cache option names
// (vllm/config/scheduler.py, vllm/config/cache.py). Plain data; the scenario layer fills and validates
// it, the engine only checks invariants it relies on (EngineInstance's constructor).
#include <cstdint>
#include <string>

#include "sim/model/kv_layout.h"

namespace kvsim {

struct EngineConfig {
  KvCacheLayout layout;               // groups, block size and pool size (num_blocks includes the null block)
  int max_num_batched_tokens = 8192;  // token budget of one step (vLLM serve default on H100/H200)
  int max_num_seqs = 1024;            // at most this many running requests
  bool enable_prefix_caching = true;
  bool enable_chunked_prefill = true;
  int64_t long_prefill_token_threshold = 0;  // > 0: cap on the tokens one request gets in a step
  int64_t max_model_len = 1 << 20;           // longest sequence (prompt + output) in tokens
  std::string policy = "fcfs";               // "fcfs" | "priority"
  double watermark = 0;                      // fraction of num_blocks kept free when admitting (PR #44594)
  bool scheduler_reserve_full_isl = true;    // admission needs blocks for the whole prompt (PR #37307)
  int instance = 0;                          // copied into every record
};

}  // namespace kvsim
