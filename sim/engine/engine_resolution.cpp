#include "sim/engine/engine_resolution.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/core/errors.h"
#include "sim/core/units.h"
#include "sim/engine/kv_cache_coordinator.h"
#include "sim/model/parallel_layout.h"
#include "sim/model/sizing.h"

namespace kvsim {
namespace {

bool has_layer(const ModelSpec& m, bool (*pred)(LayerKind)) {
  for (const auto& l : m.layers)
    if (pred(l.kind)) return true;
  return false;
}

// vLLM MambaModelConfig.verify_and_update_config: prefix caching on turns "none" into "align" and
// off means "none"; "all" needs SupportsMambaPrefixCaching, else it falls back to "align".
MambaCacheMode resolve_mamba_cache_mode(const EngineSettings& e, const ModelSpec& model) {
  if (!e.enable_prefix_caching) return MambaCacheMode::kNone;
  if (e.mamba_cache_mode != "all") return MambaCacheMode::kAlign;
  static const char* const kSupportsAll[] = {"mamba",      "mamba2",           "jamba", "falcon_h1",
                                             "nemotron_h", "granitemoehybrid", "zamba2"};
  for (const char* t : kSupportsAll)
    if (model.model_type == t) return MambaCacheMode::kAll;
  return MambaCacheMode::kAlign;
}

// _align_hybrid_block_size in "all" mode: B = lcm(chunk, a) * cdiv(cdiv(P_state, p_attn), lcm(chunk, a)),
// chunk = the model's mamba_chunk_size (Mamba1: 2048).
int all_mode_block_size(const ModelSpec& model, int block, DType kv, const StateDtypes& dt, int tp) {
  const LayerSpec* attn = nullptr;
  const LayerSpec* state = nullptr;
  bool mla = false;
  for (const auto& l : model.layers) {
    if (is_attention(l.kind) && !attn && l.reads_cache_of < 0) attn = &l;
    if (is_state(l.kind) && !state) state = &l;
    mla |= l.kind == LayerKind::kMla || l.kind == LayerKind::kSparseMla;
  }
  if (attn == nullptr || state == nullptr) return block;
  const int64_t a = std::max<int64_t>({16, block, mla ? 128 : 0});
  const int64_t chunk = model.mamba_chunk_size > 0 ? model.mamba_chunk_size : 2048;
  const int64_t l = std::lcm(chunk, a);
  const auto p_attn = static_cast<int64_t>(std::ceil(attention_bytes_per_token(*attn, kv, tp)));
  const int64_t tokens = (state_bytes(*state, dt, tp) + p_attn - 1) / p_attn;
  return static_cast<int>(std::max<int64_t>(block, l * ((tokens + l - 1) / l)));
}

}  // namespace

int64_t blocks_to_admit(const EngineConfig& c, int64_t len) {
  const int64_t usable = c.layout.num_blocks - 1;  // block 0 is vLLM's null block
  const int64_t groups = std::max<int64_t>(static_cast<int64_t>(c.layout.groups.size()), 1);
  const int64_t at_least = len / c.layout.block_size + 1;
  // One block per token covers any group layout: only a small pool needs the count.
  if (usable / groups > at_least + 1) return at_least;
  int64_t needed = KvCacheCoordinator(c, c.max_num_batched_tokens).blocks_for_request(len);
  if (c.step_policy == StepPolicy::kSglang) needed = std::max(needed, at_least);
  return needed;
}

namespace {

// SGLang starts with a pool smaller than the context and clips requests to it (tp_worker.py: max_req_len =
// min(context_len - 1, max_total_num_tokens - 1), max_new_tokens clipped; it asserts only that the pool holds
// something), where vLLM refuses at start-up: max_model_len becomes the longest request the pool admits
// (kvsim's longest request is max_model_len - 1 tokens). A pool that admits nothing is left to the start-up
// check.
void cap_context_to_pool(EngineConfig& c) {
  const int64_t usable = c.layout.num_blocks - 1;
  const auto fits = [&](int64_t len) { return blocks_to_admit(c, len) <= usable; };
  if (fits(c.max_model_len) || !fits(2)) return;
  int64_t lo = 2, hi = c.max_model_len;  // fits(lo), !fits(hi)
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  c.max_model_len = lo;
}

}  // namespace

EngineConfig resolve_engine_config(const EngineSettings& e, const ModelSpec& model, const GpuSpec& gpu,
                                   const ResolveContext& where) {
  const std::string key = where.file + ": " + where.engine_key + ".";
  const EngineKind kind = parse_engine(e.kind, key + "kind");
  const DType kv = resolve_kv_dtype(model, e.kv_cache_dtype, key + "kv_cache_dtype");
  const std::optional<DType> wd = weight_override(model, resolve_weight_dtype(e.weight_dtype, key + "weight_dtype"));
  StateDtypes sdt;
  try {
    sdt = resolve_state_dtypes(model, e.state_dtype);
  } catch (const InputError& err) {
    throw InputError(key + "mamba_ssm_cache_dtype: " + err.what());
  }
  const Parallel par{e.tensor_parallel_size,
                     1,
                     e.data_parallel_size,
                     e.pipeline_parallel_size,
                     e.enable_expert_parallel || e.expert_parallel_size > 0,
                     e.expert_parallel_size};
  try {
    check_parallel(model, par);
  } catch (const InputError& err) {
    throw InputError(key + "tensor_parallel_size: " + err.what());
  }
  const int num_layers = static_cast<int>(model.layers.size());
  if (par.pp > num_layers)
    throw InputError(key + "pipeline_parallel_size: " + std::to_string(par.pp) + " exceeds the " +
                     std::to_string(num_layers) + " layers of " + model.name + " (every stage needs a layer)");
  if (e.expert_parallel_size > 0) {
    const std::string why = explicit_ep_problem(e.expert_parallel_size, static_cast<int64_t>(par.dp) * par.tp, kind);
    if (!why.empty())
      throw InputError(key + "expert_parallel_size: " + std::to_string(e.expert_parallel_size) + ": " + why);
  }
  if (expert_parallel_size(model, par) > model.num_experts && model.num_experts > 0)
    throw InputError(key + "enable_expert_parallel: EP = data_parallel_size x tensor_parallel_size = " +
                     std::to_string(par.dp * par.tp) + " exceeds the " + std::to_string(model.num_experts) +
                     " experts of " + model.name);
  if (const int domain = nvlink_domain(e, gpu); e.tensor_parallel_size > domain && e.tensor_parallel_size % domain != 0)
    throw InputError(key + "tensor_parallel_size: " + std::to_string(e.tensor_parallel_size) +
                     " spans NVLink domains of " + std::to_string(domain) + " GPUs (" +
                     (domain == e.gpus_per_node ? "gpus_per_node" : gpu.name + "'s nvlink_domain") +
                     ") and must then be a multiple of it");
  const bool hybrid_state = has_layer(model, is_state);
  const MambaCacheMode mode = resolve_mamba_cache_mode(e, model);
  const auto rule_block = [&](int requested) {
    if (hybrid_state && mode == MambaCacheMode::kAll && kind == EngineKind::kVllm)
      return all_mode_block_size(model, std::max(requested, 0), kv, sdt, par.tp);
    return engine_block_size(model, kind, requested, kv, sdt, par.tp);
  };
  int block = rule_block(e.block_size);
  const int default_block = e.block_size > 0 ? rule_block(0) : block;
  // block_size_multiplier: kvsim's own key (vLLM has none). A hybrid's block size follows vLLM's rule
  // from the state page, so a user cannot ask for a size directly; whole multiples of the rule's block
  // keep every group's page equal (the rule's invariant) and are what a block-size sweep of a hybrid
  // can vary.
  if (e.block_size > (1 << 24))
    throw InputError(key + "block_size: must be at most 2^24 tokens (got " + std::to_string(e.block_size) + ")");
  if (e.block_size_multiplier < 1 || static_cast<int64_t>(block) * e.block_size_multiplier > (1 << 24))
    throw InputError(key + "block_size_multiplier: must be >= 1 and keep the block size (" + std::to_string(block) +
                     " x multiplier) at most 2^24 tokens (got " + std::to_string(e.block_size_multiplier) + ")");
  block *= e.block_size_multiplier;
  // vLLM prefix_match_unit (hash_block_size): every KV cache group's block size must be divisible by it.
  // It takes effect only on hybrids in align mode with prefix caching (partial hash hits); elsewhere
  // vLLM falls back to whole-block hashing and so does kvsim (validated all the same).
  if (e.prefix_match_unit < 0 || (e.prefix_match_unit > 0 && block % e.prefix_match_unit != 0))
    throw InputError(key + "prefix_match_unit: must divide the block size " + std::to_string(block) + " (got " +
                     std::to_string(e.prefix_match_unit) + "); 0 means the block size");
  if (e.prefix_cache_retention_interval && *e.prefix_cache_retention_interval > 0 &&
      *e.prefix_cache_retention_interval % block != 0)
    throw InputError(key + "prefix_cache_retention_interval: must be a multiple of the block size " +
                     std::to_string(block) + " (got " + std::to_string(*e.prefix_cache_retention_interval) + ")");

  EngineConfig c;
  int64_t available = 0;
  // Weights per GPU follow the layout and vLLM's layers (parallel_layout.h: replicated modules whole on
  // every TP rank, experts in their own format).
  const std::vector<int64_t> stage_weights = weight_bytes_per_stage(model, wd, par);
  const int64_t weights_per_gpu = *std::max_element(stage_weights.begin(), stage_weights.end());
  MemoryRule rule;
  rule.engine = kind;
  rule.fraction = e.gpu_memory_utilization.value_or(default_memory_fraction(kind, par.tp));
  rule.reserve_bytes = e.activation_reserve.value_or(default_reserve_bytes(
      kind, static_cast<int64_t>(std::llround(gpu.activation_reserve_fraction * gpu.memory_bytes))));
  const MemoryBudget mb = kv_memory(gpu.memory_bytes, weights_per_gpu, rule);
  available = mb.kv_available;
  c.layout = build_kv_layout(model, block, kv, sdt, par, std::max<int64_t>(available, 0));
  if (par.pp > 1) {
    // Each stage caches its own layers in what its own weights leave (parallel_layout.h).
    std::vector<int64_t> stage_available;
    for (int64_t w : stage_weights) stage_available.push_back(kv_memory(gpu.memory_bytes, w, rule).kv_available);
    c.layout.num_blocks = pipeline_kv_blocks(model, block, kv, sdt, par, stage_available);
  }
  if (e.num_gpu_blocks) {
    c.layout.num_blocks = *e.num_gpu_blocks;  // vLLM num_gpu_blocks_override
  } else if (c.layout.num_blocks < 2 && available > 0 && (block != default_block || e.block_size_multiplier > 1) &&
             build_kv_layout(model, default_block, kv, sdt, par, available).num_blocks >= 2) {
    // Room for a cache of the default block size, but not for two blocks of the size asked for (the
    // null block and one more): the block size is to blame, not the weights.
    throw InputError(key + (e.block_size_multiplier > 1 ? "block_size_multiplier" : "block_size") + ": one block of " +
                     std::to_string(block) + " tokens takes " + format_bytes(c.layout.bytes_per_block) + ", and the " +
                     format_bytes(available) +
                     " left for the KV cache hold fewer than two (vLLM's null block and one more)");
  } else if (c.layout.num_blocks < 2) {
    // The key to blame: the memory fraction the user set, when the whole GPU would have held a KV cache;
    // else the GPU (too small for these weights at this layout).
    MemoryRule whole = rule;
    whole.fraction = 1.0;
    const bool fraction_to_blame =
        e.gpu_memory_utilization.has_value() && kv_memory(gpu.memory_bytes, weights_per_gpu, whole).kv_available > 0;
    const std::string fraction = std::to_string(rule.fraction).substr(0, 4);
    // TensorRT-LLM's fraction applies to what is free after the weights and the reserve; the others' to
    // the whole GPU, the weights and the reserve inside it (sizing.cpp kv_memory).
    const std::string share = kind == EngineKind::kTrtllm
                                  ? "leave " + format_bytes(std::max<int64_t>(mb.engine_share, 0)) +
                                        " free, of which the KV cache gets gpu_memory_utilization " + fraction
                                  : "do not fit in the engine's share " + format_bytes(mb.engine_share) +
                                        " (gpu_memory_utilization " + fraction + ")";
    throw InputError(
        where.file + ": " + (fraction_to_blame ? where.engine_key + ".gpu_memory_utilization" : where.gpu_key) + ": " +
        model.name + " does not fit on " + gpu.name + " (" + format_bytes(gpu.memory_bytes) + "): weights " +
        format_bytes(weights_per_gpu) + " per GPU at tensor_parallel_size " + std::to_string(par.tp) + " and reserve " +
        format_bytes(mb.reserve) + " " + share + ", leaving no room for the KV cache");
  } else if (c.layout.num_blocks > INT32_MAX) {
    // Block ids are 32-bit (a GPU file with memory in the millions of TiB gave trillions of blocks).
    throw InputError(where.file + ": " + where.gpu_key + ": " + gpu.name + "'s " + format_bytes(gpu.memory_bytes) +
                     " hold " + std::to_string(c.layout.num_blocks) +
                     " KV blocks, more than kvsim's 2^31 - 1 block ids; raise engine.block_size or set "
                     "engine.num_gpu_blocks");
  }
  // vllm/engine/arg_utils.py get_batch_defaults for `vllm serve`: >= 160 GiB: 16384 / 1024;
  // >= 70 GiB and not A100: 8192 / 1024; otherwise 2048 / 256.
  const double gib = gpu.memory_bytes / (1024.0 * 1024 * 1024);
  const bool a100 = gpu.name.find("a100") != std::string::npos;
  int tokens = 2048, seqs = 256;
  if (gib >= 160) {
    tokens = 16384;
    seqs = 1024;
  } else if (gib >= 70 && !a100) {
    tokens = 8192;
    seqs = 1024;
  }
  c.max_model_len =
      e.max_model_len.value_or(model.max_position_embeddings > 0 ? model.max_position_embeddings : 1 << 20);
  if (e.scheduler != "auto" && e.scheduler != "vllm" && e.scheduler != "sglang")
    throw InputError(key + "scheduler: must be auto, vllm or sglang (got " + quote_for_message(e.scheduler) + ")");
  const bool sglang = e.scheduler == "sglang" || (e.scheduler == "auto" && kind == EngineKind::kSglang);
  if (sglang) {
    if (e.kv_offload)
      throw InputError(key + "scheduler: SGLang's scheduler is not modelled with kv_offload (use scheduler: vllm)");
    if (e.policy != "fcfs")
      throw InputError(key + "scheduler: SGLang's scheduler is modelled with policy fcfs only (got " +
                       quote_for_message(e.policy) + ")");
    c.step_policy = StepPolicy::kSglang;
    c.max_prefill_tokens = e.max_prefill_tokens.value_or(16384);
    c.enable_mixed_chunk = e.enable_mixed_chunk.value_or(false);
    // sglang server_args.py (_handle_gpu_memory_settings): chunked_prefill_size by the GPU's memory,
    // 2048 below 35 GiB, 8192 below 160 GiB, else 16384; with DP attention (_handle_data_parallelism)
    // divided by dp_size, and schedule_conservativeness x 0.3.
    tokens = gib < 35 ? 2048 : gib < 160 ? 8192 : 16384;
    double conservativeness = 1.0;
    if (par.dp > 1) {
      tokens = std::max(tokens / par.dp, 1);
      conservativeness = 0.3;
    }
    c.init_new_token_ratio = std::min(0.7 * conservativeness, 1.0);
    c.min_new_token_ratio = std::min(c.init_new_token_ratio * 0.14, 1.0);
    c.new_token_ratio_decay = (c.init_new_token_ratio - c.min_new_token_ratio) / 600;
    // model_runner.py: max_num_reqs = min(max(max_total_num_tokens / context_len x 512, 2048), 4096).
    const double kv_tokens = static_cast<double>(c.layout.num_blocks - 1) * c.layout.block_size;
    seqs = static_cast<int>(std::clamp(kv_tokens / static_cast<double>(c.max_model_len) * 512, 2048.0, 4096.0));
  } else if (e.max_prefill_tokens || e.enable_mixed_chunk) {
    throw InputError(key + (e.max_prefill_tokens ? "max_prefill_tokens" : "enable_mixed_chunk") +
                     ": SGLang's option; it needs scheduler sglang (or kind sglang)");
  }
  c.max_num_batched_tokens = e.max_num_batched_tokens.value_or(tokens);
  c.max_num_seqs = e.max_num_seqs.value_or(seqs);
  c.enable_prefix_caching = e.enable_prefix_caching;
  c.enable_chunked_prefill = e.enable_chunked_prefill;
  c.long_prefill_token_threshold = e.long_prefill_token_threshold;
  c.policy = e.policy;
  c.watermark = e.watermark;
  for (const LayerSpec& l : model.layers)
    if (l.kind == LayerKind::kSparseMla) c.sparse_topk = l.attn.index_topk;
  c.scheduler_reserve_full_isl = e.scheduler_reserve_full_isl;
  c.mamba_cache_mode = mode;
  c.prefix_cache_retention_interval = e.prefix_cache_retention_interval.value_or(kRetentionDense);
  if (kind == EngineKind::kVllm) c.window_retention_interval = c.prefix_cache_retention_interval;
  c.shared_prefix_checkpoint = e.shared_prefix_checkpoint;
  c.miss_attribution = e.miss_attribution;
  c.prefix_match_unit = e.prefix_match_unit;
  c.default_block_size = default_block;
  c.kv_connector_partial_hybrid_hits = e.kv_connector_partial_hybrid_hits;
  if (sglang) cap_context_to_pool(c);
  return c;
}

}  // namespace kvsim
