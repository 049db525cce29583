#pragma once
// EngineConfig: one serving instance, with vLLM's scheduler/cache option names
// (vllm/config/scheduler.py, vllm/config/cache.py). Plain data; the scenario layer fills and validates
// it, the engine only checks invariants it relies on (EngineInstance's constructor).
#include <cstdint>
#include <string>

#include "sim/model/kv_layout.h"
#include "sim/tier/offload_config.h"

namespace kvsim {

// vLLM CacheConfig.mamba_cache_mode (vllm/config/cache.py), resolved: the scenario layer turns "auto"
// into align (prefix caching on) or none (off), and "all" into align for models without
// SupportsMambaPrefixCaching.
//  - none: one state block per request (mamba_block_size = max_model_len), nothing hashed;
//  - align: the state is saved only where a scheduler step ends exactly on a block boundary;
//  - all: a state at every block boundary (simplified: each boundary crossed writes one state block,
//    every one hashed, no retention filter; the block size follows the "all" rule).
enum class MambaCacheMode : uint8_t { kNone, kAlign, kAll };
const char* mamba_cache_mode_name(MambaCacheMode m);

// CacheConfig.prefix_cache_retention_interval: which saved states keep their hash.
inline constexpr int64_t kRetentionDense = -1;  // vLLM None: every saved state

// Which engine's scheduler forms the steps: vLLM v1's (Scheduler, scheduler.h) or SGLang's
// (prefill first, never mixed with decode; sglang_schedule.cpp).
enum class StepPolicy : uint8_t { kVllm, kSglang };
const char* step_policy_name(StepPolicy p);

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
  int instance = 0;                          // cluster-wide instance index, copied into every record
  int pool = 0;                              // index of the instance's pool, copied into request records
  int64_t sparse_topk = 0;  // sparse attention (DeepSeek-V3.2 DSA index_topk): keys each query reads; 0 = dense
  // Progress watchdog (Scheduler): preempting one request this many times without it computing a token
  // it had not computed before fails KVSIM_CHECK (a livelock the no-progress rejection missed).
  int max_preemptions_without_progress = 1000;

  // Hybrid models (layouts with state groups) only; ignored otherwise.
  MambaCacheMode mamba_cache_mode = MambaCacheMode::kAlign;
  // kRetentionDense: every saved state keeps its hash (vLLM before PR #52216); 0: only the replay
  // boundary floor((L-1)/B)*B and the shared-prefix junction; N > 0: also the first saved state of each
  // N-token segment [kN, (k+1)N).
  int64_t prefix_cache_retention_interval = 0;
  // The same for sliding-window groups beside full attention (vLLM SlidingWindowManager.reachable_block_mask,
  // PR #43447): vLLM's rule, so kind vllm only; other kinds and window-only layouts hash every window block.
  int64_t window_retention_interval = kRetentionDense;
  // vLLM PR #37898 (Marconi junction): when attention matches more than the state, stop a prefill
  // chunk at the block-floored attention match and keep that state.
  bool shared_prefix_checkpoint = true;
  // Miss attribution (MissCause, lost_tokens): exact when on; off skips its key memory and reports every
  // miss as unattributed (kNone, 0 lost tokens). Scheduling is the same either way.
  bool miss_attribution = true;
  // vLLM prefix_match_unit (hash_block_size, PR #46384): hash granularity in tokens (0 = block size);
  // must divide the block size. Below the block size on a hybrid in align mode with prefix caching it
  // enables partial hash hits: hashes every unit, partial tail entries at the prompt's last unit
  // boundary floor(L / unit) * unit in the attention and state groups (reached by an align-split
  // stop), attention hits at any registered unit boundary inside a block, state hits only at saved
  // states and tail entries, a hit inside a block copied on write. Elsewhere (plain models, mode
  // none/all, caching off) vLLM falls back to whole-block hashing and so does kvsim.
  int prefix_match_unit = 0;
  // The block size the engine would pick with block_size auto and no multiplier (the roofline's
  // reference for the block-size term, sim/perf/paged_block_term.h).
  int default_block_size = 0;
  // A KV connector that accepts partial hybrid hits: attention blocks are reused up to the attention
  // match, the state is recomputed from the last saved state at or below it.
  bool kv_connector_partial_hybrid_hits = false;
  // kSglang: max_num_batched_tokens is SGLang's chunked_prefill_size (enable_chunked_prefill false: no
  // chunking), max_num_seqs its max_running_requests; max_prefill_tokens and new_token_ratio as there.
  StepPolicy step_policy = StepPolicy::kVllm;
  int64_t max_prefill_tokens = 16384;  // SGLang --max-prefill-tokens
  bool enable_mixed_chunk = false;     // SGLang --enable-mixed-chunk: decode joins prefill steps
  double init_new_token_ratio = 0.7;   // min(0.7 x schedule_conservativeness, 1)
  double min_new_token_ratio = 0.7 * 0.14;
  double new_token_ratio_decay = (0.7 - 0.7 * 0.14) / 600;
  // engine.kv_offload, resolved (sim/tier/offload_resolution.h); disabled: no tier, no events.
  KvOffloadConfig kv_offload;
};

}  // namespace kvsim
