#include "sim/model/sizing.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "sim/core/errors.h"

namespace kvsim {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A byte count that must fit int64: a context so long that it does not is an error, not a wrapped number.
int64_t checked_bytes(double bytes, int64_t context) {
  if (!(bytes < 9.0e18))
    throw InputError("context of " + std::to_string(context) + " tokens needs over 9e18 bytes of cache");
  return static_cast<int64_t>(std::llround(bytes));
}

bool is_growing(LayerKind k) {
  return k == LayerKind::kFullAttention || k == LayerKind::kMla || k == LayerKind::kSparseMla;
}

DType model_dtype(const ModelSpec& s) {
  if (s.torch_dtype == "float16") return DType::kFp16;
  return DType::kBf16;  // bfloat16, and float32 checkpoints served in bf16
}

}  // namespace

StateDtypes resolve_state_dtypes(const ModelSpec& spec, const std::string& choice) {
  if (choice == "bf16") return {DType::kBf16, DType::kBf16};
  if (choice == "fp16") return {DType::kFp16, DType::kFp16};
  if (choice == "fp32") return {DType::kFp32, DType::kFp32};
  if (choice == "mixed") return {DType::kBf16, DType::kFp32};
  if (choice != "auto")
    throw InputError("--state-dtype: unknown value '" + choice + "' (known: auto, bf16, fp16, fp32, mixed)");
  StateDtypes d;
  d.conv = model_dtype(spec);
  d.ssm = d.conv;
  if (!spec.ssm_state_dtype_hint.empty() && spec.ssm_state_dtype_hint != "auto") {
    d.ssm = parse_dtype(spec.ssm_state_dtype_hint, spec.path + ": mamba_ssm_dtype");
  } else if (spec.model_type == "nemotron_h") {
    d.ssm = DType::kFp32;  // NemotronHForCausalLMConfig.update_mamba_ssm_cache_dtype
  } else if (spec.model_type.rfind("rwkv", 0) == 0) {
    d.ssm = DType::kFp32;  // HF modeling_rwkv6: state_attn_kv is float32
  }
  return d;
}

DType default_kv_dtype(const ModelSpec& spec) {
  for (const auto& l : spec.layers)
    if (l.kind == LayerKind::kSparseMla) return DType::kFp8DsMla;
  return DType::kBf16;
}

DType resolve_kv_dtype(const ModelSpec& spec, const std::string& text, const std::string& what) {
  if (text == "auto") return default_kv_dtype(spec);
  const DType d = parse_dtype(text, what);
  // vLLM's fp8_ds_mla is the layout of an MLA latent row (656 B: 512 FP8 values, scales, 64 BF16 rope).
  if (d == DType::kFp8DsMla && std::none_of(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& l) {
        return l.kind == LayerKind::kMla || l.kind == LayerKind::kSparseMla;
      }))
    throw InputError(what + ": fp8_ds_mla is the cache layout of MLA layers, and " + spec.name + " has none");
  return d;
}

void check_parallel(const ModelSpec& spec, const Parallel& par, const std::string& tp_option) {
  const std::string who = spec.name;
  if (par.tp < 1) throw InputError(tp_option + " must be >= 1 (got " + std::to_string(par.tp) + ")");
  if (par.dcp < 1) throw InputError("--dcp must be >= 1 (got " + std::to_string(par.dcp) + ")");
  if (par.tp % par.dcp != 0)
    throw InputError("--dcp " + std::to_string(par.dcp) + " must divide " + tp_option + " " + std::to_string(par.tp) +
                     " (vLLM reuses the TP ranks for decode context parallelism)");
  if (spec.num_attention_heads > 0 && spec.num_attention_heads % par.tp != 0)
    throw InputError(tp_option + " " + std::to_string(par.tp) + " does not divide the " +
                     std::to_string(spec.num_attention_heads) + " attention heads of " + who);
  for (const auto& l : spec.layers) {
    if (l.kind == LayerKind::kFullAttention || l.kind == LayerKind::kSlidingWindow) {
      const int kv = l.attn.num_kv_heads;
      if (kv % par.tp != 0 && par.tp % kv != 0)
        throw InputError(tp_option + " " + std::to_string(par.tp) + " and the " + std::to_string(kv) + " KV heads of " +
                         who + " do not divide one another");
      if (l.kind == LayerKind::kSlidingWindow && par.dcp > 1)
        throw InputError("--dcp " + std::to_string(par.dcp) + ": " + who +
                         " has sliding-window layers, which vLLM does not support with decode context parallelism");
      // vLLM ModelConfig.verify_with_parallel_config (config/model.py), GQA / MQA with DCP: the DCP ranks
      // split the copies of one KV head, so tp > kv heads, dcp <= tp / kv heads, and each KV head's query
      // heads divide among them.
      if (par.dcp > 1 && (par.tp <= kv || par.dcp > par.tp / kv || (spec.num_attention_heads / kv) % par.dcp != 0))
        throw InputError("--dcp " + std::to_string(par.dcp) + " with " + tp_option + " " + std::to_string(par.tp) +
                         ": " + who + " has " + std::to_string(kv) + " KV heads and " +
                         std::to_string(spec.num_attention_heads) +
                         " query heads; vLLM needs tp > KV heads, dcp <= tp / KV heads and dcp dividing the query "
                         "heads per KV head");
    }
    // vLLM MambaMixer2: n_groups % tp == 0 or n_groups == 1 (one group is replicated on every rank).
    if (l.kind == LayerKind::kMamba2 && l.state.n_groups % par.tp != 0 && l.state.n_groups != 1)
      throw InputError(tp_option + " " + std::to_string(par.tp) + " does not divide the " +
                       std::to_string(l.state.n_groups) + " Mamba groups (n_groups) of " + who +
                       " (vLLM MambaMixer2 needs it, or a single group)");
    if (is_state(l.kind) && l.state.ssm_heads % par.tp != 0)
      throw InputError(tp_option + " " + std::to_string(par.tp) + " does not divide the " +
                       std::to_string(l.state.ssm_heads) + " state heads of " + who);
  }
}

double attention_bytes_per_token(const LayerSpec& l, DType kv, int tp) {
  if (l.reads_cache_of >= 0) return 0.0;
  const double b = dtype_bytes(kv == DType::kFp8DsMla ? DType::kFp8 : kv);
  switch (l.kind) {
    case LayerKind::kFullAttention:
    case LayerKind::kSlidingWindow: {
      // vLLM get_num_kv_heads: max(1, kv_heads // tp); heads are replicated beyond kv_heads ranks.
      const int heads = std::max(1, l.attn.num_kv_heads / tp);
      return (l.attn.k_eq_v ? 1.0 : 2.0) * heads * l.attn.head_dim * b;
    }
    case LayerKind::kMla:
      // One latent + rope row per token, replicated on every TP rank.
      return (l.attn.kv_lora_rank + l.attn.qk_rope_head_dim) * b;
    case LayerKind::kSparseMla: {
      const int id = l.attn.index_head_dim;
      const double indexer = id + (id / 128) * 4;  // deepseek_v2.py DeepseekV32IndexerCache, uint8
      if (dtype_bits(kv) < 16) {
        // flashmla_sparse.py fp8_ds_mla: latent fp8, 4-byte scale per 128 values, rope in bf16. vLLM
        // _canonicalize_sparse_mla_kv_cache_dtype turns any quantized KV dtype (fp4 too) into this row.
        const int r = l.attn.kv_lora_rank;
        return r + (r / 128) * 4 + l.attn.qk_rope_head_dim * 2 + indexer;
      }
      return (l.attn.kv_lora_rank + l.attn.qk_rope_head_dim) * b + indexer;
    }
    default:
      return 0.0;
  }
}

int64_t state_bytes(const LayerSpec& l, const StateDtypes& dt, int tp) {
  if (!is_state(l.kind)) return 0;
  int64_t conv_dim = l.state.conv_dim;
  if (l.kind == LayerKind::kMamba2 && tp > 1 && l.state.n_groups % tp != 0) {
    // vLLM extra_groups_for_head_shards: groups are replicated so each rank holds whole groups.
    const int64_t extra = tp - l.state.n_groups;
    conv_dim += 2 * extra * l.state.ssm_state_dim;
  }
  const int64_t conv_elems =
      l.kind == LayerKind::kRwkv6 ? conv_dim * l.state.conv_rows : conv_dim / tp * l.state.conv_rows;
  const int64_t ssm_elems = l.state.ssm_heads / tp * l.state.ssm_head_dim * l.state.ssm_state_dim;
  return (conv_elems * dtype_bits(dt.conv) + ssm_elems * dtype_bits(dt.ssm)) / 8;
}

int64_t kv_bytes_per_token(const ModelSpec& spec, DType kv, int tp) {
  double sum = 0;
  for (const auto& l : spec.layers)
    if (is_growing(l.kind)) sum += attention_bytes_per_token(l, kv, tp);
  return static_cast<int64_t>(std::llround(sum));
}

int64_t window_bytes_per_token(const ModelSpec& spec, DType kv, int tp) {
  double sum = 0;
  for (const auto& l : spec.layers)
    if (l.kind == LayerKind::kSlidingWindow) sum += attention_bytes_per_token(l, kv, tp);
  return static_cast<int64_t>(std::llround(sum));
}

int64_t window_bytes_max(const ModelSpec& spec, DType kv, int tp) {
  double sum = 0;
  for (const auto& l : spec.layers)
    if (l.kind == LayerKind::kSlidingWindow) sum += attention_bytes_per_token(l, kv, tp) * l.attn.window;
  return static_cast<int64_t>(std::llround(sum));
}

int64_t state_bytes_per_request(const ModelSpec& spec, const StateDtypes& dt, int tp) {
  int64_t sum = 0;
  for (const auto& l : spec.layers) sum += state_bytes(l, dt, tp);
  return sum;
}

int64_t weight_bytes(const ModelSpec& spec, DType weight) {
  const int64_t n = spec.params + spec.vision_params;
  switch (weight) {
    case DType::kMxfp4:
      return n / 2 + cdiv(n, 32);  // + one 1-byte E8M0 scale per 32
    case DType::kNvfp4:
      return n / 2 + cdiv(n, 16);  // + one 1-byte FP8 scale per 16
    case DType::kInt4:
      return n / 2 + cdiv(n, 128) * 2;  // + one 2-byte BF16 scale per 128
    default:
      return n * dtype_bits(weight) / 8;
  }
}

int64_t weight_bytes(const ModelSpec& spec, std::optional<DType> weight) {
  if (weight) return weight_bytes(spec, *weight);
  if (spec.quant.quantized() && !spec.quant.understood)
    throw InputError(spec.path + ": quantization_config.quant_method '" + spec.quant.method +
                     "' is not understood (known: fp8, mxfp4, nvfp4, modelopt, compressed-tensors, gptq, awq); "
                     "give the weight dtype (--weight-dtype or engine.weight_dtype)");
  return spec.checkpoint_weight_bytes;
}

std::optional<DType> resolve_weight_dtype(const std::string& text, const std::string& what) {
  if (text == "auto") return std::nullopt;
  return parse_weight_dtype(text, what);
}

std::optional<DType> weight_override(const ModelSpec& spec, std::optional<DType> weight) {
  const bool stored = spec.quant.quantized() && spec.quant.understood && spec.quantized_params > 0;
  if (weight == DType::kFp4 && stored && is_fp4(spec.quant.dtype())) return std::nullopt;
  // The same for int4 on a checkpoint stored in INT4 (Kimi-K2.5's group 32, 4.5 bits, not the generic
  // group-128 4.125): data sets record only "int4".
  if (weight == DType::kInt4 && stored && spec.quant.dtype() == DType::kInt4) return std::nullopt;
  return weight;
}

DType served_weight_dtype(const ModelSpec& spec, std::optional<DType> weight) {
  if (weight) return *weight;
  return spec.quant.quantized() && spec.quant.understood ? spec.quant.dtype() : DType::kBf16;
}

bool fp8_block_scaled(const std::string& weight_dtype) { return weight_dtype == "fp8_block"; }

std::string weight_format(const ModelSpec& spec, std::optional<DType> weight) {
  if (weight) return dtype_name(*weight);
  if (!spec.quant.quantized()) return "bf16";
  const int64_t total = spec.params + spec.vision_params;
  const double share = total > 0 ? 100.0 * spec.quantized_params / total : 0.0;
  std::ostringstream o;
  o.precision(1);
  o << std::fixed << spec.quant.format() << " (" << share
    << "% of parameters; the rest bf16), from quantization_config";
  return o.str();
}

int64_t request_bytes(const ModelSpec& spec, int64_t context, DType kv, const StateDtypes& dt, const Parallel& par) {
  double sum = 0;
  const int64_t local = cdiv(context, par.dcp);  // DCP shards the growing cache across tokens
  for (const auto& l : spec.layers) {
    if (is_growing(l.kind)) sum += attention_bytes_per_token(l, kv, par.tp) * local;
    if (l.kind == LayerKind::kSlidingWindow)
      sum += attention_bytes_per_token(l, kv, par.tp) * std::min<int64_t>(context, l.attn.window);
  }
  return checked_bytes(sum + static_cast<double>(state_bytes_per_request(spec, dt, par.tp)), context);
}

EngineKind parse_engine(const std::string& s, const std::string& what) {
  if (s == "vllm") return EngineKind::kVllm;
  if (s == "sglang") return EngineKind::kSglang;
  if (s == "trtllm" || s == "tensorrt-llm") return EngineKind::kTrtllm;
  throw InputError(what + ": unknown engine " + quote_for_message(s) + " (known: vllm, sglang, trtllm)");
}

std::string engine_name(EngineKind e) {
  switch (e) {
    case EngineKind::kVllm:
      return "vllm";
    case EngineKind::kSglang:
      return "sglang";
    case EngineKind::kTrtllm:
      return "trtllm";
  }
  return "?";
}

int engine_block_size(const ModelSpec& spec, EngineKind engine, int requested, DType kv, const StateDtypes& dt,
                      int tp) {
  bool mla = false;
  const LayerSpec* attn = nullptr;
  const LayerSpec* state = nullptr;
  for (const auto& l : spec.layers) {
    if (is_attention(l.kind) && !attn && l.reads_cache_of < 0) attn = &l;
    if (is_state(l.kind) && !state) state = &l;
    mla |= l.kind == LayerKind::kMla || l.kind == LayerKind::kSparseMla;
  }
  int block = requested;
  if (block <= 0) {
    switch (engine) {
      case EngineKind::kSglang:
        block = 1;
        break;  // SGLang page_size default 1
      case EngineKind::kTrtllm:
        block = 32;
        break;  // TensorRT-LLM tokens_per_block default 32
      case EngineKind::kVllm:
        block = mla ? 64 : 16;
        break;  // CacheConfig.DEFAULT_BLOCK_SIZE; FlashMLA 64
    }
  }
  if (!attn || !state) return block;
  // vllm/platforms/interface.py _align_hybrid_block_size ("none"/"align" mamba_cache_mode).
  // SGLang and TensorRT-LLM keep recurrent states in a pool of their own; kvsim has one shared pool,
  // so for them too hybrids use vLLM's unified page (a 1-token SGLang page padded to a whole state
  // page would charge megabytes per token).
  const int64_t a = std::max<int64_t>({16, block, mla ? 128 : 0});
  const double p_attn = attention_bytes_per_token(*attn, kv, tp);
  const int64_t p_state = state_bytes(*state, dt, tp);
  const double attn_block = a * std::ceil(p_state / (a * p_attn));
  if (!(attn_block <= (1 << 24)))
    throw InputError(spec.path + ": one layer's state (" + std::to_string(p_state) +
                     " bytes) needs an attention block over 2^24 tokens; check the state sizes");
  return static_cast<int>(std::max<int64_t>(block, static_cast<int64_t>(attn_block)));
}

KvCacheLayout build_kv_layout(const ModelSpec& spec, int block_size, DType kv, const StateDtypes& dt,
                              const Parallel& par, int64_t available_bytes) {
  KvCacheLayout layout;
  layout.block_size = block_size;
  // Buckets of identical specs, in a fixed order: full (growing), sliding by window, state.
  std::map<std::pair<int, int>, std::pair<int, double>> buckets;  // (kind order, window) -> (layers, page)
  double attn_page = 0;
  for (const auto& l : spec.layers) {
    if (l.reads_cache_of >= 0) continue;
    if (is_growing(l.kind)) {
      auto& b = buckets[{0, 0}];
      ++b.first;
      const double p = attention_bytes_per_token(l, kv, par.tp) * block_size;
      b.second = std::max(b.second, p);
      attn_page = std::max(attn_page, p);
    } else if (l.kind == LayerKind::kSlidingWindow) {
      auto& b = buckets[{1, l.attn.window}];
      ++b.first;
      const double p = attention_bytes_per_token(l, kv, par.tp) * block_size;
      b.second = std::max(b.second, p);
      attn_page = std::max(attn_page, p);
    } else if (is_state(l.kind)) {
      auto& b = buckets[{2, 0}];
      ++b.first;
      b.second = std::max<double>(b.second, state_bytes(l, dt, par.tp));
    }
  }
  if (buckets.empty()) throw InputError(spec.path + ": the model has no layer that keeps a cache or state");
  // Hybrids: the state page is padded up to one attention page (mamba_page_size_padded).
  if (attn_page > 0 && buckets.count({2, 0})) {
    auto& s = buckets[{2, 0}];
    s.second = std::max(s.second, attn_page);
  }
  // kv_cache_utils.py: group_size = min layers per bucket, or the max when max < 1.5 x min.
  int mn = INT32_MAX, mx = 0;
  for (const auto& [k, b] : buckets) {
    mn = std::min(mn, b.first);
    mx = std::max(mx, b.first);
  }
  const int group_size = (mx < 1.5 * mn) ? mx : mn;
  layout.group_size = group_size;
  double page_for_pool = 0;
  for (const auto& [k, b] : buckets) {
    const int n_groups = static_cast<int>(cdiv(b.first, group_size));
    for (int g = 0; g < n_groups; ++g) {
      KvCacheGroup grp;
      grp.kind = k.first == 0 ? KvGroupKind::kFullAttention
                              : (k.first == 1 ? KvGroupKind::kSlidingWindow : KvGroupKind::kState);
      grp.window = k.second;
      grp.num_layers = std::min(group_size, b.first - g * group_size);
      grp.page_bytes_per_layer = static_cast<int64_t>(std::llround(b.second));
      layout.groups.push_back(grp);
    }
    page_for_pool = std::max(page_for_pool, b.second);
  }
  // num_blocks = available // page_size // group_size (uniform page after unification).
  layout.bytes_per_block = static_cast<int64_t>(std::llround(page_for_pool)) * group_size;
  layout.num_blocks = layout.bytes_per_block > 0 ? std::max<int64_t>(0, available_bytes) / layout.bytes_per_block : 0;
  return layout;
}

namespace {

// Blocks one request holds in group `g` at `context` tokens.
int64_t group_blocks(const KvCacheGroup& g, int64_t block_size, int64_t context, int dcp) {
  switch (g.kind) {
    case KvGroupKind::kFullAttention:
      return cdiv(cdiv(context, dcp), block_size);
    case KvGroupKind::kSlidingWindow:
      return std::min(cdiv(context, block_size), cdiv(g.window - 1, block_size) + 1);
    case KvGroupKind::kState:
      return 1;
  }
  return 0;
}

}  // namespace

int64_t blocks_per_request(const KvCacheLayout& layout, int64_t context, int dcp) {
  int64_t n = 0;
  for (const auto& g : layout.groups) n += group_blocks(g, layout.block_size, context, dcp);
  return n;
}

int64_t request_bytes_padded(const KvCacheLayout& layout, int64_t context, int dcp) {
  int64_t bytes = 0;
  for (const auto& g : layout.groups) {
    int64_t group = 0;
    if (__builtin_mul_overflow(group_blocks(g, layout.block_size, context, dcp), g.page_bytes_per_layer, &group) ||
        __builtin_mul_overflow(group, int64_t{g.num_layers}, &group) || __builtin_add_overflow(bytes, group, &bytes))
      return checked_bytes(1e300, context);  // throws
  }
  return bytes;
}

double default_memory_fraction(EngineKind engine, int tp) {
  switch (engine) {
    case EngineKind::kVllm:
      return 0.92;  // vllm/config/cache.py since PR #38284 (v0.21); 0.9 before
    case EngineKind::kSglang:
      // sglang server_args.py (v0.4 series) mem_fraction_static by TP size.
      if (tp >= 16) return 0.79;
      if (tp >= 8) return 0.81;
      if (tp >= 4) return 0.85;
      if (tp >= 2) return 0.87;
      return 0.88;
    case EngineKind::kTrtllm:
      return 0.9;  // KvCacheConfig.free_gpu_memory_fraction
  }
  return 0.9;
}

int64_t default_reserve_bytes(EngineKind engine, int64_t gpu_reserve_bytes) {
  return engine == EngineKind::kSglang ? 0 : gpu_reserve_bytes;
}

MemoryBudget kv_memory(int64_t gpu_memory, int64_t weight_bytes_per_gpu, const MemoryRule& rule) {
  MemoryBudget m;
  m.total = gpu_memory;
  m.weights = weight_bytes_per_gpu;
  m.reserve = rule.reserve_bytes;
  switch (rule.engine) {
    case EngineKind::kVllm:
      // vllm/v1/worker/utils.py request_memory: ceil(total x gpu_memory_utilization); the profiled
      // weights, activation peak and CUDA-graph estimate come out of it (gpu_worker.py).
      m.engine_share = static_cast<int64_t>(std::ceil(gpu_memory * rule.fraction));
      m.kv_available = m.engine_share - m.weights - m.reserve;
      break;
    case EngineKind::kSglang:
      // mem_fraction_static covers weights and the KV pool; activations live outside it.
      m.engine_share = static_cast<int64_t>(gpu_memory * rule.fraction);
      m.kv_available = m.engine_share - m.weights - m.reserve;
      break;
    case EngineKind::kTrtllm:
      // free_gpu_memory_fraction is a share of what is free after weights and runtime buffers.
      m.engine_share = gpu_memory - m.weights - m.reserve;
      m.kv_available = static_cast<int64_t>(m.engine_share * rule.fraction);
      break;
  }
  return m;
}

int64_t image_tokens(const ModelSpec& spec, int width, int height) {
  if (!spec.has_vision) return 0;
  if (spec.vision_soft_tokens_per_image > 0) return spec.vision_soft_tokens_per_image;
  const int64_t factor = static_cast<int64_t>(spec.vision_patch_size) * spec.vision_spatial_merge;
  // The pixel bounds of the Qwen-VL image processors (preprocessor_config.json, which config.json does not
  // carry): Qwen3-VL / Qwen3.5 size {shortest_edge 65536, longest_edge 16777216}; Qwen2-VL / Qwen2.5-VL
  // min_pixels 56 x 56, max_pixels 14 x 14 x 4 x 16384.
  const std::string& t = spec.model_type;
  int64_t min_pixels = 0, max_pixels = 0;
  if (t.starts_with("qwen3_vl") || t.starts_with("qwen3_5")) {
    min_pixels = 65536;
    max_pixels = 16777216;
  } else if (t == "qwen2_vl" || t == "qwen2_5_vl") {
    min_pixels = 56 * 56;
    max_pixels = 14 * 14 * 4 * 16384;
  }
  if (max_pixels == 0) {
    // Other towers (MoonViT): each side to the nearest multiple of patch x merge.
    auto round_side = [&](int64_t side) {
      return std::max<int64_t>(factor, static_cast<int64_t>(std::llround(static_cast<double>(side) / factor)) * factor);
    };
    return (round_side(width) / factor) * (round_side(height) / factor);
  }
  // transformers' smart_resize (Qwen2-VL image processor): each side rounded to a multiple of the factor
  // (Python's round: halves to even, as nearbyint under the default rounding mode), then scaled down to
  // max_pixels or up to min_pixels, keeping the aspect ratio.
  // smart_resize refuses an aspect ratio above 200 (ValueError), so does the engine's processor.
  if (std::max(width, height) > 200LL * std::min(width, height))
    throw InputError("--image-size " + std::to_string(width) + "x" + std::to_string(height) +
                     ": an aspect ratio above 200, which the Qwen-VL processor refuses (transformers smart_resize)");
  const auto h = static_cast<double>(height), w = static_cast<double>(width), f = static_cast<double>(factor);
  double h_bar = std::nearbyint(h / f) * f, w_bar = std::nearbyint(w / f) * f;
  if (h_bar * w_bar > static_cast<double>(max_pixels)) {
    const double beta = std::sqrt(h * w / static_cast<double>(max_pixels));
    h_bar = std::max(f, std::floor(h / beta / f) * f);
    w_bar = std::max(f, std::floor(w / beta / f) * f);
  } else if (h_bar * w_bar < static_cast<double>(min_pixels)) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (h * w));
    h_bar = std::ceil(h * beta / f) * f;
    w_bar = std::ceil(w * beta / f) * f;
  }
  return static_cast<int64_t>(h_bar / f) * static_cast<int64_t>(w_bar / f);
}

}  // namespace kvsim
