#pragma once
// EngineSettings: one engine's options as a scenario states them (vLLM's names, unresolved: "auto"
// dtypes, optional defaults). The scenario layer fills them from YAML (the top-level `engine:` section,
// and for each cluster pool that section with the pool's overrides on top); resolve_engine_config
// (engine_resolution.h) turns them into an EngineConfig for one model on one GPU.
#include <cstdint>
#include <optional>
#include <string>

#include "sim/tier/offload_config.h"

namespace kvsim {

struct EngineSettings {
  std::string kind = "vllm";  // memory rule and defaults: vllm | sglang | trtllm
  // The engine's release ("0.5.9", "0.5.10.post1", "nightly-dev", ...; empty = a current one): picks the
  // version-dependent per-step terms of models/latency/overhead.csv (calibrated model).
  std::string version;
  int block_size = 0;                         // 0 = auto (the engine's default, raised for hybrids)
  int block_size_multiplier = 1;              // the resolved block size times this (hybrids: the axis a sweep has)
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
  // Whose scheduler forms the steps: auto (SGLang's for kind sglang, else vLLM's) | vllm | sglang.
  std::string scheduler = "auto";
  std::optional<int64_t> max_prefill_tokens;  // SGLang --max-prefill-tokens (default 16384)
  std::optional<bool> enable_mixed_chunk;     // SGLang --enable-mixed-chunk (default false)
  double watermark = 0.0;
  bool scheduler_reserve_full_isl = true;
  int tensor_parallel_size = 1;
  // Parallelism beyond TP (sim/model/parallel_layout.h, sim/perf/parallel_terms.h); vLLM's names.
  int data_parallel_size = 1;           // DP ranks, each an engine with its own KV cache
  int pipeline_parallel_size = 1;       // pipeline stages of one engine
  bool enable_expert_parallel = false;  // EP = DP x TP for the MoE layers
  // kvsim's key for SGLang's --ep-size / TensorRT-LLM's moe_expert_parallel_size: an EP size dividing
  // DP x TP, each expert tensor-split DP x TP / EP ways (turns EP on). 0: DP x TP. Refused for kind vllm.
  int expert_parallel_size = 0;
  std::string all2all_backend = "allgather_reducescatter";  // vLLM's default MoE communication under DP
  // GPUs per node. With the GPU's nvlink_domain, the larger of the two is the NVLink domain (nvlink_domain()
  // in engine_resolution.h); beyond it links go through the NIC.
  int gpus_per_node = 8;
  std::string intra_node_link = "auto";    // hardware link name; auto: the GPU's NVLink
  std::string inter_node_link = "ib-ndr";  // hardware link name of one NIC per GPU
  std::string latency_model = "roofline";
  // Routing of the calibrated model's fused-MoE rows: auto (aiconfigurator's power-law default for the
  // architecture) | balanced | power_law_1.01 | power_law_1.2 (sim/perf/latency_tables.h).
  std::string moe_routing = "auto";
  // The calibrated model's MLA pricing: "roofline" (default) or "module_rows" (latency_factory.h).
  std::string mla_attention = "auto";
  bool paged_block_cost = true;  // price the block size in paged attention (sim/perf/paged_block_term.h)
  // Hybrid prefix caching (vllm-semantics.md section 2).
  std::string mamba_cache_mode = "auto";  // auto | none | align | all
  // "dense" (nullopt: every saved state keeps its hash) or N >= 0 tokens (0: reachable boundaries only).
  std::optional<int64_t> prefix_cache_retention_interval = 0;
  bool shared_prefix_checkpoint = true;  // vLLM PR #37898
  bool miss_attribution = true;          // name the cause of every lost reuse (kvsim's own; costs 10-20 %)
  int prefix_match_unit = 0;             // 0 = block size; must divide it (partial hits on hybrids in align)
  bool kv_connector_partial_hybrid_hits = false;
  std::optional<KvOffloadSettings> kv_offload;  // absent: no offload
};

}  // namespace kvsim
