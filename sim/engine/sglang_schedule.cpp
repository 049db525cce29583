// Scheduler::schedule_sglang: SGLang's scheduler (EngineConfig::step_policy kSglang) over the same
// KvCacheCoordinator as vLLM's. Sources (sgl-project/sglang, python/sglang/srt/managers/, the 0.4-0.5
// series; names as there):
//  - scheduler.py get_next_batch_to_run: a prefill batch whenever get_new_batch_prefill returns one,
//    else the running batch decodes (update_running_batch). Prefill and decode never share a step:
//    enable_mixed_chunk is off by default, so while prompts can be admitted decode waits.
//  - get_new_batch_prefill: nothing when the running batch is at max_running_requests or when the
//    waiting queue is empty and no request is mid-chunk; else a PrefillAdder (schedule_policy.py) over
//    the continuing chunked request first (add_chunked_req), then the waiting queue in FCFS order
//    (add_one_req) until a request does not fit or a budget ends.
//  - PrefillAdder budgets: rem_input_tokens = max_prefill_tokens, rem_chunk_tokens =
//    chunked_prefill_size (None without chunked prefill), and rem_total_tokens = free + evictable
//    tokens - rem_total_token_offset, where the offset starts at sum over the running batch of
//    min(max_new_tokens - generated, CLIP_MAX_NEW_TOKENS) x new_token_ratio and grows by each admitted
//    request's extend tokens + min(max_new_tokens, CLIP) (a truncated chunk: its tokens only).
//    add_one_req: NO_TOKEN when extend + min(max_new_tokens, CLIP) >= rem_total_tokens; OTHER when
//    extend >= rem_input_tokens and something is already in the batch; a prompt longer than
//    rem_chunk_tokens is truncated to it and becomes the one chunked request. budget_state after each
//    add: NO_TOKEN when rem_total_tokens or cur_rem_tokens (free - this batch's extend tokens) <= 0,
//    OTHER when rem_input_tokens or rem_chunk_tokens <= 0.
//  - new_token_ratio: init = min(0.7 x schedule_conservativeness, 1), min = init x 0.14, decay =
//    (init - min) / 600 per decode step without retraction (global_config.py defaults
//    SGLANG_INIT_NEW_TOKEN_RATIO, SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR, SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS);
//    back to init when the scheduler idles (self_check_during_idle).
//  - update_running_batch: when the decode step does not fit (check_decode_mem), retract_decode takes
//    requests out, fewest output tokens first and among those the longest prompt (it sorts by
//    (len(output_ids), -len(origin_input_ids)) and pops the last), until it fits, and sets
//    new_token_ratio = min(1, (decoded tokens + 20 x requests) / sum of max_new_tokens) over the
//    requests that stay (retract_decode_steps = 20).
// kvsim's deviations: a retracted request is recomputed from scratch like a vLLM preemption (SGLang
// keeps its prefix in the radix cache when caching is on); the free and evictable tokens are the
// pool's free blocks x the block size (SGLang's page is one token; a hybrid's unified page is larger);
// the overlap scheduler's one-step lag of a finished request is not modelled; the cache is vLLM's block pool
// at page 1, so eviction frees tokens least recently used first from a sequence's tail, where SGLang's
// RadixCache.evict drops whole least recently used leaf nodes (a prefix that loses its tail here loses
// all of a node's tokens there).
#include <algorithm>

#include "sim/core/check.h"
#include "sim/engine/scheduler.h"

namespace kvsim {
namespace {
// schedule_policy.py CLIP_MAX_NEW_TOKENS (SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION, default 4096).
constexpr int64_t kClipMaxNewTokens = 4096;
// global_config.py retract_decode_steps.
constexpr int64_t kRetractDecodeSteps = 20;
}  // namespace

const char* step_policy_name(StepPolicy p) { return p == StepPolicy::kSglang ? "sglang" : "vllm"; }

int64_t Scheduler::sglang_free_tokens() const { return kv_.pool().num_free_blocks() * kv_.block_size(); }

void Scheduler::schedule_sglang(SimTime now, SchedulerOutput& out) {
  out.clear();
  kv_.new_step();
  if (sglang_prefill(now, out)) {
    // Mixed-style chunked prefill (enable_mixed_chunk): the running batch decodes in the prefill step
    // (ScheduleBatch.mix_with_running). update_running_batch is not called on that path: no decay.
    if (config_.enable_mixed_chunk && out.preemptions == 0) sglang_decode(out, true);
    return;
  }
  sglang_decode(out, false);
  if (out.scheduled.empty() && out.preemptions == 0) new_token_ratio_ = config_.init_new_token_ratio;  // idle
}

bool Scheduler::sglang_prefill(SimTime now, SchedulerOutput& out) {
  const int chunked = sglang_chunked_;
  if (chunked < 0 && waiting_empty()) return false;
  if (std::ssize(running_) >= config_.max_num_seqs && chunked < 0) return false;
  const bool chunking = config_.enable_chunked_prefill;
  int64_t rem_input = config_.max_prefill_tokens;
  int64_t rem_chunk = chunking ? config_.max_num_batched_tokens : 0;
  // rem_total_token_offset: the running batch's expected growth (the chunked request is not in it).
  double offset = 0;
  for (int slot : running_) {
    if (slot == chunked) continue;
    const EngineRequest& r = request(slot);
    offset += static_cast<double>(std::min(r.max_output - r.generated, kClipMaxNewTokens)) * new_token_ratio_;
  }
  int64_t batch_extend = 0;  // cur_rem_token_offset
  if (config_.enable_mixed_chunk) {
    // PrefillAdder(mixed_with_decode_tokens = running_bs): the decode tokens come off every budget.
    int64_t running_bs = 0;
    for (int slot : running_) running_bs += slot != chunked;
    rem_input -= running_bs;
    if (chunking) rem_chunk -= running_bs;
    offset += static_cast<double>(running_bs);
    batch_extend += running_bs;
  }
  const int64_t free_tokens = sglang_free_tokens();
  const auto charge = [&](int64_t extend, int64_t growth) {
    offset += static_cast<double>(extend + growth);
    batch_extend += extend;
    rem_input -= extend;
    if (chunking) rem_chunk -= extend;
  };
  // budget_state() == CONTINUE. SGLang allocates after the adder, so its free count stays the one
  // at the start while kvsim allocates request by request.
  const auto budget_left = [&] {
    if (static_cast<double>(free_tokens) - offset <= 0 || free_tokens - batch_extend <= 0) return false;
    return rem_input > 0 && (!chunking || rem_chunk > 0);
  };

  // add_chunked_req: the request mid-prompt continues first, by at most rem_chunk_tokens.
  if (chunked >= 0) {
    EngineRequest& r = request(chunked);
    const int64_t rest = r.num_tokens - r.num_computed;
    int64_t n = chunking ? std::min(rest, rem_chunk) : rest;
    if (align_) n = align_split(r, r.num_computed, n);
    if (n == 0) {
      // Aligned to a block boundary that this step's chunk budget (less the mixed decode tokens) does
      // not reach: the running requests decode, and the chunk continues when they leave it room.
      return false;
    }
    if (kv_.allocate_slots(chunked, r.num_computed, n, nullptr, 0, 0)) {
      const bool truncated = n < rest;
      out.scheduled.push_back(ScheduledRequest{chunked, n, r.num_computed, false});
      register_blocks(chunked, std::min(r.num_computed + n, r.num_tokens));
      charge(n, truncated ? 0 : std::min(r.max_output, kClipMaxNewTokens));
      if (!truncated) sglang_chunked_ = -1;
    } else if (std::ssize(running_) == 1) {
      // Alone and still out of blocks: it can never finish its prompt.
      running_.clear();
      sglang_chunked_ = -1;
      preempt_alone(chunked, out);
      ++out.preemptions;
      return true;
    } else {
      return false;  // decode frees blocks as requests finish; the chunk continues after
    }
  }

  // add_one_req over the waiting queue.
  while (!waiting_empty()) {
    if (std::ssize(running_) >= config_.max_num_seqs) break;
    if (!out.scheduled.empty() && !budget_left()) break;
    const int slot = waiting_front();
    EngineRequest& r = request(slot);
    KVSIM_CHECK(r.num_computed == 0, "waiting request with computed tokens");
    KVSIM_CHECK(r.remote == RemoteKv::kNone, "SGLang's scheduler does not take disaggregated requests");
    lookup_waiting(slot, r);
    const int64_t extend = r.num_tokens - hit_.num_tokens;
    const int64_t growth = std::min(r.max_output - r.generated, kClipMaxNewTokens);
    if (static_cast<double>(extend + growth) >= static_cast<double>(free_tokens) - offset) break;  // NO_TOKEN
    if (extend >= rem_input && !out.scheduled.empty()) break;                                      // OTHER
    int64_t n = extend;
    bool truncated = false;
    if (chunking && extend > rem_chunk) {
      if (sglang_chunked_ >= 0 || rem_chunk <= 0) break;  // one chunked request at a time
      n = rem_chunk;
      truncated = true;
    }
    if (align_) {
      n = align_split(r, hit_.num_tokens, n);
      if (n == 0) break;
      truncated = n < extend;
      // A prompt the alignment cuts short becomes the chunked request, and SGLang has one at a time
      // (PrefillAdder.new_chunked_req): not while another is mid-prompt.
      if (truncated && sglang_chunked_ >= 0) break;
    }
    // The adder checked the whole request against the free tokens; blocks for this chunk only.
    if (!kv_.allocate_slots(slot, 0, n, &hit_, 0, 0)) break;
    if (config_.enable_prefix_caching) record_prefix_stats(r, hit_.num_tokens);
    waiting_pop_front();
    running_.push_back(slot);
    r.status = RequestStatus::kRunning;
    record_admission(r, now);
    out.scheduled.push_back(ScheduledRequest{slot, n, r.num_computed, false});
    register_blocks(slot, std::min(r.num_computed + n, r.num_tokens));
    charge(n, truncated ? 0 : growth);
    if (truncated) {
      // SGLang truncates a prompt only to the rest of the chunk budget, so the chunked request is the
      // batch's last (with alignment, kvsim can cut one short of the budget: it is the last too).
      sglang_chunked_ = slot;
      break;
    }
  }
  return !out.scheduled.empty();
}

void Scheduler::sglang_decode(SchedulerOutput& out, bool mixed) {
  // Mixed: the requests this step prefills are not decoded and not retracted.
  const size_t prefills = out.scheduled.size();
  const auto prefilled = [&](int slot) {
    for (size_t k = 0; k < prefills; ++k)
      if (out.scheduled[k].slot == slot) return true;
    return false;
  };
  bool retracted = false;
  size_t i = 0;
  while (i < running_.size()) {
    const int slot = running_[i];
    EngineRequest& r = request(slot);
    if (slot == sglang_chunked_ || r.num_tokens - r.num_computed != 1 || (mixed && prefilled(slot))) {
      ++i;
      continue;
    }
    if (kv_.allocate_slots(slot, r.num_computed, 1, nullptr, 0, 0)) {
      out.scheduled.push_back(ScheduledRequest{slot, 1, r.num_computed, false});
      register_blocks(slot, r.num_tokens);
      ++i;
      continue;
    }
    // retract_decode: fewest output tokens first, then the longest prompt.
    size_t victim_index = running_.size();
    for (size_t j = 0; j < running_.size(); ++j) {
      if (running_[j] == sglang_chunked_ || (mixed && prefilled(running_[j]))) continue;
      if (victim_index == running_.size()) {
        victim_index = j;
        continue;
      }
      const EngineRequest& a = request(running_[j]);
      const EngineRequest& v = request(running_[victim_index]);
      if (std::tie(a.generated, v.prompt_tokens) < std::tie(v.generated, a.prompt_tokens)) victim_index = j;
    }
    preempt_running(victim_index, i, slot, out);
    retracted = true;
  }
  if (retracted) {
    int64_t decoded = 0, max_new = 0, n = 0;
    for (int slot : running_) {
      if (slot == sglang_chunked_) continue;
      decoded += request(slot).generated;
      max_new += request(slot).max_output;
      ++n;
    }
    new_token_ratio_ =
        max_new > 0
            ? std::min(1.0, static_cast<double>(decoded + kRetractDecodeSteps * n) / static_cast<double>(max_new))
            : config_.init_new_token_ratio;
  } else if (!out.scheduled.empty() && !mixed) {
    new_token_ratio_ = std::max(new_token_ratio_ - config_.new_token_ratio_decay, config_.min_new_token_ratio);
  }
}

}  // namespace kvsim
