#include "sim/model/params.h"

#include "sim/core/errors.h"
#include "sim/model/quantization.h"

namespace kvsim {
namespace {

// 2^55 parameters: far above any model, and weight bytes at 32 bits per parameter still fit int64.
constexpr int64_t kMaxParams = int64_t{1} << 55;

int64_t get(const JsonValue& c, const char* key, int64_t fallback) {
  const JsonValue* v = c.find(key);
  return (v && v->is_number()) ? static_cast<int64_t>(v->number()) : fallback;
}
bool flag(const JsonValue& c, const char* key) {
  const JsonValue* v = c.find(key);
  return v && v->is_bool() && v->boolean();
}
bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

struct Counts {
  int64_t total = 0;
  int64_t inactive = 0;  // routed-expert weights a token does not use
};

// GQA attention block (projections, optional biases, QK-norm, gated output, sinks).
int64_t attention_params(const ModelSpec& s, const LayerSpec& l, const JsonValue& c, WeightTally& w,
                         const std::string& at) {
  const int64_t h = s.hidden_size, H = s.num_attention_heads, hd = l.attn.head_dim, kv = l.attn.num_kv_heads;
  const std::string& mt = s.model_type;
  const bool gated = mt == "qwen3_next" || flag(c, "attn_output_gate");
  // Gemma-4 global layers with attention_k_eq_v have no v_proj: values are the keys.
  const int64_t kv_proj = l.attn.k_eq_v ? 1 : 2;
  const int kvh = static_cast<int>(kv);
  int64_t p = w.linear(at + "self_attn.q_proj", H * hd * (gated ? 2 : 1), h) +
              w.kv_linear(at + "self_attn.k_proj", kv * hd, h, kvh) + w.linear(at + "self_attn.o_proj", h, H * hd);
  if (!l.attn.k_eq_v) p += w.kv_linear(at + "self_attn.v_proj", kv * hd, h, kvh);
  if (flag(c, "attention_bias")) p += w.other(H * hd + kv_proj * kv * hd + h);  // qkv and o biases (gpt-oss)
  if (starts_with(mt, "qwen3")) p += w.replicated_other(2 * hd);                // q_norm, k_norm
  if (mt == "gpt_oss") p += w.other(H);                                         // attention sinks
  return p;
}

int64_t mla_params(const ModelSpec& s, const LayerSpec& l, const JsonValue& c, WeightTally& w, const std::string& at) {
  const int64_t h = s.hidden_size, H = s.num_attention_heads;
  const int64_t q_lora = get(c, "q_lora_rank", 0), nope = get(c, "qk_nope_head_dim", 128),
                rope = l.attn.qk_rope_head_dim, v = get(c, "v_head_dim", 128), r = l.attn.kv_lora_rank;
  const std::string a = at + "self_attn.";
  int64_t p = 0;
  if (q_lora > 0)
    p += w.replicated(a + "q_a_proj", q_lora, h) + w.replicated_other(q_lora) /*q_a_layernorm*/ +
         w.linear(a + "q_b_proj", H * (nope + rope), q_lora);
  else
    p += w.linear(a + "q_proj", H * (nope + rope), h);
  // vLLM deepseek_v2.py: the a-projections are ReplicatedLinear (whole on every TP rank), so is the
  // sparse indexer ("no tensor parallel, just replicated"), whose weights_proj stays BF16 (quant_config
  // None) whatever the checkpoint's scheme.
  p += w.replicated(a + "kv_a_proj_with_mqa", r + rope, h) + w.replicated_other(r) /*kv_a_layernorm*/ +
       w.linear(a + "kv_b_proj", H * (nope + v), r) + w.linear(a + "o_proj", h, H * v);
  if (l.kind == LayerKind::kSparseMla) {
    // Lightning indexer: wq_b, wk, k_norm (LayerNorm weight + bias), weights_proj.
    const int64_t ih = get(c, "index_n_heads", 64), id = l.attn.index_head_dim;
    p += w.replicated(a + "indexer.wq_b", ih * id, q_lora) + w.replicated(a + "indexer.wk", id, h) +
         w.replicated_other(2 * id) + w.replicated_other(ih * h) /*weights_proj*/;
  }
  return p;
}

int64_t mamba2_params(const ModelSpec& s, const LayerSpec& l, WeightTally& w, const std::string& at) {
  const int64_t h = s.hidden_size, nh = l.state.ssm_heads, d_inner = nh * l.state.ssm_head_dim;
  const int64_t conv_dim = l.state.conv_dim, kernel = l.state.conv_rows + 1;
  const int64_t in_proj =
      w.linear(at + "mixer.in_proj", 2 * d_inner + 2 * l.state.n_groups * l.state.ssm_state_dim + nh, h);
  return in_proj + w.other(conv_dim * kernel + conv_dim /*conv bias*/ + 3 * nh /*dt_bias, A_log, D*/ + d_inner) +
         w.linear(at + "mixer.out_proj", h, d_inner);
}

int64_t gdn_params(const ModelSpec& s, const LayerSpec& l, WeightTally& w, const std::string& at) {
  const int64_t h = s.hidden_size, nv = l.state.ssm_heads, dv = l.state.ssm_head_dim;
  const int64_t value_dim = nv * dv, key_dim = (l.state.conv_dim - value_dim) / 2;
  return w.linear(at + "linear_attn.in_proj_qkvz", 2 * key_dim + 2 * value_dim, h) +
         w.linear(at + "linear_attn.in_proj_ba", 2 * nv, h) +
         w.other(l.state.conv_dim * (l.state.conv_rows + 1) /*conv1d*/ + 2 * nv /*dt_bias, A_log*/ + dv /*norm*/) +
         w.linear(at + "linear_attn.out_proj", h, value_dim);
}

int64_t rwkv6_params(const ModelSpec& s, const JsonValue& c, WeightTally& w, const std::string& at) {
  const int64_t h = s.hidden_size;
  const int64_t ffn = get(c, "intermediate_size", 0) > 0 ? get(c, "intermediate_size", 0) : (h * 7 / 2) / 32 * 32;
  const int64_t mix_lora = h == 4096 ? 64 : 32, decay_lora = h == 4096 ? 128 : 64;  // HF rwkv6 TIME_MIX/DECAY dims
  const int64_t att_hidden = get(c, "attention_hidden_size", h);
  int64_t p = w.other(4 * h);                                           // ln1, ln2 (weight + bias)
  p += w.other(6 * h + h * 5 * mix_lora + 5 * mix_lora * h);            // time_maa_{x,w,k,v,r,g}, w1, w2
  p += w.other(att_hidden + h * decay_lora + decay_lora * att_hidden);  // time_decay, w1, w2
  p += w.other(att_hidden);                                             // time_faaaa
  for (const char* m : {"receptance", "key", "value", "gate"}) p += w.linear(at + "attention." + m, att_hidden, h);
  p += w.linear(at + "attention.output", h, att_hidden) + w.other(2 * att_hidden);  // output, ln_x
  p += w.other(2 * h) + w.linear(at + "feed_forward.key", ffn, h) + w.linear(at + "feed_forward.receptance", h, h) +
       w.linear(at + "feed_forward.value", h, ffn);  // channel mix
  return p;
}

// Feed-forward part of one layer; returns total and adds the unused routed experts to `inactive`.
int64_t ffn_params(const ModelSpec& s, const LayerSpec& l, const JsonValue& c, int64_t* inactive, WeightTally& w,
                   const std::string& at) {
  const int64_t h = s.hidden_size;
  const std::string& mt = s.model_type;
  if (l.kind == LayerKind::kRwkv6) return 0;  // counted with the block
  if (mt == "nemotron_h") {
    if (l.kind != LayerKind::kNone) return 0;  // one mixer per block: Mamba, attention or MLP
    // relu2: up and down, no gate
    return w.linear(at + "mixer.up_proj", s.intermediate_size, h) +
           w.linear(at + "mixer.down_proj", h, s.intermediate_size);
  }
  if (l.kind == LayerKind::kMamba2) return 0;
  if (mt == "RefinedWebModel" || mt == "RefinedWeb" || mt == "falcon")
    return w.linear(at + "mlp.dense_h_to_4h", 4 * h, h) + w.linear(at + "mlp.dense_4h_to_h", h, 4 * h);
  if (!l.moe)
    return w.linear(at + "mlp.gate_proj", s.intermediate_size, h) +
           w.linear(at + "mlp.up_proj", s.intermediate_size, h) +
           w.linear(at + "mlp.down_proj", h, s.intermediate_size);
  const int64_t E = s.num_experts, k = s.experts_per_token, mi = s.moe_intermediate_size;
  const std::string ex = at + "mlp.experts.";
  int64_t experts = 0;
  int64_t router = w.replicated_other(h * E);  // routers stay in 16 bits, whole on every TP rank
  if (mt == "gpt_oss") {
    // gate_up and down with biases
    experts = w.linear(ex + "gate_up_proj", 2 * mi, h, E) + w.expert_other(E * 2 * mi) +
              w.linear(ex + "down_proj", h, mi, E) + w.expert_other(E * h);
    router += w.replicated_other(E);
  } else {
    experts = w.linear(ex + "gate_proj", mi, h, E) + w.linear(ex + "up_proj", mi, h, E) +
              w.linear(ex + "down_proj", h, mi, E);
  }
  if (c.find("n_routed_experts")) router += w.replicated_other(E);  // DeepSeek e_score_correction_bias
  int64_t shared = 0;
  if (const int64_t si = s.shared_expert_intermediate_size; si > 0) {
    const std::string sh =
        at + (mt == "qwen3_next" || starts_with(mt, "qwen2_moe") ? "mlp.shared_expert." : "mlp.shared_experts.");
    shared = w.linear(sh + "gate_proj", si, h) + w.linear(sh + "up_proj", si, h) + w.linear(sh + "down_proj", h, si);
    if (mt == "qwen3_next") shared += w.replicated_other(h);  // shared_expert_gate
  }
  *inactive += (E - k) * (experts / E);
  return router + experts + shared;
}

// Vision towers are counted in 128 bits: every size is bounded by the reader, their products are not
// (MoonViT's 4,194,304-wide keys gave 7e19 parameters, wrapped).
using Wide = __int128;

Wide vision_params(const JsonValue& v, int64_t out_hidden_default) {
  // Qwen3-VL vision tower: patch embed (3D conv), learned positions, ViT blocks with LayerNorm and
  // GELU MLP (all with biases), the patch merger and one deepstack merger per listed layer. Other
  // ViT-style towers (Gemma) are counted with the same block, depth from num_hidden_layers.
  const Wide w = get(v, "hidden_size", 0), depth = get(v, "depth", get(v, "num_hidden_layers", 0)),
             I = get(v, "intermediate_size", 0);
  const Wide patch = get(v, "patch_size", 14), tps = get(v, "temporal_patch_size", 2), in_ch = get(v, "in_channels", 3),
             merge = get(v, "spatial_merge_size", 2), npos = get(v, "num_position_embeddings", 0),
             out = get(v, "out_hidden_size", out_hidden_default);
  Wide p = in_ch * tps * patch * patch * w + w + npos * w;
  const Wide block = 4 * w /*2 LayerNorms*/ + 3 * w * w + 3 * w + w * w + w + 2 * w * I + I + w;
  p += depth * block;
  const Wide mw = w * merge * merge;
  const Wide merger = 2 * w + mw * mw + mw + mw * out + out;        // norm over w, two linear layers
  const Wide deep_merger = 2 * mw + mw * mw + mw + mw * out + out;  // deepstack norm over merged width
  Wide n_deep = 0;
  if (const JsonValue* d = v.find("deepstack_visual_indexes"); d && d->is_array())
    n_deep = static_cast<Wide>(d->array().size());
  return p + merger + n_deep * deep_merger;
}

// Kimi-K2.5 MoonViT (vt_* keys): patch embed (conv, bias), learned 2-D positions
// init_pos_emb_height x init_pos_emb_width (the temporal embedding is not counted), blocks of
// two LayerNorms, fused qkv and output projection (biases), a GELU MLP of vt_intermediate_size (biases),
// a final LayerNorm, then the patch merger projector: LayerNorm over vt_hidden_size, linear
// (vt_hidden_size x merge^2) -> same, linear -> text_hidden_size, with biases.
Wide moonvit_params(const JsonValue& v, int64_t out_hidden_default) {
  const Wide w = get(v, "vt_hidden_size", 0), depth = get(v, "vt_num_hidden_layers", 0),
             I = get(v, "vt_intermediate_size", 0), patch = get(v, "patch_size", 14), in_ch = get(v, "in_channels", 3),
             pos = Wide{get(v, "init_pos_emb_height", 0)} * get(v, "init_pos_emb_width", 0),
             out = get(v, "text_hidden_size", out_hidden_default);
  Wide merge = 2 * 2;
  if (const JsonValue* m = v.find("merge_kernel_size"); m && m->is_array() && m->array().size() == 2)
    merge = static_cast<Wide>(m->array()[0].number()) * static_cast<Wide>(m->array()[1].number());
  const Wide block = 4 * w + 3 * w * w + 3 * w + w * w + w + 2 * w * I + I + w;
  const Wide mw = w * merge;
  return in_ch * patch * patch * w + w + pos * w + depth * block + 2 * w /*final norm*/ + 2 * w + mw * mw + mw +
         mw * out + out;
}

}  // namespace

void count_params(const JsonValue& doc, const JsonValue& c, ModelSpec& s) {
  const int64_t h = s.hidden_size;
  const std::string& mt = s.model_type;
  const bool layer_norm_bias =
      mt == "RefinedWebModel" || mt == "RefinedWeb" || mt == "falcon" || starts_with(mt, "rwkv");
  WeightTally w(s.quant);
  Counts n;
  // Embedding and lm_head stay in 16 bits under every scheme kvsim reads (vLLM quantises neither).
  n.total = w.other(s.vocab_size * h * (s.tie_word_embeddings ? 1 : 2));
  n.total += w.replicated_other(layer_norm_bias ? 2 * h : h);  // final norm
  if (starts_with(mt, "rwkv")) n.total += w.other(2 * h);      // ln0 before the first block
  for (size_t i = 0; i < s.layers.size(); ++i) {
    const LayerSpec& l = s.layers[i];
    const std::string at = "model.layers." + std::to_string(i) + ".";
    int64_t p = 0;
    switch (l.kind) {
      case LayerKind::kFullAttention:
      case LayerKind::kSlidingWindow:
        p += attention_params(s, l, c, w, at);
        break;
      case LayerKind::kMla:
      case LayerKind::kSparseMla:
        p += mla_params(s, l, c, w, at);
        break;
      case LayerKind::kMamba2:
        p += mamba2_params(s, l, w, at);
        break;
      case LayerKind::kGatedDeltaNet:
        p += gdn_params(s, l, w, at);
        break;
      case LayerKind::kRwkv6:
        p += rwkv6_params(s, c, w, at);
        break;
      case LayerKind::kNone:
        break;
    }
    p += ffn_params(s, l, c, &n.inactive, w, at);
    // Norms: whole on every TP rank.
    if (mt == "nemotron_h")
      p += w.replicated_other(h);  // one RMSNorm per block
    else if (mt == "RefinedWebModel" || mt == "RefinedWeb" || mt == "falcon")
      p += w.replicated_other(2 * h);  // parallel attention: one LayerNorm with bias
    else if (l.kind != LayerKind::kRwkv6)
      p += w.replicated_other(2 * h);  // input and post-attention RMSNorms
    // The reader bounds every size so one layer's count fits; the sum over layers is checked.
    if (__builtin_add_overflow(n.total, p, &n.total) || n.total > kMaxParams || n.inactive > kMaxParams)
      throw InputError(s.path + ": the sizes give over " + std::to_string(kMaxParams) +
                       " parameters; check num_hidden_layers, hidden_size and the expert sizes");
  }
  s.params = n.total;
  s.active_params = n.total - n.inactive;
  if (const JsonValue* v = doc.find("vision_config"); v && v->is_object()) {
    const Wide vp = v->find("vt_hidden_size") ? moonvit_params(*v, h) : vision_params(*v, h);
    if (vp > kMaxParams || vp < 0)
      throw InputError(s.path + ": vision_config sizes give over " + std::to_string(kMaxParams) + " parameters");
    s.vision_params = static_cast<int64_t>(vp);
  }
  // The vision tower is kept in 16 bits (Kimi-K2.5 and gpt-oss-style configs ignore it).
  s.quantized_params = w.quantized_params();
  s.quantized_dense_params = w.quantized_dense_params();
  s.checkpoint_weight_bytes = (s.params + s.vision_params - s.quantized_params) * 2 + (w.quantized_bits() + 7) / 8;
  s.checkpoint_expert_bytes = w.expert_bytes();
  s.tp_replicated = {w.replicated_part().params, (w.replicated_part().bits + 7) / 8};
  s.kv_projections.clear();
  for (const auto& [heads, part] : w.kv_parts())
    s.kv_projections.push_back({heads, {part.params, (part.bits + 7) / 8}});
}

}  // namespace kvsim
