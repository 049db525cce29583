#pragma once
// EngineRequest: the engine's state of one request (vLLM Request: num_tokens, num_computed_tokens,
// status, block hashes) plus the record being filled for it.
#include <cstdint>

#include "sim/engine/block_hasher.h"
#include "sim/metrics/records.h"
#include "sim/workload/request.h"

namespace kvsim {

// kWaitingForRemoteKvs: vLLM RequestStatus.WAITING_FOR_REMOTE_KVS, blocks allocated, the pull running.
// kHeld: a prefill-for-remote request that finished; its blocks stay until the decode side read them.
enum class RequestStatus : uint8_t { kFree, kWaiting, kRunning, kPreempted, kWaitingForRemoteKvs, kHeld };

// The request's part in a disaggregated flow (vLLM kv_transfer_params): kSend = do_remote_decode (the
// prefill instance: max_tokens = 1, blocks held after finish); kReceive = do_remote_prefill (the decode
// instance pulls the prompt's KV before computing anything).
enum class RemoteKv : uint8_t { kNone, kSend, kReceive };

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
  RemoteKv remote = RemoteKv::kNone;
  bool remote_loaded = false;  // kReceive: the pull finished (admission then schedules the last token)
  // KV offload (sim/tier/kv_offload.h): the next chunk to offer for a store (vLLM next_stored_block_idx)
  // and, while a tier load runs (kWaitingForRemoteKvs), the token where the loaded span ends.
  int64_t next_store_chunk = 0;
  int64_t tier_load_end = 0;
  RequestRecord record;
};

}  // namespace kvsim
