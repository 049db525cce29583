#include "sim/app/size_checks.h"

#include <algorithm>

#include "sim/core/errors.h"
#include "sim/model/json.h"

namespace kvsim {
namespace {

// One request of the longest context must fit beside the null block; else search the TP sizes above.
bool fits_at(const ModelSpec& spec, const SizeOptions& opt, const SizeReport& r, int tp, int64_t longest) {
  MemoryRule rule;
  rule.engine = opt.engine;
  rule.fraction = opt.memory_fraction.value_or(default_memory_fraction(opt.engine, tp));
  rule.reserve_bytes = r.memory->reserve;
  const MemoryBudget m = kv_memory(opt.gpu->memory_bytes, (r.weight_bytes + tp - 1) / tp, rule);
  if (m.kv_available <= 0) return false;
  const Parallel par{tp, tp == opt.par.tp ? opt.par.dcp : 1};
  try {
    const int block = engine_block_size(spec, opt.engine, opt.block_size, r.kv_dtype, r.state_dtypes, tp);
    const KvCacheLayout layout = build_kv_layout(spec, block, r.kv_dtype, r.state_dtypes, par, m.kv_available);
    return layout.num_blocks - 1 >= blocks_per_request(layout, longest, par.dcp);
  } catch (const InputError&) {
    return false;  // a split the model's shapes do not allow
  }
}

}  // namespace

void check_fit(const ModelSpec& spec, const SizeOptions& opt, SizeReport& r) {
  int64_t longest = 1;
  for (const auto& c : r.contexts) longest = std::max(longest, c.tokens);
  if (opt.par.dp > 1 || opt.par.pp > 1 || opt.par.expert_parallel)
    // The layout as given (weights and blocks per parallel_layout.h); the search below is over TP alone.
    r.fits =
        r.memory->kv_available > 0 && r.layout.num_blocks - 1 >= blocks_per_request(r.layout, longest, opt.par.dcp);
  else
    r.fits = fits_at(spec, opt, r, opt.par.tp, longest);
  if (r.fits) return;
  for (int n = opt.par.tp + 1; n <= 1024 && r.tp_needed == 0; ++n) {
    if (!fits_at(spec, opt, r, n, longest)) continue;
    if (r.gpus_needed == 0) r.gpus_needed = n;  // memory alone, however the model is split
    try {
      check_parallel(spec, Parallel{n, 1});
      r.tp_needed = n;
    } catch (const InputError&) {
      // the heads do not split n ways
    }
  }
}

namespace {

// 131072 -> "131,072" (token counts, never negative).
std::string digits(int64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(i, ",");
  return s;
}

}  // namespace

void add_context_warnings(const ModelSpec& spec, SizeReport& r) {
  const int64_t max_pos = spec.max_position_embeddings;
  if (max_pos <= 0) return;
  int64_t longest = 0;
  for (const auto& c : r.contexts) longest = std::max(longest, c.tokens);
  if (longest <= max_pos) return;
  const int64_t base =
      spec.rope_original_max_position_embeddings > 0 ? spec.rope_original_max_position_embeddings : max_pos;
  const int64_t factor = (longest + base - 1) / base;
  std::string w = spec.name + ": context " + digits(longest) + " tokens is longer than max_position_embeddings " +
                  digits(max_pos) + "; ";
  // A model without attention (RWKV, Mamba) has no RoPE to scale: only the length it was trained on.
  bool attention = false;
  for (const LayerSpec& l : spec.layers) attention = attention || is_attention(l.kind);
  if (!attention) {
    r.warnings.push_back(spec.name + ": context " + digits(longest) +
                         " tokens is longer than max_position_embeddings " + digits(max_pos) +
                         ", the context the model was trained on");
    return;
  }
  if (!spec.rope_type.empty() && spec.rope_type != "default")
    w += "the config's rope_scaling (" + spec.rope_type +
         (spec.rope_factor > 0 ? ", factor " + json_number(spec.rope_factor) : "") + ") stops there, ";
  w += "RoPE scaling by " + std::to_string(factor) + "x over " + digits(base) +
       " tokens would allow it (vLLM: --hf-overrides '{\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": " +
       std::to_string(factor) + ".0, \"original_max_position_embeddings\": " + std::to_string(base) +
       "}}' --max-model-len " + std::to_string(longest) + ")";
  r.warnings.push_back(w);
}

}  // namespace kvsim
