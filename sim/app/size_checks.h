#pragma once
// Checks `kvsim size` adds to a SizeReport: whether the model fits the GPU and, if not, on how many
// it would; and warnings about the contexts asked for.
#include "sim/app/size_report.h"

namespace kvsim {

// With opt.gpu and r.memory set: r.fits, r.gpus_needed, r.tp_needed (see SizeReport).
void check_fit(const ModelSpec& spec, const SizeOptions& opt, SizeReport& r);
// A context past max_position_embeddings: vLLM refuses --max-model-len above it (unless
// VLLM_ALLOW_LONG_MAX_MODEL_LEN=1) and the model was not trained there. The warning says what RoPE
// scaling would stretch it: factor = ceil(context / the pre-scaling length), where that length is
// rope_scaling.original_max_position_embeddings when the config already scales, else
// max_position_embeddings.
void add_context_warnings(const ModelSpec& spec, SizeReport& r);

}  // namespace kvsim
