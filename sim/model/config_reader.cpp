#include "sim/model/config_reader.h"

#include <climits>
#include <cmath>
#include <filesystem>

#include "sim/core/errors.h"
#include "sim/model/params.h"
#include "sim/model/quantization.h"

namespace kvsim {
namespace {

// Reads keys of one config object and names file, key and model type in every error.
class ConfigView {
 public:
  static constexpr int64_t kMin = INT64_MIN;
  static constexpr int64_t kMax = INT64_MAX;

  ConfigView(const JsonValue& obj, std::string source, std::string model_type)
      : obj_(obj), source_(std::move(source)), model_type_(std::move(model_type)) {}

  const JsonValue* get(const std::string& key) const {
    const JsonValue* v = obj_.find(key);
    return (v && !v->is_null()) ? v : nullptr;
  }
  bool has(const std::string& key) const { return get(key) != nullptr; }

  // Every size is range-checked where it is read: a zero, negative or absurd value is an error naming
  // the key instead of a division by zero, a huge allocation or a wrapped byte count later on.
  int64_t integer(const std::string& key, int64_t lo = kMin, int64_t hi = kMax) const {
    const JsonValue* v = get(key);
    if (!v) missing(key);
    return in_range(as_int(*v, key), key, lo, hi);
  }
  int64_t integer_or(const std::string& key, int64_t fallback, int64_t lo = kMin, int64_t hi = kMax) const {
    const JsonValue* v = get(key);
    return v ? in_range(as_int(*v, key), key, lo, hi) : fallback;
  }
  int64_t in_range(int64_t x, const std::string& key, int64_t lo, int64_t hi) const {
    if (x < lo || x > hi)
      fail(key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "] (got " + std::to_string(x) + ")");
    return x;
  }
  bool boolean_or(const std::string& key, bool fallback) const {
    const JsonValue* v = get(key);
    if (!v) return fallback;
    if (!v->is_bool()) fail(key, "must be true or false");
    return v->boolean();
  }
  std::string string_or(const std::string& key, const std::string& fallback) const {
    const JsonValue* v = get(key);
    if (!v) return fallback;
    if (!v->is_string()) fail(key, "must be a string");
    return v->str();
  }
  // First present key of several spellings.
  int64_t integer_any(std::initializer_list<const char*> keys, int64_t lo = kMin, int64_t hi = kMax) const {
    for (const char* k : keys)
      if (has(k)) return integer(k, lo, hi);
    std::string names;
    for (const char* k : keys) names += (names.empty() ? "" : "' or '") + std::string(k);
    missing(names);
  }

  [[noreturn]] void missing(const std::string& key) const {
    throw InputError(source_ + ": missing key '" + key + "' needed to size model_type " +
                     quote_for_message(model_type_));
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw InputError(source_ + ": key '" + key + "' " + what + " (model_type " + quote_for_message(model_type_) + ")");
  }
  const std::string& source() const { return source_; }
  const std::string& model_type() const { return model_type_; }

 private:
  int64_t as_int(const JsonValue& v, const std::string& key) const {
    if (!v.is_number()) fail(key, "must be a number");
    if (v.is_integer()) return v.integer();
    const double d = v.number();
    if (!(std::fabs(d) < 9.0e18))  // json_number writes NaN and the infinities as null
      fail(key, "must be an integer in range (got " +
                    (std::isnan(d)   ? std::string("NaN")
                     : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity")
                                     : json_number(d)) +
                    ")");
    if (d != static_cast<double>(static_cast<int64_t>(d))) fail(key, "must be an integer");
    return static_cast<int64_t>(d);
  }
  const JsonValue& obj_;
  std::string source_;
  std::string model_type_;
};

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// Upper bounds far above any real model that keep every product in sizing and parameter counting
// inside int64 (and every layer index and block size inside int).
constexpr int64_t kMaxLayers = 1 << 14;
constexpr int64_t kMaxHidden = 1 << 20;
constexpr int64_t kMaxVocab = 1 << 24;
constexpr int64_t kMaxFfn = 1 << 22;
constexpr int64_t kMaxHeads = 1 << 14;
constexpr int64_t kMaxDim = 1 << 14;  // head dims, ranks, state sizes
constexpr int64_t kMaxRank = 1 << 16;
constexpr int64_t kMaxKernel = 1 << 10;
constexpr int64_t kMaxExperts = 1 << 14;
constexpr int64_t kMaxTokens = int64_t{1} << 40;  // context lengths, windows

AttentionShape gqa_shape(const ConfigView& c, ModelSpec& spec) {
  AttentionShape a;
  spec.num_attention_heads = static_cast<int>(c.integer_any({"num_attention_heads", "n_head"}, 1, kMaxHeads));
  a.num_kv_heads =
      static_cast<int>(c.integer_or("num_key_value_heads", spec.num_attention_heads, 1, spec.num_attention_heads));
  if (spec.num_attention_heads % a.num_kv_heads != 0)
    c.fail("num_key_value_heads", "(" + std::to_string(a.num_kv_heads) + ") must divide num_attention_heads (" +
                                      std::to_string(spec.num_attention_heads) + ")");
  if (c.has("head_dim"))
    a.head_dim = static_cast<int>(c.integer("head_dim", 1, kMaxDim));
  else if (c.has("attention_head_dim"))  // Nemotron-H spelling
    a.head_dim = static_cast<int>(c.integer("attention_head_dim", 1, kMaxDim));
  else
    a.head_dim = static_cast<int>(spec.hidden_size / spec.num_attention_heads);
  if (a.head_dim <= 0) c.fail("num_attention_heads", "exceeds hidden_size, so head_dim would be 0");
  spec.head_dim = a.head_dim;
  return a;
}

StateShape mamba2_state(const ConfigView& c, int64_t hidden) {
  // vLLM mamba_utils.py MambaStateShapeCalculator.mamba2_state_shape (tp = 1).
  StateShape s;
  const int64_t heads = c.integer_any({"mamba_num_heads", "mamba_n_heads"}, 1, kMaxHeads);
  const int64_t head_dim = c.integer_any({"mamba_head_dim", "mamba_d_head"}, 1, kMaxDim);
  const int64_t d_state = c.integer_any({"ssm_state_size", "mamba_d_state", "state_size"}, 1, kMaxDim);
  const int64_t groups = c.integer_any({"n_groups", "mamba_n_groups"}, 1, kMaxHeads);
  const int64_t kernel = c.integer_any({"conv_kernel", "mamba_d_conv"}, 1, kMaxKernel);
  const int64_t d_inner = heads * head_dim;
  (void)hidden;
  s.conv_dim = d_inner + 2 * groups * d_state;
  s.conv_rows = static_cast<int>(kernel - 1);
  s.ssm_heads = heads;
  s.ssm_head_dim = head_dim;
  s.ssm_state_dim = d_state;
  s.n_groups = static_cast<int>(groups);
  return s;
}

StateShape gdn_state(const ConfigView& c) {
  // vLLM mamba_utils.py gated_delta_net_state_shape (tp = 1).
  StateShape s;
  const int64_t nk = c.integer("linear_num_key_heads", 1, kMaxHeads);
  const int64_t nv = c.integer("linear_num_value_heads", 1, kMaxHeads);
  const int64_t dk = c.integer("linear_key_head_dim", 1, kMaxDim);
  const int64_t dv = c.integer("linear_value_head_dim", 1, kMaxDim);
  const int64_t kernel = c.integer("linear_conv_kernel_dim", 1, kMaxKernel);
  s.conv_dim = 2 * nk * dk + nv * dv;
  s.conv_rows = static_cast<int>(kernel - 1);
  s.ssm_heads = nv;
  s.ssm_head_dim = dv;
  s.ssm_state_dim = dk;
  return s;
}

LayerSpec attention_layer(const AttentionShape& a, int window) {
  LayerSpec l;
  l.kind = window > 0 ? LayerKind::kSlidingWindow : LayerKind::kFullAttention;
  l.attn = a;
  l.attn.window = window;
  return l;
}

void read_layers(const ConfigView& c, const JsonValue& cfg, ModelSpec& spec) {
  const std::string& mt = spec.model_type;
  const int n = static_cast<int>(c.integer_any({"num_hidden_layers", "n_layer", "num_layers"}, 1, kMaxLayers));
  spec.layers.assign(n, LayerSpec{});

  // RWKV-6: no attention at all; heads = attention_hidden_size / head_size (no num_attention_heads).
  if (starts_with(mt, "rwkv")) {
    const int64_t att_hidden = c.integer_or("attention_hidden_size", spec.hidden_size, 1, kMaxHidden);
    const int64_t head_size = c.integer("head_size", 1, att_hidden);
    c.integer_or("intermediate_size", 0, 0, kMaxFfn);
    for (auto& l : spec.layers) {
      l.kind = LayerKind::kRwkv6;
      l.state.conv_dim = 2 * spec.hidden_size;  // token shift of time-mix and channel-mix
      l.state.conv_rows = 1;
      l.state.ssm_heads = att_hidden / head_size;
      l.state.ssm_head_dim = head_size;
      l.state.ssm_state_dim = head_size;
    }
    return;
  }

  // MLA (DeepSeek): one latent row per token; num_key_value_heads is not used.
  if (c.has("kv_lora_rank")) {
    spec.num_attention_heads = static_cast<int>(c.integer("num_attention_heads", 1, kMaxHeads));
    AttentionShape a;
    a.kv_lora_rank = static_cast<int>(c.integer("kv_lora_rank", 1, kMaxRank));
    a.qk_rope_head_dim = static_cast<int>(c.integer("qk_rope_head_dim", 0, kMaxDim));
    const bool sparse = c.has("index_head_dim") || mt == "deepseek_v32";
    if (sparse) {
      a.index_head_dim = static_cast<int>(c.integer("index_head_dim", 1, kMaxDim));
      a.index_n_heads = static_cast<int>(c.integer_or("index_n_heads", 64, 1, kMaxHeads));
      // The lightning indexer picks index_topk earlier tokens per query (DeepSeek-V3.2: 2048); the
      // cache still stores every token.
      a.index_topk = static_cast<int>(c.integer_or("index_topk", 2048, 1, 1LL << 30));
    }
    a.num_kv_heads = 1;
    a.head_dim = a.kv_lora_rank + a.qk_rope_head_dim;
    spec.head_dim = static_cast<int>(c.integer_or("qk_nope_head_dim", 128, 0, kMaxDim) + a.qk_rope_head_dim);
    a.q_lora_rank = static_cast<int>(c.integer_or("q_lora_rank", 0, 0, kMaxRank));
    a.v_head_dim = static_cast<int>(c.integer_or("v_head_dim", 128, 1, kMaxDim));
    const int64_t first_dense = c.integer_or("first_k_dense_replace", 0, 0, n);
    const int64_t freq = c.integer_or("moe_layer_freq", 1, 1, n);
    for (int i = 0; i < n; ++i) {
      spec.layers[i].kind = sparse ? LayerKind::kSparseMla : LayerKind::kMla;
      spec.layers[i].attn = a;
      spec.layers[i].moe = spec.num_experts > 0 && i >= first_dense && (i % freq == 0);
    }
    return;
  }

  // Falcon's old keys: multi_query means one KV head unless new_decoder_architecture, even when a
  // num_kv_heads key is present (HF FalconAttention).
  if (c.has("multi_query") || mt == "RefinedWebModel" || mt == "RefinedWeb" || mt == "falcon") {
    AttentionShape a;
    spec.num_attention_heads = static_cast<int>(c.integer_any({"num_attention_heads", "n_head"}, 1, kMaxHeads));
    a.head_dim = static_cast<int>(spec.hidden_size / spec.num_attention_heads);
    if (a.head_dim <= 0) c.fail("num_attention_heads", "exceeds hidden_size, so head_dim would be 0");
    const bool new_arch = c.boolean_or("new_decoder_architecture", false);
    if (new_arch) {
      a.num_kv_heads = static_cast<int>(c.integer_any({"num_kv_heads", "n_head_kv"}, 1, spec.num_attention_heads));
      if (spec.num_attention_heads % a.num_kv_heads != 0)
        c.fail(c.has("num_kv_heads") ? "num_kv_heads" : "n_head_kv",
               "(" + std::to_string(a.num_kv_heads) + ") must divide num_attention_heads (" +
                   std::to_string(spec.num_attention_heads) + ")");
    } else if (c.boolean_or("multi_query", false))
      a.num_kv_heads = 1;
    else
      a.num_kv_heads = spec.num_attention_heads;
    spec.head_dim = a.head_dim;
    for (auto& l : spec.layers) l = attention_layer(a, 0);
    return;
  }

  // Nemotron-H: hybrid_override_pattern, M = Mamba2, * = attention, - = MLP, E = MoE.
  if (const JsonValue* pat = c.get("hybrid_override_pattern")) {
    if (!pat->is_string()) c.fail("hybrid_override_pattern", "must be a string");
    const std::string& p = pat->str();
    if (static_cast<int>(p.size()) != n)
      c.fail("hybrid_override_pattern",
             "has " + std::to_string(p.size()) + " entries but num_hidden_layers is " + std::to_string(n));
    AttentionShape a;
    bool have_attn = p.find('*') != std::string::npos;
    if (have_attn) a = gqa_shape(c, spec);
    StateShape ms;
    if (p.find('M') != std::string::npos) ms = mamba2_state(c, spec.hidden_size);
    for (int i = 0; i < n; ++i) {
      switch (p[i]) {
        case 'M':
          spec.layers[i].kind = LayerKind::kMamba2;
          spec.layers[i].state = ms;
          break;
        case '*':
          spec.layers[i] = attention_layer(a, 0);
          break;
        case '-':
          spec.layers[i].kind = LayerKind::kNone;
          break;
        case 'E':
          spec.layers[i].kind = LayerKind::kNone;
          spec.layers[i].moe = true;
          break;
        default:
          c.fail("hybrid_override_pattern", std::string("has unknown layer code '") + p[i] + "'");
      }
    }
    return;
  }

  AttentionShape a = gqa_shape(c, spec);
  // Qwen2-style configs: transformers sets sliding_window = None unless use_sliding_window, and vLLM
  // then gives a "sliding_attention" layer no window (qwen2.py: config.sliding_window if is_sliding).
  const bool window_off = c.has("use_sliding_window") && !c.boolean_or("use_sliding_window", false);
  const int64_t window = window_off ? 0 : c.integer_or("sliding_window", 0, 0, INT_MAX);
  // Gemma-4: full-attention (global) layers have heads and width of their own, and with
  // attention_k_eq_v their keys double as values (HF Gemma4TextAttention: no v_proj there).
  AttentionShape global = a;
  if (c.has("num_global_key_value_heads") || c.has("global_head_dim")) {
    global.num_kv_heads =
        static_cast<int>(c.integer_or("num_global_key_value_heads", a.num_kv_heads, 1, spec.num_attention_heads));
    if (spec.num_attention_heads % global.num_kv_heads != 0)
      c.fail("num_global_key_value_heads", "(" + std::to_string(global.num_kv_heads) +
                                               ") must divide num_attention_heads (" +
                                               std::to_string(spec.num_attention_heads) + ")");
    global.head_dim = static_cast<int>(c.integer_or("global_head_dim", a.head_dim, 1, kMaxDim));
  }
  global.k_eq_v = c.boolean_or("attention_k_eq_v", false);

  // layer_types: gpt-oss, Qwen3.5, Gemma-3 and newer configs state every layer.
  if (const JsonValue* lt = c.get("layer_types")) {
    if (!lt->is_array() || static_cast<int>(lt->array().size()) != n)
      c.fail("layer_types", "must be a list with one entry per layer (" + std::to_string(n) + ")");
    StateShape gs;
    bool need_gdn = false;
    for (const auto& t : lt->array()) need_gdn |= t.is_string() && t.str() == "linear_attention";
    if (need_gdn) gs = gdn_state(c);
    for (int i = 0; i < n; ++i) {
      const JsonValue& t = lt->array()[i];
      const std::string s = t.is_string() ? t.str() : "";
      if (s == "full_attention" || s == "attention") {
        spec.layers[i] = attention_layer(global, 0);
      } else if ((s == "sliding_attention" || s == "sliding_window") && window_off) {
        spec.layers[i] = attention_layer(a, 0);
      } else if (s == "sliding_attention" || s == "sliding_window") {
        if (window <= 0) c.missing("sliding_window");
        spec.layers[i] = attention_layer(a, static_cast<int>(window));
      } else if (s == "linear_attention") {
        spec.layers[i].kind = LayerKind::kGatedDeltaNet;
        spec.layers[i].state = gs;
      } else {
        c.fail("layer_types", "has unknown layer type " + quote_for_message(s) + " at index " + std::to_string(i));
      }
    }
  } else if (c.has("full_attention_interval")) {
    // Qwen3-Next: layer i is full attention when (i + 1) % interval == 0, else gated DeltaNet.
    const int64_t interval = c.integer("full_attention_interval");
    if (interval <= 0 || interval > n)
      c.fail("full_attention_interval",
             "must be in [1, num_hidden_layers " + std::to_string(n) + "] (got " + std::to_string(interval) + ")");
    StateShape gs = gdn_state(c);
    for (int i = 0; i < n; ++i) {
      if ((i + 1) % interval == 0) {
        spec.layers[i] = attention_layer(a, 0);
      } else {
        spec.layers[i].kind = LayerKind::kGatedDeltaNet;
        spec.layers[i].state = gs;
      }
    }
  } else {
    // Model-type conventions for sliding windows.
    for (int i = 0; i < n; ++i) {
      int w = 0;
      if (window > 0) {
        if (mt == "gemma2") {
          w = (i % 2 == 0) ? static_cast<int>(window) : 0;  // even layers slide (HF Gemma2)
        } else if (mt == "gemma3" || mt == "gemma3_text") {
          const int64_t pattern = c.integer_or("sliding_window_pattern", 6, 1, kMaxLayers);
          w = ((i + 1) % pattern != 0) ? static_cast<int>(window) : 0;
        } else if (mt == "mistral" || mt == "mixtral") {
          w = static_cast<int>(window);  // one sliding_window applies to every layer
        } else if (c.boolean_or("use_sliding_window", false)) {
          // Qwen2-style: layers at or beyond max_window_layers slide.
          // Qwen2.5-32B / 72B ship max_window_layers 70 over 64 / 80 layers: beyond the layers, none slides.
          w = (i >= c.integer_or("max_window_layers", 0, 0, kMaxLayers)) ? static_cast<int>(window) : 0;
        }
      }
      spec.layers[i] = attention_layer(a, w);
    }
  }
  // MoE layers (Qwen-MoE, gpt-oss, Qwen3-Next): every layer unless mlp_only_layers / sparse step.
  if (spec.num_experts > 0) {
    // A step of 0 or below, or beyond the layers, left no MoE layer at all (30.5 B parameters read as 3.3 B).
    const int64_t step = c.integer_or("decoder_sparse_step", 1, 1, n);
    std::vector<bool> mlp_only(n, false);
    if (const JsonValue* m = c.get("mlp_only_layers")) {
      if (!m->is_array()) c.fail("mlp_only_layers", "must be a list of layer indices");
      for (const auto& v : m->array()) {
        if (!v.is_integer() || v.integer() < 0 || v.integer() >= n)
          c.fail("mlp_only_layers", "must hold layer indices in [0, " + std::to_string(n - 1) + "]");
        mlp_only[static_cast<size_t>(v.integer())] = true;
      }
    }
    for (int i = 0; i < n; ++i) spec.layers[i].moe = !mlp_only[i] && step > 0 && ((i + 1) % step == 0);
  }
}

// rope_scaling (or a flat rope_parameters) for the context-length warning of `kvsim size`.
void read_rope(const ConfigView& c, ModelSpec& spec) {
  const JsonValue* r = c.get("rope_scaling");
  if (!r) r = c.get("rope_parameters");
  if (!r || !r->is_object()) return;
  const JsonValue* type = r->find("rope_type");
  if (!type) type = r->find("type");
  if (type && type->is_string()) spec.rope_type = type->str();
  if (const JsonValue* f = r->find("factor"); f && f->is_number() && f->number() > 0 && f->number() < 1e6)
    spec.rope_factor = f->number();
  if (const JsonValue* o = r->find("original_max_position_embeddings");
      o && o->is_number() && o->number() > 0 && o->number() < 1e12)
    spec.rope_original_max_position_embeddings = static_cast<int64_t>(o->number());
}

}  // namespace

ModelSpec model_from_json(const JsonValue& doc, const std::string& source, const std::string& name) {
  if (!doc.is_object()) throw InputError(source + ": a model config must be a JSON object");
  const JsonValue* text = doc.find("text_config");
  // A text_config that is not an object was ignored, the outer keys read instead.
  if (text && !text->is_null() && !text->is_object())
    throw InputError(source + ": text_config: must be an object (the language model's keys)");
  const JsonValue& cfg = (text && text->is_object()) ? *text : doc;
  ModelSpec spec;
  spec.name = name;
  spec.path = source;
  {
    const JsonValue* mt = cfg.find("model_type");
    if (!mt || !mt->is_string()) mt = doc.find("model_type");
    spec.model_type = (mt && mt->is_string()) ? mt->str() : "";
  }
  if (spec.model_type.empty()) throw InputError(source + ": missing key 'model_type'");
  if (const JsonValue* arch = doc.find("architectures");
      arch && arch->is_array() && !arch->array().empty() && arch->array()[0].is_string())
    spec.architecture = arch->array()[0].str();
  ConfigView c(cfg, source, spec.model_type);
  ConfigView top(doc, source, spec.model_type);

  spec.hidden_size = c.integer_any({"hidden_size", "n_embd", "d_model"}, 1, kMaxHidden);
  spec.vocab_size = c.integer_or("vocab_size", top.integer_or("vocab_size", 0, 1, kMaxVocab), 1, kMaxVocab);
  if (spec.vocab_size <= 0) c.missing("vocab_size");
  spec.intermediate_size = c.integer_or("intermediate_size", 0, 0, kMaxFfn);
  spec.max_position_embeddings = c.integer_or(
      "max_position_embeddings",
      c.integer_or("context_length", c.integer_or("max_seq_len", 0, 0, kMaxTokens), 0, kMaxTokens), 0, kMaxTokens);
  // Falcon's RWConfig ties the head to the embedding unless told otherwise (HF default true).
  const bool tie_default =
      spec.model_type == "RefinedWebModel" || spec.model_type == "RefinedWeb" || spec.model_type == "falcon";
  spec.tie_word_embeddings = c.boolean_or("tie_word_embeddings", top.boolean_or("tie_word_embeddings", tie_default));
  spec.torch_dtype = c.string_or("torch_dtype", c.string_or("dtype", top.string_or("torch_dtype", "")));
  // The checkpoint dtype prices the unquantised weights: an unknown name must not pass as bfloat16.
  static const char* const kTorchDtypes[] = {"", "bfloat16", "float16", "float32", "half", "float", "auto"};
  if (std::find(std::begin(kTorchDtypes), std::end(kTorchDtypes), spec.torch_dtype) == std::end(kTorchDtypes))
    c.fail(c.has("torch_dtype") ? "torch_dtype" : "dtype",
           "unknown dtype " + quote_for_message(spec.torch_dtype) + " (known: bfloat16, float16, float32)");
  if (spec.torch_dtype == "half") spec.torch_dtype = "float16";
  spec.num_experts = static_cast<int>(c.integer_or(
      "num_experts",
      c.integer_or("n_routed_experts", c.integer_or("num_local_experts", 0, 0, kMaxExperts), 0, kMaxExperts), 0,
      kMaxExperts));
  if (spec.num_experts > 0) {
    spec.experts_per_token = static_cast<int>(
        c.integer_any({"num_experts_per_tok", "experts_per_token", "top_k_experts"}, 1, spec.num_experts));
    // Mixtral-style configs (mixtral, gpt_oss, minimax) size the experts with intermediate_size; the Qwen,
    // DeepSeek, Kimi and GLM config classes have a moe_intermediate_size of their own, whose class default
    // is not intermediate_size (Qwen3MoeConfig: 768): a config without it is refused there.
    const bool own_key = starts_with(spec.model_type, "qwen") || starts_with(spec.model_type, "deepseek") ||
                         starts_with(spec.model_type, "kimi") || starts_with(spec.model_type, "glm");
    if (own_key && !c.has("moe_intermediate_size")) c.missing("moe_intermediate_size");
    spec.moe_intermediate_size = c.integer_or("moe_intermediate_size", spec.intermediate_size, 1, kMaxFfn);
    spec.shared_expert_intermediate_size = c.integer_or("shared_expert_intermediate_size", 0, 0, kMaxFfn);
    if (c.has("n_shared_experts"))
      spec.shared_expert_intermediate_size = c.integer("n_shared_experts", 0, 64) * spec.moe_intermediate_size;
  }
  spec.ssm_state_dtype_hint = c.string_or("mamba_ssm_dtype", c.string_or("mamba_ssm_cache_dtype", ""));
  spec.mamba_chunk_size = static_cast<int>(
      c.integer_or("chunk_size", c.integer_or("mamba_chunk_size", 0, 0, kMaxTokens >> 20), 0, kMaxTokens >> 20));

  read_layers(c, cfg, spec);
  // A dense gated MLP is sized by intermediate_size, whose config-class defaults differ by model (Qwen3
  // 22016, Llama 11008): without the key it was read as 0, an MLP of nothing.
  if (spec.intermediate_size == 0) {
    const bool falcon =
        spec.model_type == "RefinedWebModel" || spec.model_type == "RefinedWeb" || spec.model_type == "falcon";
    for (const LayerSpec& l : spec.layers) {
      const bool dense_mlp = spec.model_type == "nemotron_h"
                                 ? l.kind == LayerKind::kNone && !l.moe
                                 : !l.moe && l.kind != LayerKind::kRwkv6 && l.kind != LayerKind::kMamba2 && !falcon;
      if (dense_mlp) c.missing("intermediate_size");
    }
  }
  // Flags the parameter count reads: a non-boolean was read as false.
  c.boolean_or("attention_bias", false);
  const bool gate = c.boolean_or("attn_output_gate", false);  // checked whatever the model type
  spec.attn_output_gate = spec.model_type == "qwen3_next" || gate;

  if (const JsonValue* vis = doc.find("vision_config"); vis && !vis->is_null() && !vis->is_object())
    throw InputError(source + ": vision_config: must be an object (a string or number was read as no vision tower)");
  if (const JsonValue* vis = doc.find("vision_config"); vis && vis->is_object()) {
    ConfigView v(*vis, source + " (vision_config)", spec.model_type);
    spec.has_vision = true;
    spec.vision_patch_size = static_cast<int>(v.integer("patch_size", 1, 1 << 10));
    spec.vision_spatial_merge = static_cast<int>(v.integer_or("spatial_merge_size", 1, 1, 8));
    // Kimi-K2.5 (MoonViT): merge_kernel_size [2, 2] folds 2 x 2 patches into one LLM token.
    if (const JsonValue* mk = v.get("merge_kernel_size")) {
      if (!mk->is_array() || mk->array().size() != 2 || !mk->array()[0].is_integer() ||
          mk->array()[0].integer() != mk->array()[1].integer() || mk->array()[0].integer() < 1 ||
          mk->array()[0].integer() > 8)
        v.fail("merge_kernel_size", "must be [k, k] with k in [1, 8]");
      spec.vision_spatial_merge = static_cast<int>(mk->array()[0].integer());
    }
    // Gemma-3 / Gemma-4: every image becomes a fixed number of soft tokens, whatever its size.
    spec.vision_soft_tokens_per_image = top.integer_or(
        "vision_soft_tokens_per_image", top.integer_or("mm_tokens_per_image", 0, 0, 1 << 20), 0, 1 << 20);
    for (const char* k : {"vt_hidden_size", "vt_num_hidden_layers", "vt_intermediate_size", "init_pos_emb_height",
                          "init_pos_emb_width", "init_pos_emb_time", "text_hidden_size"})
      v.integer_or(k, 0, 0, kMaxFfn);  // read by the parameter count (MoonViT)
    // Read by the parameter count.
    v.integer_or("hidden_size", 0, 0, kMaxDim);
    v.integer_or("depth", 0, 0, kMaxLayers >> 4);
    v.integer_or("num_hidden_layers", 0, 0, kMaxLayers >> 4);  // the depth of towers without `depth`
    v.integer_or("intermediate_size", 0, 0, kMaxFfn >> 4);
    v.integer_or("temporal_patch_size", 2, 1, 16);
    v.integer_or("in_channels", 3, 1, 16);
    v.integer_or("num_position_embeddings", 0, 0, kMaxFfn);
    v.integer_or("out_hidden_size", spec.hidden_size, 1, kMaxHidden);
  }
  read_rope(c, spec);
  {
    const JsonValue* q = cfg.find("quantization_config");
    if (!q || q->is_null()) q = doc.find("quantization_config");
    if (q && !q->is_null()) spec.quant = read_quantization(*q, source + ": quantization_config");
  }
  count_params(doc, cfg, spec);
  return spec;
}

ModelSpec read_model_config(const std::string& path) {
  const JsonValue doc = parse_json_file(path);
  return model_from_json(doc, path, std::filesystem::path(path).stem().string());
}

void apply_cla(ModelSpec& spec, int factor) {
  if (factor < 2) return;
  // Adjacent attention layers in groups of `factor` read the first one's cache (Brandon et al.).
  int first = -1, in_group = 0;
  for (int i = 0; i < static_cast<int>(spec.layers.size()); ++i) {
    if (!is_attention(spec.layers[i].kind)) continue;
    if (in_group == 0) {
      first = i;
    } else {
      spec.layers[i].reads_cache_of = first;
    }
    in_group = (in_group + 1) % factor;
  }
}

void apply_yoco(ModelSpec& spec, int window) {
  // YOCO: the self-decoder (first half) keeps a sliding window of W tokens per layer; the
  // cross-decoder (second half) reads one shared global cache, written once (Sun et al.).
  const int n = static_cast<int>(spec.layers.size());
  const int half = n / 2;
  int shared = -1;
  for (int i = 0; i < n; ++i) {
    LayerSpec& l = spec.layers[i];
    if (!is_attention(l.kind)) continue;
    if (i < half) {
      if (l.kind == LayerKind::kFullAttention || l.kind == LayerKind::kSlidingWindow) {
        l.kind = LayerKind::kSlidingWindow;
        l.attn.window = window;
      }
    } else if (shared < 0) {
      shared = i;
      if (l.kind == LayerKind::kSlidingWindow) l.kind = LayerKind::kFullAttention;
      l.attn.window = 0;
    } else {
      l.kind = spec.layers[shared].kind;
      l.attn = spec.layers[shared].attn;
      l.reads_cache_of = shared;
    }
  }
}

}  // namespace kvsim
