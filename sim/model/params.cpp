#include "sim/model/params.h"

#include "sim/core/errors.h"

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
int64_t attention_params(const ModelSpec& s, const LayerSpec& l, const JsonValue& c) {
  const int64_t h = s.hidden_size, H = s.num_attention_heads, hd = l.attn.head_dim, kv = l.attn.num_kv_heads;
  const std::string& mt = s.model_type;
  const bool gated = mt == "qwen3_next" || flag(c, "attn_output_gate");
  int64_t p = h * H * hd * (gated ? 2 : 1) + 2 * h * kv * hd + H * hd * h;
  if (flag(c, "attention_bias")) p += H * hd + 2 * kv * hd + h;  // qkv and o biases (gpt-oss)
  if (starts_with(mt, "qwen3")) p += 2 * hd;                     // q_norm, k_norm
  if (mt == "gpt_oss") p += H;                                   // attention sinks
  return p;
}

int64_t mla_params(const ModelSpec& s, const LayerSpec& l, const JsonValue& c) {
  const int64_t h = s.hidden_size, H = s.num_attention_heads;
  const int64_t q_lora = get(c, "q_lora_rank", 0), nope = get(c, "qk_nope_head_dim", 128),
                rope = l.attn.qk_rope_head_dim, v = get(c, "v_head_dim", 128), r = l.attn.kv_lora_rank;
  int64_t p = 0;
  if (q_lora > 0)
    p += h * q_lora + q_lora + q_lora * H * (nope + rope);  // q_a_proj, q_a_layernorm, q_b_proj
  else
    p += h * H * (nope + rope);
  p += h * (r + rope) + r + r * H * (nope + v) + H * v * h;  // kv_a_proj, kv_a_layernorm, kv_b_proj, o_proj
  if (l.kind == LayerKind::kSparseMla) {
    // Lightning indexer: wq_b, wk, k_norm (LayerNorm weight + bias), weights_proj.
    const int64_t ih = get(c, "index_n_heads", 64), id = l.attn.index_head_dim;
    p += q_lora * ih * id + h * id + 2 * id + h * ih;
  }
  return p;
}

int64_t mamba2_params(const ModelSpec& s, const LayerSpec& l) {
  const int64_t h = s.hidden_size, nh = l.state.ssm_heads, d_inner = nh * l.state.ssm_head_dim;
  const int64_t conv_dim = l.state.conv_dim, kernel = l.state.conv_rows + 1;
  const int64_t in_proj = h * (2 * d_inner + 2 * l.state.n_groups * l.state.ssm_state_dim + nh);
  return in_proj + conv_dim * kernel + conv_dim /*conv bias*/ + 3 * nh /*dt_bias, A_log, D*/ + d_inner /*norm*/ +
         d_inner * h;
}

int64_t gdn_params(const ModelSpec& s, const LayerSpec& l) {
  const int64_t h = s.hidden_size, nv = l.state.ssm_heads, dv = l.state.ssm_head_dim;
  const int64_t value_dim = nv * dv, key_dim = (l.state.conv_dim - value_dim) / 2;
  return h * (2 * key_dim + 2 * value_dim) /*in_proj_qkvz*/ + h * 2 * nv /*in_proj_ba*/ +
         l.state.conv_dim * (l.state.conv_rows + 1) /*conv1d*/ + 2 * nv /*dt_bias, A_log*/ + dv /*norm*/ +
         value_dim * h /*out_proj*/;
}

int64_t rwkv6_params(const ModelSpec& s, const JsonValue& c) {
  const int64_t h = s.hidden_size;
  const int64_t ffn = get(c, "intermediate_size", 0) > 0 ? get(c, "intermediate_size", 0) : (h * 7 / 2) / 32 * 32;
  const int64_t mix_lora = h == 4096 ? 64 : 32, decay_lora = h == 4096 ? 128 : 64;  // HF rwkv6 TIME_MIX/DECAY dims
  const int64_t att_hidden = get(c, "attention_hidden_size", h);
  int64_t p = 4 * h;                                           // ln1, ln2 (weight + bias)
  p += 6 * h + h * 5 * mix_lora + 5 * mix_lora * h;            // time_maa_{x,w,k,v,r,g}, w1, w2
  p += att_hidden + h * decay_lora + decay_lora * att_hidden;  // time_decay, w1, w2
  p += att_hidden;                                             // time_faaaa
  p += 4 * h * att_hidden + att_hidden * h + 2 * att_hidden;   // r, k, v, g, output, ln_x
  p += 2 * h + h * ffn + h * h + ffn * h;                      // channel mix
  return p;
}

// Feed-forward part of one layer; returns total and adds the unused routed experts to `inactive`.
int64_t ffn_params(const ModelSpec& s, const LayerSpec& l, const JsonValue& c, int64_t* inactive) {
  const int64_t h = s.hidden_size;
  const std::string& mt = s.model_type;
  if (l.kind == LayerKind::kRwkv6) return 0;  // counted with the block
  if (mt == "nemotron_h") {
    if (l.kind != LayerKind::kNone) return 0;  // one mixer per block: Mamba, attention or MLP
    return 2 * h * s.intermediate_size;        // relu2: up and down, no gate
  }
  if (l.kind == LayerKind::kMamba2) return 0;
  if (mt == "RefinedWebModel" || mt == "RefinedWeb" || mt == "falcon") return 2 * h * 4 * h;
  if (!l.moe) return 3 * h * s.intermediate_size;
  const int64_t E = s.num_experts, k = s.experts_per_token, mi = s.moe_intermediate_size;
  int64_t expert = 3 * h * mi;
  int64_t router = h * E;
  if (mt == "gpt_oss") {
    expert = h * 2 * mi + 2 * mi + mi * h + h;  // gate_up and down with biases
    router += E;
  }
  if (c.find("n_routed_experts")) router += E;  // DeepSeek e_score_correction_bias
  int64_t shared = s.shared_expert_intermediate_size > 0 ? 3 * h * s.shared_expert_intermediate_size : 0;
  if (mt == "qwen3_next" && shared > 0) shared += h;  // shared_expert_gate
  *inactive += (E - k) * expert;
  return router + E * expert + shared;
}

int64_t vision_params(const JsonValue& v, int64_t out_hidden_default) {
  // Qwen3-VL vision tower: patch embed (3D conv), learned positions, ViT blocks with LayerNorm and
  // GELU MLP (all with biases), the patch merger and one deepstack merger per listed layer.
  const int64_t w = get(v, "hidden_size", 0), depth = get(v, "depth", 0), I = get(v, "intermediate_size", 0);
  const int64_t patch = get(v, "patch_size", 14), tps = get(v, "temporal_patch_size", 2),
                in_ch = get(v, "in_channels", 3), merge = get(v, "spatial_merge_size", 2),
                npos = get(v, "num_position_embeddings", 0), out = get(v, "out_hidden_size", out_hidden_default);
  int64_t p = in_ch * tps * patch * patch * w + w + npos * w;
  const int64_t block = 4 * w /*2 LayerNorms*/ + 3 * w * w + 3 * w + w * w + w + 2 * w * I + I + w;
  p += depth * block;
  const int64_t mw = w * merge * merge;
  const int64_t merger = 2 * w + mw * mw + mw + mw * out + out;        // norm over w, two linear layers
  const int64_t deep_merger = 2 * mw + mw * mw + mw + mw * out + out;  // deepstack norm over merged width
  int64_t n_deep = 0;
  if (const JsonValue* d = v.find("deepstack_visual_indexes"); d && d->is_array())
    n_deep = static_cast<int64_t>(d->array().size());
  return p + merger + n_deep * deep_merger;
}

}  // namespace

void count_params(const JsonValue& doc, const JsonValue& c, ModelSpec& s) {
  const int64_t h = s.hidden_size;
  const std::string& mt = s.model_type;
  const bool layer_norm_bias =
      mt == "RefinedWebModel" || mt == "RefinedWeb" || mt == "falcon" || starts_with(mt, "rwkv");
  Counts n;
  n.total = s.vocab_size * h * (s.tie_word_embeddings ? 1 : 2);
  n.total += layer_norm_bias ? 2 * h : h;         // final norm
  if (starts_with(mt, "rwkv")) n.total += 2 * h;  // ln0 before the first block
  for (const LayerSpec& l : s.layers) {
    int64_t p = 0;
    switch (l.kind) {
      case LayerKind::kFullAttention:
      case LayerKind::kSlidingWindow:
        p += attention_params(s, l, c);
        break;
      case LayerKind::kMla:
      case LayerKind::kSparseMla:
        p += mla_params(s, l, c);
        break;
      case LayerKind::kMamba2:
        p += mamba2_params(s, l);
        break;
      case LayerKind::kGatedDeltaNet:
        p += gdn_params(s, l);
        break;
      case LayerKind::kRwkv6:
        p += rwkv6_params(s, c);
        break;
      case LayerKind::kNone:
        break;
    }
    p += ffn_params(s, l, c, &n.inactive);
    if (mt == "nemotron_h")
      p += h;  // one RMSNorm per block
    else if (mt == "RefinedWebModel" || mt == "RefinedWeb" || mt == "falcon")
      p += 2 * h;  // parallel attention: one LayerNorm with bias
    else if (l.kind != LayerKind::kRwkv6)
      p += 2 * h;  // input and post-attention RMSNorms
    // The reader bounds every size so one layer's count fits; the sum over layers is checked.
    if (__builtin_add_overflow(n.total, p, &n.total) || n.total > kMaxParams || n.inactive > kMaxParams)
      throw InputError(s.path + ": the sizes give over " + std::to_string(kMaxParams) +
                       " parameters; check num_hidden_layers, hidden_size and the expert sizes");
  }
  s.params = n.total;
  s.active_params = n.total - n.inactive;
  if (const JsonValue* v = doc.find("vision_config"); v && v->is_object()) {
    s.vision_params = vision_params(*v, h);
    if (s.vision_params > kMaxParams)
      throw InputError(s.path + ": vision_config sizes give over " + std::to_string(kMaxParams) + " parameters");
  }
}

}  // namespace kvsim
