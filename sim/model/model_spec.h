#pragma once
// ModelSpec: what a Hugging Face config.json says about a model, reduced to what serving needs.
// One LayerSpec per layer, each of one kind. Everything else (bytes per token, state size, weights,
// block sizes, capacity) is derived in sizing.h from this struct alone.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/model/dtype.h"

namespace kvsim {

enum class LayerKind {
  kFullAttention,  // MHA/GQA/MQA: 2 x kv_heads x head_dim per token
  kSlidingWindow,  // same row, but only the last `window` tokens are kept
  kMla,            // DeepSeek latent attention: one (kv_lora_rank + rope) row per token
  kSparseMla,      // DeepSeek-V3.2: MLA row plus an indexer key per token
  kMamba2,         // fixed conv + SSM state
  kGatedDeltaNet,  // fixed conv + SSM state (Qwen3-Next, Qwen3.5)
  kRwkv6,          // fixed token-shift + wkv state
  kNone,           // MLP-only: no cache
};

const char* layer_kind_name(LayerKind k);
bool is_attention(LayerKind k);  // full, sliding, MLA, sparse MLA
bool is_state(LayerKind k);      // Mamba2, gated DeltaNet, RWKV-6

struct AttentionShape {
  int num_kv_heads = 0;  // KV heads (1 for MQA; unused for MLA)
  int head_dim = 0;      // per head, K and V the same
  int window = 0;        // sliding window in tokens; 0 for full attention
  int kv_lora_rank = 0;  // MLA latent width
  int qk_rope_head_dim = 0;
  int q_lora_rank = 0;     // MLA query latent width (0: a plain q_proj)
  int v_head_dim = 0;      // MLA value head width
  int index_head_dim = 0;  // sparse MLA indexer key width
  int index_n_heads = 0;   // sparse MLA indexer heads
  int index_topk = 0;      // sparse MLA: keys each query reads (DeepSeek-V3.2 index_topk)
  bool k_eq_v = false;     // keys double as values (Gemma-4 attention_k_eq_v global layers): one row, not two
};

// Fixed state of one layer for one request, in elements, at tensor-parallel size 1.
struct StateShape {
  int64_t conv_dim = 0;   // conv channels (Mamba2/GDN), or token-shift width x2 for RWKV
  int conv_rows = 0;      // conv_kernel - 1 (Mamba2/GDN); 1 for RWKV token shift
  int64_t ssm_heads = 0;  // heads of the recurrent state (split across TP)
  int64_t ssm_head_dim = 0;
  int64_t ssm_state_dim = 0;
  int n_groups = 0;  // Mamba2 B/C groups (padded under TP as vLLM does)
  int64_t conv_elems() const { return conv_dim * conv_rows; }
  int64_t ssm_elems() const { return ssm_heads * ssm_head_dim * ssm_state_dim; }
};

struct LayerSpec {
  LayerKind kind = LayerKind::kNone;
  AttentionShape attn;
  StateShape state;
  bool moe = false;
  // Cross-layer sharing (CLA, YOCO): index of the layer whose cache this one reads, or -1.
  int reads_cache_of = -1;
};

// One way of storing linear weights (a compressed-tensors config group, or the whole scheme).
struct QuantGroup {
  std::string format;          // what kvsim understood, e.g. "fp8 block 128x128", "int4 group 32"
  DType dtype = DType::kBf16;  // element format of the quantised weights
  int value_bits = 16;         // bits per stored value
  int group_size = 0;          // values per scale along a row (the input dimension); -1 one per row; 0 none
  int block_rows = 0;          // 2-D block scales (FP8 weight_block_size [rows, cols]); 0 = none
  int block_cols = 0;
  int scale_bits = 0;         // bits per group or block scale
  int zero_point_bits = 0;    // asymmetric integer schemes: one zero point per group
  int tensor_scale_bits = 0;  // one scale per tensor (FP8 per-tensor; NVFP4's global FP32 scale)
  // What this group applies to: "Linear" (every linear layer), module names or "re:" patterns.
  std::vector<std::string> targets;
};

// How a checkpoint stores its weights, from config.json's quantization_config (sim/model/quantization.h).
// Linear-layer weights are quantised unless a `keep` pattern names them; embeddings, lm_head, norms,
// biases and routers always stay in the checkpoint's 16-bit dtype.
struct QuantScheme {
  std::string method;              // quant_method as written ("fp8", "mxfp4", "compressed-tensors"); "" = none
  bool understood = true;          // false: a method kvsim cannot size (weights then need --weight-dtype)
  std::vector<QuantGroup> groups;  // compressed-tensors: one per config group, in order; else one
  std::vector<std::string> keep;   // modules_to_not_convert / ignore / exclude_modules patterns
  bool quantized() const { return !method.empty(); }
  // The first group's dtype and the groups' formats joined with " + " (summary for reports).
  DType dtype() const { return groups.empty() ? DType::kBf16 : groups.front().dtype; }
  std::string format() const {
    std::string f;
    for (const auto& g : groups) f += (f.empty() ? "" : " + ") + g.format;
    return f;
  }
};

struct ModelSpec {
  std::string name;  // file stem, e.g. "qwen3-8b"
  std::string path;
  std::string model_type;  // config model_type (of text_config when nested)
  // Gated attention output (Qwen3-Next, Qwen3.5 attn_output_gate): q_proj also emits a gate per query
  // head, 2 x heads x head_dim wide (params.cpp attention_params).
  bool attn_output_gate = false;
  std::string architecture;  // architectures[0]
  std::vector<LayerSpec> layers;

  int64_t hidden_size = 0;
  int num_attention_heads = 0;
  int head_dim = 0;  // query head dim (attention layers)
  int64_t vocab_size = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;  // 0 when the config has none
  // rope_scaling as the config states it ("" / 0 when absent): what stretched the trained context.
  std::string rope_type;
  double rope_factor = 0;
  int64_t rope_original_max_position_embeddings = 0;
  bool tie_word_embeddings = false;

  // Mixture of experts (0 when dense).
  int num_experts = 0;
  int experts_per_token = 0;
  int64_t moe_intermediate_size = 0;
  int64_t shared_expert_intermediate_size = 0;

  // The SSM-state dtype the config asks for ("float32"), or "" when silent; vLLM's per-model rule
  // decides the default (see sizing.h, default_state_dtypes).
  std::string ssm_state_dtype_hint;
  std::string torch_dtype;  // "bfloat16", "float16", "float32" or ""
  int mamba_chunk_size = 0;

  // Parameters, counted from config shapes with each family's conventions.
  int64_t params = 0;
  int64_t active_params = 0;

  // Vision tower (multimodal configs).
  bool has_vision = false;
  int vision_patch_size = 0;
  int vision_spatial_merge = 0;
  int64_t vision_params = 0;
  int64_t vision_soft_tokens_per_image = 0;  // fixed tokens per image (Gemma-3/4); 0 = from the image size

  // Weights as the checkpoint stores them: quantised parameters and the bytes of every parameter
  // (values and scales; the rest in 16 bits). Without a quantization_config, 2 x (params + vision).
  QuantScheme quant;
  int64_t quantized_params = 0;
  int64_t quantized_dense_params = 0;  // of quantized_params, those outside the routed experts
  int64_t checkpoint_weight_bytes = 0;
  // Of those, the routed experts' (their weights, scales and biases as stored): what expert parallelism
  // shards, in a dtype that may differ from the rest (gpt-oss: MXFP4 experts, BF16 attention).
  int64_t checkpoint_expert_bytes = 0;
  // Parts tensor parallelism does not split evenly (their parameters and stored bytes): modules every TP
  // rank holds whole (ReplicatedLinear, norms, routers), and K / V projections by KV heads (split over
  // min(TP, heads) ranks).
  struct WeightPart {
    int64_t params = 0, bytes = 0;
  };
  WeightPart tp_replicated;
  std::vector<std::pair<int, WeightPart>> kv_projections;

  int count(LayerKind k) const;
  bool is_hybrid() const;  // attention layers and state layers both present
  bool has_state() const;
};

}  // namespace kvsim
