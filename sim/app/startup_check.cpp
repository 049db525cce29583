#include "sim/app/startup_check.h"

#include <algorithm>

#include "sim/core/errors.h"
#include "sim/engine/kv_cache_coordinator.h"
#include "sim/model/sizing.h"

namespace kvsim {

void check_engine_startup(const EngineConfig& c, const EngineSettings& e, const ResolveContext& where) {
  const std::string key_prefix = where.file + ": " + where.engine_key + ".";
  const bool vllm = parse_engine(e.kind, key_prefix + "kind") == EngineKind::kVllm;
  if (vllm && !c.enable_chunked_prefill && e.max_num_batched_tokens && c.max_num_batched_tokens < c.max_model_len) {
    throw InputError(key_prefix + "max_num_batched_tokens: " + std::to_string(c.max_num_batched_tokens) +
                     " is below max_model_len " + std::to_string(c.max_model_len) +
                     " with chunked prefill off, so longer prompts could never run (vLLM refuses this at start-up); "
                     "raise it, lower " +
                     where.engine_key + ".max_model_len or enable chunked prefill");
  }
  // Cheap first: one block per token covers any group layout; only a small pool needs the count.
  const int64_t usable = c.layout.num_blocks - 1;  // block 0 is vLLM's null block
  const int64_t groups = static_cast<int64_t>(c.layout.groups.size());
  if (usable / std::max<int64_t>(groups, 1) > c.max_model_len / c.layout.block_size + 2) return;
  const KvCacheCoordinator kv(c, c.max_num_batched_tokens);
  int64_t needed = kv.blocks_for_request(c.max_model_len);
  // SGLang's PrefillAdder.add_one_req answers NO_TOKEN when a request's tokens are >= the free ones
  // (schedule_policy.py; free = free blocks x block size), so a request of max_model_len tokens needs
  // blocks for one token more.
  const bool sglang = c.step_policy == StepPolicy::kSglang;
  if (sglang) needed = std::max(needed, c.max_model_len / c.layout.block_size + 1);
  if (needed <= usable) return;
  const std::string key = key_prefix + (e.num_gpu_blocks ? "num_gpu_blocks" : "gpu_memory_utilization");
  throw InputError(key + ": the KV cache has " + std::to_string(usable) + " usable blocks of " +
                   std::to_string(c.layout.block_size) + " tokens, one request of max_model_len " +
                   std::to_string(c.max_model_len) + " tokens needs " + std::to_string(needed) +
                   (sglang ? " (SGLang admits a request only while its tokens are fewer than the free ones); "
                    : vllm ? " (vLLM refuses this at start-up); "
                           : "; ") +
                   (e.num_gpu_blocks ? "raise it" : "give the KV cache more memory") + " or lower " + where.engine_key +
                   ".max_model_len");
}

void cap_sglang_context_to_pool(EngineConfig& c) {
  if (c.step_policy != StepPolicy::kSglang) return;
  const int64_t usable = c.layout.num_blocks - 1;
  const int64_t groups = static_cast<int64_t>(c.layout.groups.size());
  if (usable / std::max<int64_t>(groups, 1) > c.max_model_len / c.layout.block_size + 2) return;  // fits
  const KvCacheCoordinator kv(c, c.max_num_batched_tokens);
  // The check_engine_startup rule for SGLang, as a function of the context length L.
  const auto fits = [&](int64_t len) {
    return std::max(kv.blocks_for_request(len), len / c.layout.block_size + 1) <= usable;
  };
  if (fits(c.max_model_len) || !fits(2)) return;
  int64_t lo = 2, hi = c.max_model_len;  // fits(lo), !fits(hi)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  c.max_model_len = lo;
}

}  // namespace kvsim
