#pragma once
// ILatencyModel: the time one engine step takes, priced from a few batch aggregates in O(1).
// Contract: step_time() is pure (same shape, same result), never negative, and grows (weakly) with
// every token and context aggregate.
#include <cstdint>
#include <memory>
#include <string>

#include "sim/core/time.h"

namespace kvsim {

struct BatchShape {
  int64_t num_tokens = 0;          // all tokens scheduled this step (prefill chunks + decodes)
  int64_t num_prefill_tokens = 0;  // tokens of prefill chunks
  int num_prefill_requests = 0;
  int num_decode_requests = 0;
  // Query-key pairs of prefill chunks under causal attention over full-attention layers:
  // sum over chunks of chunk x (computed_before + (chunk + 1) / 2).
  double prefill_attn_pairs = 0;
  // Same, with each key span capped at the sliding window (used for sliding-window layers).
  double prefill_attn_pairs_windowed = 0;
  int64_t decode_context_tokens = 0;           // sum of context lengths read by decode requests
  int64_t decode_context_tokens_windowed = 0;  // same, each capped at the sliding window
  int64_t state_copy_bytes = 0;                // hybrid state checkpoint copies done this step (align mode)
  int64_t state_requests = 0;                  // requests whose recurrent state is read and written this step
  // KV read by prefill attention: sum over chunks of (computed_before + chunk), and the same with each
  // span capped at the sliding window. 0 = not supplied (the roofline then assumes each chunk reads
  // only its own tokens, i.e. num_prefill_tokens).
  int64_t prefill_context_tokens = 0;
  int64_t prefill_context_tokens_windowed = 0;
  // Sparse attention (DeepSeek-V3.2 DSA): the same three aggregates with each query's key span capped
  // at the indexer's top-k. The engine fills them only when its config names a top-k
  // (EngineConfig::sparse_topk); models then price the main attention on these and the indexer on
  // the full aggregates. When the top-k is 0 they stay 0 and sparse layers are priced as dense.
  double prefill_attn_pairs_sparse = 0;
  int64_t decode_context_tokens_sparse = 0;
  int64_t prefill_context_tokens_sparse = 0;
};

class ILatencyModel {
 public:
  virtual ~ILatencyModel() = default;
  virtual Duration step_time(const BatchShape& batch) const = 0;
  virtual std::string name() const = 0;
};

}  // namespace kvsim
