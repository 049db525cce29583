#pragma once
// How one scheduled request adds to a step's BatchShape (i_latency_model.h): the engine builds every step's
// shape with these (EngineInstance::batch_shape, once per scheduled request a step, hence inline), and
// `kvsim step` builds the shapes it prices with them.
#include <algorithm>
#include <cstdint>

#include "sim/perf/i_latency_model.h"

namespace kvsim {

// Sum over query positions q in (c, c + n] of min(q, w): keys seen by each new token under a window.
inline double windowed_pairs(int64_t c, int64_t n, int64_t w) {
  const auto sum_to = [](int64_t a) { return static_cast<double>(a) * static_cast<double>(a + 1) / 2.0; };
  if (c + n <= w) return sum_to(c + n) - sum_to(c);
  if (c >= w) return static_cast<double>(n) * static_cast<double>(w);
  return sum_to(w) - sum_to(c) + static_cast<double>(c + n - w) * static_cast<double>(w);
}

// One decode token of a request with `computed_before` tokens already in its cache. `window`: the sliding
// window of the model's windowed layers (0: none); `topk`: the sparse-attention top-k (0: dense).
inline void add_decode(BatchShape& b, int64_t computed_before, int64_t window, int64_t topk) {
  const int64_t c = computed_before;
  b.num_tokens += 1;
  ++b.num_decode_requests;
  b.decode_context_tokens += c + 1;
  b.decode_context_tokens_windowed += window > 0 ? std::min<int64_t>(c + 1, window) : c + 1;
  if (topk > 0) b.decode_context_tokens_sparse += std::min<int64_t>(c + 1, topk);
}

// A prefill chunk of `tokens` after `computed_before` computed ones (a whole prompt: computed_before 0).
inline void add_prefill_chunk(BatchShape& b, int64_t computed_before, int64_t tokens, int64_t window, int64_t topk) {
  const int64_t c = computed_before;
  const int64_t n = tokens;
  b.num_tokens += n;
  ++b.num_prefill_requests;
  b.num_prefill_tokens += n;
  // chunk x (computed_before + (chunk + 1) / 2) = sum of q over (c, c + n].
  const double pairs = static_cast<double>(n) * (static_cast<double>(c) + static_cast<double>(n + 1) / 2.0);
  b.prefill_attn_pairs += pairs;
  b.prefill_attn_pairs_windowed += window > 0 ? windowed_pairs(c, n, window) : pairs;
  // Keys the chunk reads: everything computed before it plus itself (capped by the window).
  b.prefill_context_tokens += c + n;
  b.prefill_context_tokens_windowed += window > 0 ? std::min<int64_t>(c + n, window) : c + n;
  // DSA: each query attends to the indexer's top-k earlier tokens, the same sum as a window.
  if (topk > 0) {
    b.prefill_attn_pairs_sparse += windowed_pairs(c, n, topk);
    b.prefill_context_tokens_sparse += std::min<int64_t>(c + n, topk);
  }
}

}  // namespace kvsim
