#pragma once
// How one scheduled request adds to a step's BatchShape (i_latency_model.h): the engine builds every step's
// shape with these (EngineInstance::batch_shape), and `kvsim step` builds the shapes it prices with them.
#include <cstdint>

#include "sim/perf/i_latency_model.h"

namespace kvsim {

// Sum over query positions q in (c, c + n] of min(q, w): keys seen by each new token under a window.
double windowed_pairs(int64_t c, int64_t n, int64_t w);

// One decode token of a request with `computed_before` tokens already in its cache. `window`: the sliding
// window of the model's windowed layers (0: none); `topk`: the sparse-attention top-k (0: dense).
void add_decode(BatchShape& b, int64_t computed_before, int64_t window, int64_t topk);

// A prefill chunk of `tokens` after `computed_before` computed ones (a whole prompt: computed_before 0).
void add_prefill_chunk(BatchShape& b, int64_t computed_before, int64_t tokens, int64_t window, int64_t topk);

}  // namespace kvsim
