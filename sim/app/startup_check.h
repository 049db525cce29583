#pragma once
// Configurations vLLM refuses at start-up, refused here the same way (InputError naming the key)
// instead of running requests that can never finish:
//  - vllm/config/scheduler.py: without chunked prefill, max_num_batched_tokens must be at least
//    max_model_len (vLLM itself raises its default budget to max_model_len then; kvsim's default
//    budget is not raised, so only an explicit engine.max_num_batched_tokens is refused).
//  - vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory: the KV cache must hold one request
//    of max_model_len tokens ("To serve at least one request with the model's max seq len ...").
//    Applied to the pool from memory and to num_gpu_blocks alike. (SGLang starts anyway and clips requests
//    to its pool: resolve_engine_config lowers its max_model_len, so only a pool that admits nothing is
//    refused for it.)
#include <string>

#include "sim/engine/engine_config.h"
#include "sim/engine/engine_resolution.h"
#include "sim/engine/engine_settings.h"

namespace kvsim {

// `config` as resolve_engine_config made it from `settings`; errors name where.file and
// where.engine_key (engine, or cluster.pools[i].engine).
void check_engine_startup(const EngineConfig& config, const EngineSettings& settings, const ResolveContext& where);

}  // namespace kvsim
