#pragma once
// Reads a Hugging Face config.json into a ModelSpec. Understands every way configs state the layer
// mix (layer_types, hybrid_override_pattern, full_attention_interval, model-type conventions), the
// nested text_config of multimodal configs, Falcon's old keys, MLA and sparse MLA, Mamba2, gated
// DeltaNet and RWKV-6 states, and HF's non-strict JSON. A config that lacks a key the sizing needs
// is an InputError naming the file, the key and the model type.
#include <string>

#include "sim/model/json.h"
#include "sim/model/model_spec.h"

namespace kvsim {

ModelSpec read_model_config(const std::string& path);
// Same, from an already parsed document; `source` names it in errors.
ModelSpec model_from_json(const JsonValue& doc, const std::string& source, const std::string& name);

// Cross-layer sharing, which no HF config states, applied as a modifier:
//   cla_factor k (2 or 3): each group of k adjacent attention layers reads the first one's cache.
//   yoco_window W: the first half of the layers become sliding-window layers of W tokens (the
//   self-decoder), the second half read one shared full cache written by the first of them.
void apply_cla(ModelSpec& spec, int factor);
void apply_yoco(ModelSpec& spec, int window);

}  // namespace kvsim
