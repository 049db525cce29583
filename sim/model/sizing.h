#pragma once
// Exact cache, state and weight arithmetic from a ModelSpec, and vLLM's rules that turn it into
// paged blocks: the hybrid block-size rule, KV cache groups, block padding, tensor- and
// decode-context-parallel splits, and capacity under each engine's memory rule.
// Sources: shared/reference/model-sizing.md (formulas) and vllm-semantics.md sections 1, 4 and 7.
#include <cstdint>
#include <optional>
#include <string>

#include "sim/model/dtype.h"
#include "sim/model/kv_layout.h"
#include "sim/model/model_spec.h"

namespace kvsim {

// Dtypes of the two parts of a recurrent state: conv (or RWKV token shift) and SSM (or RWKV wkv).
struct StateDtypes {
  DType conv = DType::kBf16;
  DType ssm = DType::kBf16;
};

// `choice` is "auto" (vLLM's per-model rule), "bf16", "fp16", "fp32" or "mixed" (conv BF16, SSM FP32).
// auto: vLLM MambaStateDtypeCalculator: conv = model dtype; SSM = conv dtype unless the model's
// config class overrides it: NemotronH uses mamba_ssm_cache_dtype or else float32
// (NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype); Qwen3.5 uses its mamba_ssm_dtype;
// RWKV-6 (not in vLLM) follows HF, which keeps wkv in FP32.
StateDtypes resolve_state_dtypes(const ModelSpec& spec, const std::string& choice);

// The cache dtype an engine uses when none is given ("auto"): the model dtype (BF16), except
// DeepSeek-V3.2, whose sparse-MLA backend stores vLLM's fp8_ds_mla row (vLLM CacheConfig: "some
// models (namely DeepSeekV3.2) default to fp8"; FlashMLA-sparse canonicalises 8-bit caches to it).
DType default_kv_dtype(const ModelSpec& spec);
// "auto" -> default_kv_dtype(spec), else parse_dtype(text, what).
DType resolve_kv_dtype(const ModelSpec& spec, const std::string& text, const std::string& what);

// Per-rank shard of the model: tensor parallel `tp`, decode context parallel `dcp`; and the layout
// beyond TP (sim/model/parallel_layout.h): attention data parallel `dp`, pipeline stages `pp`, and
// vLLM's enable_expert_parallel (EP = dp x tp), or an EP size `ep` that divides dp x tp with each expert
// tensor-split dp x tp / ep ways inside its EP group (SGLang --ep-size, TensorRT-LLM
// moe_expert_parallel_size x moe_tensor_parallel_size; vLLM has no such layout). The defaults are one GPU
// group without DP, PP or EP.
struct Parallel {
  int tp = 1;
  int dcp = 1;
  int dp = 1;
  int pp = 1;
  bool expert_parallel = false;
  int ep = 0;  // with expert_parallel: the EP size; 0 = dp x tp (vLLM's)
};
// Throws InputError when tp (or dcp) does not divide the heads where it must; `tp_option` names the TP
// size in the message (size --decode-tp checks the decode side's).
void check_parallel(const ModelSpec& spec, const Parallel& par, const std::string& tp_option = "--tp");

// Cache bytes per token of one attention layer on one rank (0 for other kinds and for layers that
// read another layer's cache). FP8 is per-tensor scaled (no stored scales); sparse MLA with any
// 8-bit dtype uses vLLM's fp8_ds_mla row (512 fp8 + 4 fp32 scales + 64 bf16 rope = 656 B) plus the
// indexer key, which vLLM always stores as 128 fp8 + one fp32 scale = 132 B.
double attention_bytes_per_token(const LayerSpec& l, DType kv, int tp);
// Fixed state bytes of one state layer for one request on one rank.
int64_t state_bytes(const LayerSpec& l, const StateDtypes& dt, int tp);

// Sum over the layers whose cache keeps growing (full attention, MLA, sparse MLA).
int64_t kv_bytes_per_token(const ModelSpec& spec, DType kv, int tp = 1);
// The most the sliding-window layers ever hold for one request (window tokens each).
int64_t window_bytes_max(const ModelSpec& spec, DType kv, int tp = 1);
// Bytes per token of the sliding-window layers together (before the window fills).
int64_t window_bytes_per_token(const ModelSpec& spec, DType kv, int tp = 1);
int64_t state_bytes_per_request(const ModelSpec& spec, const StateDtypes& dt, int tp = 1);
// Every parameter in `weight` (--weight-dtype): int4, mxfp4 and nvfp4 with their scales (dtype.h).
int64_t weight_bytes(const ModelSpec& spec, DType weight);
// nullopt ("auto"): the checkpoint as config.json's quantization_config stores it, with scales and
// the unquantised modules in 16 bits (spec.checkpoint_weight_bytes); 2 bytes per parameter without one.
// Throws InputError for a quantization method kvsim does not understand.
int64_t weight_bytes(const ModelSpec& spec, std::optional<DType> weight);
// "auto" -> nullopt, else parse_weight_dtype(text, what).
std::optional<DType> resolve_weight_dtype(const std::string& text, const std::string& what);
// The override the rest of kvsim applies: `weight` as resolved, except that the generic "fp4" on a
// checkpoint stored in a 4-bit float format (mxfp4, nvfp4) names that format and keeps the checkpoint's
// own layout (nullopt: its unquantised modules stay in 16 bits, its scales as stored). gpt-oss's MXFP4
// checkpoint leaves attention, router, embeddings and lm_head in BF16 (modules_to_not_convert); data
// sets that record only "fp4" for it mean that checkpoint, not every weight in FP4. Likewise "int4" on an
// INT4 checkpoint (Kimi-K2.5: group 32) means that checkpoint.
std::optional<DType> weight_override(const ModelSpec& spec, std::optional<DType> weight);
// The one dtype latency models see: the override, else the quantised weights' format, else BF16.
DType served_weight_dtype(const ModelSpec& spec, std::optional<DType> weight);
// Whether the step models price FP8 weights with vLLM's block-scaled kernels (Fp8LinearMethod with
// weight_block_size: W8A8 block GEMMs with per-token-group activation scales; the block-FP8 fused MoE)
// instead of the per-tensor ones: only when `weight_dtype` (the engine's text) is "fp8_block". A checkpoint
// that stores block-scaled FP8 (weight_block_size) served as "auto" / "fp8" keeps the per-tensor rows:
// pricing it with the measured block rows was tested on the validation sets and not adopted
// (models/latency/README.md, "Block-scaled FP8 and NVFP4 GEMM rows"). Sizing (the scales' bytes) is
// unaffected either way.
bool fp8_block_scaled(const std::string& weight_dtype);
// "mxfp4 group 32 (98.1% of parameters; the rest bf16), from quantization_config", or the dtype name.
std::string weight_format(const ModelSpec& spec, std::optional<DType> weight);

// One request at `context` tokens, exact (no paging), on one rank.
int64_t request_bytes(const ModelSpec& spec, int64_t context, DType kv, const StateDtypes& dt, const Parallel& par);

// Engine block size. `requested` <= 0 means the engine's default (vLLM 16; FlashMLA 64 for MLA;
// SGLang 1; TensorRT-LLM 32). For hybrids, _align_hybrid_block_size may raise it (vLLM's rule, used
// for every engine because kvsim models one shared pool):
// B = a * ceil(P_state / (a * p_attn)), a = max(16, requested) (128 for MLA hybrids).
enum class EngineKind { kVllm, kSglang, kTrtllm };
EngineKind parse_engine(const std::string& s, const std::string& what);
std::string engine_name(EngineKind e);
int engine_block_size(const ModelSpec& spec, EngineKind engine, int requested, DType kv, const StateDtypes& dt,
                      int tp = 1);

// The KV cache groups vLLM forms (kv_cache_utils.py get_kv_cache_groups) and the pool size for
// `available_bytes` of cache memory on one rank. num_blocks includes the null block.
KvCacheLayout build_kv_layout(const ModelSpec& spec, int block_size, DType kv, const StateDtypes& dt,
                              const Parallel& par, int64_t available_bytes);
// Blocks one request holds at `context` tokens: ceil(ctx/B) in each full group, at most
// cdiv(W-1, B) + 1 in each sliding group, one page in each state group.
int64_t blocks_per_request(const KvCacheLayout& layout, int64_t context, int dcp = 1);
// The same request in bytes, rounded up to whole blocks (the last block is partly empty).
int64_t request_bytes_padded(const KvCacheLayout& layout, int64_t context, int dcp = 1);

// Memory rules of each engine, per GPU.
struct MemoryRule {
  EngineKind engine = EngineKind::kVllm;
  double fraction = 0;        // gpu_memory_utilization / mem_fraction_static / free_gpu_memory_fraction
  int64_t reserve_bytes = 0;  // activations, CUDA graphs, non-torch memory
};
// Default fraction: vLLM 0.92 (0.9 before v0.21, PR #38284); SGLang's mem_fraction_static from its
// TP-size table; TensorRT-LLM free_gpu_memory_fraction 0.9.
double default_memory_fraction(EngineKind engine, int tp);
// Default activation + CUDA-graph reserve out of the engine's share: the GPU file's activation_reserve
// (`gpu_reserve_bytes`) for vLLM and TensorRT-LLM; 0 for SGLang, whose mem_fraction_static covers weights and
// the KV pool only (model_runner.py: rest = free after weights - total x (1 - mem_fraction_static)), so its
// activations and graphs live in the rest.
int64_t default_reserve_bytes(EngineKind engine, int64_t gpu_reserve_bytes);
struct MemoryBudget {
  int64_t total = 0;         // GPU memory as the engine sees it
  int64_t engine_share = 0;  // what the rule lets the engine take
  int64_t weights = 0;       // per GPU
  int64_t reserve = 0;
  int64_t kv_available = 0;  // may be negative: the model does not fit
};
MemoryBudget kv_memory(int64_t gpu_memory, int64_t weight_bytes_per_gpu, const MemoryRule& rule);

// Image tokens of a vision-language config: Qwen-VL smart_resize rounds each side to a multiple
// of patch x merge, one LLM token per (patch x merge)^2 pixels (wrapper tokens not included); Kimi's
// merge_kernel_size is the merge. Gemma's vision_soft_tokens_per_image is a fixed count per image.
int64_t image_tokens(const ModelSpec& spec, int width, int height);

}  // namespace kvsim
