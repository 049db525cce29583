#pragma once
// A scenario: one experiment as a YAML file, turned into validated plain structs. Every key is
// documented in scenarios/README.md; unknown keys, wrong types and wrong units are InputErrors that
// name the file and the key path ("scenarios/a.yaml: engine.block_size: must be > 0 (got 0)").
// `--set key.path=value` overrides are applied to the YAML tree before validation.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/workload/workload_config.h"

namespace kvsim {

struct EngineSettings {
  std::string kind = "vllm";                  // memory rule and defaults: vllm | sglang | trtllm
  int block_size = 0;                         // 0 = auto (the engine's default, raised for hybrids)
  std::optional<int> max_num_batched_tokens;  // default as `vllm serve` picks it for the GPU
  std::optional<int> max_num_seqs;
  bool enable_prefix_caching = true;
  bool enable_chunked_prefill = true;
  std::optional<double> gpu_memory_utilization;  // default: the engine's (vLLM 0.92)
  std::optional<int64_t> num_gpu_blocks;         // overrides the memory rule (vLLM num_gpu_blocks_override)
  std::optional<int64_t> activation_reserve;     // bytes; default: the GPU file's activation_reserve
  std::string kv_cache_dtype = "auto";           // auto: the model default (BF16; DeepSeek-V3.2 fp8_ds_mla)
  std::string state_dtype = "auto";              // mamba_ssm_cache_dtype: auto | bf16 | fp32 | mixed
  std::string weight_dtype = "auto";             // auto: as the config's quantization_config stores them, else BF16
  std::optional<int64_t> max_model_len;          // default: the config's max_position_embeddings
  int64_t long_prefill_token_threshold = 0;
  std::string policy = "fcfs";  // fcfs | priority
  double watermark = 0.0;
  bool scheduler_reserve_full_isl = true;
  int tensor_parallel_size = 1;
  std::string latency_model = "roofline";
  // Hybrid prefix caching (vllm-semantics.md section 2).
  std::string mamba_cache_mode = "auto";  // auto | none | align | all
  // "dense" (nullopt: every saved state keeps its hash) or N >= 0 tokens (0: reachable boundaries only).
  std::optional<int64_t> prefix_cache_retention_interval = 0;
  bool shared_prefix_checkpoint = true;  // vLLM PR #37898
  int prefix_match_unit = 0;             // 0 = block size; must divide it (partial hits on hybrids in align)
  bool kv_connector_partial_hybrid_hits = false;
};

struct OutputSettings {
  std::optional<std::string> hdf5;          // run file path
  std::optional<std::string> summary_json;  // summary path
};

struct Scenario {
  std::string path;           // the YAML file
  std::string resolved_yaml;  // the tree after overrides, as stored in /meta
  std::string name;
  std::string model;  // config.json path
  std::string gpu;    // hardware catalog key
  std::string hardware_dir = "models/hardware";
  uint64_t seed = 1;
  EngineSettings engine;
  WorkloadConfig workload;
  OutputSettings output;
};

// Loads, applies overrides ("engine.block_size=528", "workload.trace.limit=100"), validates.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
// Same from YAML text; `source` names it in errors.
Scenario parse_scenario(const std::string& yaml_text, const std::string& source,
                        const std::vector<std::string>& overrides = {});

}  // namespace kvsim
