#include "sim/model/parallel_layout.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

#include "sim/core/check.h"
#include "sim/core/errors.h"

namespace kvsim {
namespace {

int moe_layers_in(const ModelSpec& m, int first, int count) {
  int n = 0;
  for (int i = first; i < first + count && i < static_cast<int>(m.layers.size()); ++i) n += m.layers[i].moe ? 1 : 0;
  return n;
}

}  // namespace

std::vector<StageRange> pipeline_stages(int num_layers, int pp) {
  std::vector<int> parts(static_cast<size_t>(std::max(pp, 1)), num_layers / std::max(pp, 1));
  const int remaining = num_layers % std::max(pp, 1);
  // vllm/distributed/utils.py get_pp_indices: for i in range(2, remaining + 2): partitions[-i] += 1
  for (int i = 2; i < remaining + 2; ++i) ++parts[parts.size() - static_cast<size_t>(i)];
  std::vector<StageRange> out;
  int first = 0;
  for (int c : parts) {
    out.push_back({first, c});
    first += c;
  }
  return out;
}

int64_t expert_params(const ModelSpec& m) {
  if (m.num_experts <= 0) return 0;
  const int64_t moe = moe_layers_in(m, 0, static_cast<int>(m.layers.size()));
  return moe * m.num_experts * 3 * m.hidden_size * m.moe_intermediate_size;
}

int64_t embedding_params(const ModelSpec& m) { return (m.tie_word_embeddings ? 1 : 2) * m.vocab_size * m.hidden_size; }

int expert_parallel_size(const ModelSpec& m, const Parallel& par) {
  if (!par.expert_parallel || m.num_experts <= 0) return 1;
  if (par.ep > 0) return par.ep;
  const int64_t ep = static_cast<int64_t>(par.dp) * par.tp;  // check_layout bounds dp and tp; no wrap
  KVSIM_CHECK(ep >= 1 && ep <= INT32_MAX, "expert parallel size " << ep);
  return static_cast<int>(ep);
}

int moe_tensor_parallel_size(const ModelSpec& m, const Parallel& par) {
  const int64_t gpus = static_cast<int64_t>(par.dp) * par.tp;
  const int ep = expert_parallel_size(m, par);
  KVSIM_CHECK(gpus % ep == 0, "EP size " << ep << " does not divide dp x tp = " << gpus);
  return static_cast<int>(gpus / ep);
}

double expert_weight_share(const ModelSpec& m, const Parallel& par) {
  const int ep = expert_parallel_size(m, par);
  const double local =
      ep > 1 && m.num_experts > 0 ? static_cast<double>(experts_per_rank(m, par)) / m.num_experts : 1.0;
  return local / moe_tensor_parallel_size(m, par);
}

int experts_per_rank(const ModelSpec& m, const Parallel& par) {
  const int ep = expert_parallel_size(m, par);
  return (m.num_experts + ep - 1) / ep;
}

ModelSpec stage_model(const ModelSpec& m, const StageRange& stage, bool last) {
  ModelSpec s = m;
  const int total_layers = static_cast<int>(m.layers.size());
  s.layers.assign(m.layers.begin() + stage.first, m.layers.begin() + stage.first + stage.count);
  // Cross-layer sharing points into the whole model; inside a stage a layer that reads a layer of an
  // earlier stage is treated as owning its cache (each stage stores the caches of its own layers).
  for (LayerSpec& l : s.layers)
    l.reads_cache_of = l.reads_cache_of >= stage.first ? l.reads_cache_of - stage.first : -1;
  const double share = total_layers > 0 ? static_cast<double>(stage.count) / total_layers : 0.0;
  const int moe_total = moe_layers_in(m, 0, total_layers);
  const double moe_share =
      moe_total > 0 ? static_cast<double>(moe_layers_in(m, stage.first, stage.count)) / moe_total : 0;
  const double emb = static_cast<double>(embedding_params(m));
  const double experts = static_cast<double>(expert_params(m));
  const double body = static_cast<double>(m.params) - emb - experts;
  const double active = static_cast<double>(m.active_params > 0 ? m.active_params : m.params) - emb;
  // Only the last stage runs the LM head; a stage without it has no vocabulary at all, so neither
  // model prices logits or reads a head there. The first stage's embedding is a gather, not a read.
  s.params = std::llround(body * share + experts * moe_share + (last ? emb : 0.0));
  s.active_params = std::llround(active * share + (last ? emb : 0.0));
  if (!last) {
    s.vocab_size = 0;
    s.tie_word_embeddings = false;
  }
  return s;
}

int64_t weight_bytes_per_gpu(const ModelSpec& m, std::optional<DType> weight, const Parallel& par) {
  const std::vector<int64_t> stages = weight_bytes_per_stage(m, weight, par);
  return *std::max_element(stages.begin(), stages.end());
}

std::vector<int64_t> weight_bytes_per_stage(const ModelSpec& m, std::optional<DType> weight, const Parallel& par) {
  const int64_t total = weight_bytes(m, weight);
  if (par.tp == 1 && par.dp == 1 && par.pp == 1 && !par.expert_parallel) return {total};
  const double n = static_cast<double>(m.params + m.vision_params);
  const double table = static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size);
  const double experts = static_cast<double>(expert_params(m));
  const double body = static_cast<double>(m.params) - static_cast<double>(embedding_params(m)) - experts;
  // Bytes per parameter of each part. One dtype for every weight (--weight-dtype): the average. The
  // checkpoint's own: the routed experts in theirs, the embeddings, LM head and vision tower in 16 bits,
  // the rest (attention, dense MLPs, shared experts, norms, routers) the remaining bytes; a mixed
  // checkpoint's average under-counted the parts every DP rank or stage holds whole (gpt-oss at DP 8 x
  // EP: 9.2 GB per GPU where BF16 attention + 16 of 128 MXFP4 experts are 11.9 GB).
  double body_b = n > 0 ? static_cast<double>(total) / n : 0.0, expert_b = body_b, table_b = body_b;
  if (!weight) {
    table_b = 2.0;
    if (experts > 0) expert_b = static_cast<double>(m.checkpoint_expert_bytes) / experts;
    const double rest = static_cast<double>(total) - static_cast<double>(m.checkpoint_expert_bytes) -
                        2.0 * (static_cast<double>(embedding_params(m)) + static_cast<double>(m.vision_params));
    body_b = body > 0 ? rest / body : 0.0;
  }
  // One TP rank's bytes of a fraction f of the layer body: modules vLLM keeps whole (ReplicatedLinear,
  // norms, routers) on every rank, K / V projections over min(TP, KV heads) ranks, the rest over TP
  // (DeepSeek-V3 at TP 8: its replicated a-projections and routers add 1.0 GB a GPU to total / 8).
  const auto part_bytes = [&](const ModelSpec::WeightPart& p) {
    return weight ? static_cast<double>(p.params) * body_b : static_cast<double>(p.bytes);
  };
  const auto body_rank = [&](double f) {
    const double whole = f * part_bytes(m.tp_replicated);
    double kv_rank = 0, kv_all = 0;
    for (const auto& [heads, p] : m.kv_projections) {
      kv_all += f * part_bytes(p);
      kv_rank += f * part_bytes(p) / std::min(par.tp, std::max(heads, 1));
    }
    return whole + kv_rank + (f * body * body_b - whole - kv_all) / par.tp;
  };
  const int layers = static_cast<int>(m.layers.size());
  const int moe_total = moe_layers_in(m, 0, layers);
  // The busiest expert rank: ceil(E / EP) experts, each split moe_tp ways (1 / (DP x TP) without EP).
  const double expert_share = expert_weight_share(m, par);
  const std::vector<StageRange> stages = pipeline_stages(layers, par.pp);
  std::vector<int64_t> out;
  for (size_t i = 0; i < stages.size(); ++i) {
    const bool first = i == 0, last = i + 1 == stages.size();
    const double f = static_cast<double>(stages[i].count) / std::max(layers, 1);
    double tables = 0;  // embedding, LM head, vision tower
    if (first && last)
      tables = static_cast<double>(embedding_params(m)) + static_cast<double>(m.vision_params);
    else if (first)
      tables = table + static_cast<double>(m.vision_params);
    else if (last)
      tables = table;  // the LM head (with tied embeddings, vLLM's last stage keeps its own copy)
    const double moe = moe_total > 0 ? experts * moe_layers_in(m, stages[i].first, stages[i].count) / moe_total : 0.0;
    out.push_back(
        static_cast<int64_t>(std::ceil(body_rank(f) + table_b * tables / par.tp + expert_b * moe * expert_share)));
  }
  return out;
}

int64_t pipeline_kv_blocks(const ModelSpec& m, int block_size, DType kv, const StateDtypes& dt, const Parallel& par,
                           const std::vector<int64_t>& stage_available) {
  const std::vector<StageRange> stages = pipeline_stages(static_cast<int>(m.layers.size()), par.pp);
  int64_t blocks = INT64_MAX;
  for (size_t i = 0; i < stages.size() && i < stage_available.size(); ++i) {
    const ModelSpec sm = stage_model(m, stages[i], i + 1 == stages.size());
    blocks = std::min(
        blocks, build_kv_layout(sm, block_size, kv, dt, par, std::max<int64_t>(stage_available[i], 0)).num_blocks);
  }
  return blocks;
}

int64_t pipeline_kv_bytes_per_token(const ModelSpec& m, DType kv, const Parallel& par) {
  if (par.pp <= 1) return kv_bytes_per_token(m, kv, par.tp);
  const std::vector<StageRange> stages = pipeline_stages(static_cast<int>(m.layers.size()), par.pp);
  int64_t most = 0;
  for (size_t i = 0; i < stages.size(); ++i)
    most = std::max(most, kv_bytes_per_token(stage_model(m, stages[i], i + 1 == stages.size()), kv, par.tp));
  return most;
}

std::string explicit_ep_problem(int ep, int64_t dp_tp, EngineKind engine) {
  if (ep < 1 || dp_tp % ep != 0)
    return "must divide dp x tp = " + std::to_string(dp_tp) + " (each expert is then tensor-split dp x tp / ep ways)";
  if (engine == EngineKind::kVllm && ep != dp_tp)
    return "vLLM's EP size is dp x tp = " + std::to_string(dp_tp) +
           " (fused_moe/config.py); a smaller one is SGLang's or TensorRT-LLM's";
  return "";
}

void check_layout(const ModelSpec& m, const Parallel& par) {
  check_parallel(m, par);
  if (par.dp < 1 || par.dp > 4096)
    throw InputError("--dp must be in [1, 4096] (got " + std::to_string(par.dp) + ")");  // as data_parallel_size
  if (par.pp < 1) throw InputError("--pp must be >= 1 (got " + std::to_string(par.pp) + ")");
  const int layers = static_cast<int>(m.layers.size());
  if (par.pp > layers)
    throw InputError("--pp " + std::to_string(par.pp) + " exceeds the " + std::to_string(layers) + " layers of " +
                     m.name + " (every pipeline stage needs at least one layer)");
  if (par.expert_parallel && par.ep != 0) {
    const std::string why = explicit_ep_problem(par.ep, static_cast<int64_t>(par.dp) * par.tp, EngineKind::kSglang);
    if (!why.empty()) throw InputError("--ep " + std::to_string(par.ep) + ": " + why);
  }
  const int ep = expert_parallel_size(m, par);
  if (ep > m.num_experts && m.num_experts > 0)
    throw InputError("expert parallel size " + std::to_string(ep) + (par.ep > 0 ? "" : " (dp x tp)") + " exceeds the " +
                     std::to_string(m.num_experts) + " experts of " + m.name);
}

}  // namespace kvsim
