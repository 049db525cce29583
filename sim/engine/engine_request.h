#pragma once
// EngineRequest: the engine's state of one request (vLLM Request: num_tokens, num_computed_tokens,
// status, block hashes) plus the record being filled for it.
#include <cstdint>

#include "sim/engine/block_hasher.h"
#include "sim/metrics/records.h"
#include "sim/workload/request.h"

namespace kvsim {

enum class RequestStatus : uint8_t { kFree, kWaiting, kRunning, kPreempted };

struct EngineRequest {
  RequestSpec spec;
  TokenSequence seq;  // prompt, then generated tokens
  BlockHasher hasher;
  int64_t prompt_tokens = 0;
  int64_t max_output = 0;    // output tokens to generate (capped so prompt + output <= max_model_len)
  int64_t num_tokens = 0;    // prompt + generated (vLLM request.num_tokens)
  int64_t num_computed = 0;  // vLLM num_computed_tokens
  int64_t generated = 0;
  int64_t num_cached_tokens = -1;  // set at the first admission (vLLM num_cached_tokens)
  // vLLM request.shared_prefix_boundary: the attention match when the state group could not back it
  // (set at every admission lookup; 0: none). The align split stops at its block floor (PR #37898).
  int64_t shared_prefix_boundary = 0;
  uint64_t arrival_seq = 0;  // submission order (tie-break for the priority policy)
  // Progress watchdog: the most tokens ever computed, preemptions since that mark last rose, and the
  // mark at the last preemption in which the request preempted itself alone (-1: none).
  int64_t max_computed = 0;
  int preemptions_without_progress = 0;
  int64_t alone_preempted_at = -1;
  RequestStatus status = RequestStatus::kFree;
  bool first_token_emitted = false;
  RequestRecord record;
};

}  // namespace kvsim
