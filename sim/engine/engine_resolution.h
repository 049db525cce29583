#pragma once
// resolve_engine_config: one engine's settings on one model and GPU -> EngineConfig. Every pool of a
// cluster resolves its own (its GPU, TP and overrides differ): KV and state dtypes, the engine block size
// (the hybrid rules, mamba_cache_mode "all"), prefix_match_unit and retention checks, the memory rule or
// num_gpu_blocks, and the scheduler defaults `vllm serve` picks for the GPU.
#include <string>

#include "sim/engine/engine_config.h"
#include "sim/engine/engine_settings.h"
#include "sim/model/hardware.h"
#include "sim/model/model_spec.h"

namespace kvsim {

// Where the settings came from, for error messages: "<file>: <engine_key>.<key>: ..." and, when the
// model does not fit, "<file>: <gpu_key>: <model> does not fit on ...".
struct ResolveContext {
  std::string file;
  std::string engine_key = "engine";
  std::string gpu_key = "gpu";
};

// Throws InputError naming the file and key when a setting is invalid for this model or the model does
// not fit on the GPU.
EngineConfig resolve_engine_config(const EngineSettings& e, const ModelSpec& model, const GpuSpec& gpu,
                                   const ResolveContext& where);

// Blocks an empty cache must hold to admit one request of `len` tokens: the coordinator's count and, under
// SGLang's scheduler, one token more (PrefillAdder.add_one_req answers NO_TOKEN when a request's tokens are
// >= the free ones; free = free blocks x block size). Cheap when the pool is plainly large enough: then
// len / block_size + 1, without building a coordinator.
int64_t blocks_to_admit(const EngineConfig& c, int64_t len);

// GPUs that share NVLink: the node (gpus_per_node), or the GPU's rack-scale NVLink domain where the
// catalog names one (GB200 / GB300 NVL72: 72 GPUs over 18 trays of 4), whichever is larger.
inline int nvlink_domain(const EngineSettings& e, const GpuSpec& gpu) {
  return gpu.nvlink_domain > e.gpus_per_node ? gpu.nvlink_domain : e.gpus_per_node;
}

}  // namespace kvsim
