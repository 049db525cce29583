#pragma once
// Parameter counting from config shapes, with each family's modelling conventions (untied or tied
// embeddings, QK-norm, gated attention output, projection biases, LayerNorm biases, relu2 MLPs,
// MLA projections, MoE routers and shared experts, Mamba2 / gated DeltaNet / RWKV-6 blocks).
// Fills spec.params, spec.active_params and spec.vision_params. The expected totals are worked out
// in shared/reference/model-sizing.md (e.g. Qwen3-8B 8,190,735,360). Every weight is counted through
// a WeightTally (quantization.h) with its Hugging Face module name and, for linear layers, its
// [out x in] shape, which fills spec.quantized_params and spec.checkpoint_weight_bytes under
// spec.quant (read before this is called).
#include "sim/model/json.h"
#include "sim/model/model_spec.h"

namespace kvsim {

void count_params(const JsonValue& doc, const JsonValue& text_cfg, ModelSpec& spec);

}  // namespace kvsim
