#include "sim/app/startup_check.h"

#include "sim/core/errors.h"
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
  const int64_t usable = c.layout.num_blocks - 1;  // block 0 is vLLM's null block
  const int64_t needed = blocks_to_admit(c, c.max_model_len);
  const bool sglang = c.step_policy == StepPolicy::kSglang;
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

}  // namespace kvsim
