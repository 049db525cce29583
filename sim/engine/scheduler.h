#pragma once
// Scheduler: vLLM v1 Scheduler.schedule() (vllm/v1/core/sched/scheduler.py) over one
// KvCacheCoordinator; with EngineConfig::step_policy kSglang, SGLang's scheduler instead
// (sglang_schedule.cpp, whose header comment gives its rules and sources).
//  - RUNNING requests first, in list (admission) order: tokens not yet computed, capped by
//    long_prefill_token_threshold, the budget and max_model_len; if allocate_slots fails, preempt the
//    last running request (priority: max (priority, arrival)) by recompute (free its blocks,
//    num_computed = 0, to the front of the waiting queue) until it fits or the victim is itself; then
//    the running loop ends (`break`), later running requests wait for the next step.
//  - WAITING requests only if nothing was preempted this step: stop at max_num_seqs or an empty budget;
//    prefix lookup when num_computed == 0; admission needs the whole sequence to fit
//    (scheduler_reserve_full_isl); a failed allocation ends admission (`break`). vLLM's prefix-cache
//    stats are recorded only when the allocation succeeded (record_prefix_stats).
//  - Hashes are registered at schedule time (cache_blocks up to min(computed + new, num_tokens)).
//  - Hybrids in mamba_cache_mode "align": every prefill chunk goes through align_split()
//    (vLLM _mamba_block_aligned_split); a chunk cut to 0 tokens skips a running request (`continue`)
//    and ends admission for a waiting one (`break`). With prefix_match_unit below the block size the
//    split also stops at the prompt's last unit boundary (tail_boundary), where partial tail entries
//    are registered (KvCacheCoordinator::cache_partial_tails).
// Miss attribution (MissCause) happens at a request's first admission; see attribute_miss(). "Seen"
// there means registered or hit by this scheduler within the last seen_horizon() key insertions
// (exact; RecentKeys: remembered at least that long, forgotten after twice it), so a cause that says a
// reuse was possible (kEvicted, kStateEvicted, kPartialBlock, kDifferentImage) is never a guess; older history counts
// as never seen. No progress: a request that preempts itself while no other request runs holds the whole KV cache and
// still does not fit. The first time it is preempted as vLLM does (its retry may reach further, e.g. past
// sliding-window blocks or with different chunks); the second time at the same max_computed mark it is rejected
// (SchedulerOutput::rejected, RejectReason::kNoProgress): vLLM would recompute it forever, and refuses such a
// configuration at start-up instead (the KV cache must hold max_model_len tokens). Progress watchdog: a request
// preempted EngineConfig::max_preemptions_without_progress times without computing a new token fails KVSIM_CHECK.
#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "sim/engine/engine_config.h"
#include "sim/engine/engine_request.h"
#include "sim/engine/kv_cache_coordinator.h"
#include "sim/engine/recent_keys.h"
#include "sim/tier/kv_offload.h"

namespace kvsim {

struct ScheduledRequest {
  int slot = 0;
  int64_t num_tokens = 0;           // scheduled this step
  int64_t num_computed_before = 0;  // computed tokens (hit included) before this step
  // Partial hash hits: this step first copies a state block (copy-on-write of a hit ending inside a
  // block, or the copy-out of the request's own partial tail state).
  bool partial_state_copy = false;
};

struct SchedulerOutput {
  std::vector<ScheduledRequest> scheduled;
  int preemptions = 0;
  // Slots taken out of the engine this step because they can never finish (RejectReason::kNoProgress);
  // still allocated: the caller emits their records and calls release().
  std::vector<int> rejected;
  // Disaggregation (RemoteKv::kReceive): requests admitted into WAITING_FOR_REMOTE_KVS this step, with
  // the prompt tokens found in this instance's own prefix cache: the caller starts their pulls.
  std::vector<std::pair<int, int64_t>> remote_waits;
  // KV offload: requests admitted into WAITING_FOR_REMOTE_KVS this step to load tokens from the tier;
  // the caller starts the loads (KvOffload::start_load) and calls Scheduler::tier_loaded at their ends.
  std::vector<std::pair<int, TierHit>> tier_loads;
  // Slots preempted this step (in order; KV offload flushes their pending stores, rule 24).
  std::vector<int> preempted;
  void clear() {
    scheduled.clear();
    preemptions = 0;
    preempted.clear();
    rejected.clear();
    remote_waits.clear();
    tier_loads.clear();
  }
};

class Scheduler {
 public:
  explicit Scheduler(const EngineConfig& config);

  // Adds a request to the waiting queue; returns its slot. `spec` must be valid (see EngineInstance).
  int add_request(RequestSpec spec, int64_t prompt_tokens, int64_t max_output, SimTime now,
                  RemoteKv remote = RemoteKv::kNone);
  void schedule(SimTime now, SchedulerOutput& out);
  // Appends one sampled token to `slot` (hashes the blocks it fills).
  void append_token(int slot);
  // Frees a finished request's blocks and slot, and removes it from the running list lazily
  // (compact_running() once per step).
  void finish(int slot);
  // A finished RemoteKv::kSend request: leaves the running list like finish() but keeps its blocks
  // (vLLM NIXL request_finished -> delay_free) until release_held().
  void hold(int slot);
  void release_held(int slot);
  // A RemoteKv::kReceive request's pull ended: vLLM _update_waiting_for_remote_kv caches the loaded
  // blocks and sets num_computed = N - 1, so the next admission computes only the last prompt token.
  void remote_loaded(int slot);
  // Requests whose blocks wait on another instance: pulls in flight (decode) and held sends (prefill).
  // While any exists, a request that does not fit is not refused: blocks will come back.
  // KV offload: the tier lookup at admission (nullptr: none). Not owned.
  void set_offload(KvOffload* offload) { offload_ = offload; }
  // A tier load ended (vLLM _update_waiting_for_remote_kv): the loaded blocks are cached and num_computed
  // = the GPU hit + the loaded tokens, minus one on a full-prompt hit; the request is ready for admission,
  // which computes the rest of the prompt as usual.
  void tier_loaded(int slot);
  int num_external_holds() const { return remote_waiting_ + held_; }
  void compact_running();
  // Nothing runs and the head of the loaded requests (tier loads, P/D pulls done) cannot allocate the rest
  // of its tokens: preempts the last loaded request behind it, whose blocks may be what it lacks, back to
  // the front of the waiting queue (its loaded blocks stay in the prefix cache). Returns how many (0 or 1;
  // the caller plans again and calls it again while the head is stuck). vLLM never preempts a waiting
  // request, so two loads that each took part of the pool would stall it for good; this is kvsim's way out
  // (a deviation), taken before a head is called unschedulable.
  int preempt_loaded_behind_head(SchedulerOutput& out);
  // Removes the head of the waiting queue, which cannot fit even in an empty pool; returns its slot
  // (still allocated: call release() after reading its record).
  int pop_unschedulable_head();
  // Called after a step computed `slot`'s tokens: resets the progress watchdog past its old mark.
  void note_progress(int slot);
  void release(int slot);

  EngineRequest& request(int slot) { return requests_[static_cast<size_t>(slot)]; }
  const EngineRequest& request(int slot) const { return requests_[static_cast<size_t>(slot)]; }
  int num_running() const { return static_cast<int>(running_.size()); }
  // vLLM num_requests_waiting: WAITING_FOR_REMOTE_KVS requests are in the waiting queue too.
  int num_waiting() const {
    return static_cast<int>(fcfs_.size() + by_priority_.size() + remote_ready_.size()) + remote_waiting_;
  }
  const std::vector<int>& running() const { return running_; }
  KvCacheCoordinator& kv() { return kv_; }
  const KvCacheCoordinator& kv() const { return kv_; }
  // Every live slot (running or waiting), ascending.
  std::vector<int> live_slots() const;

 private:
  using PriorityKey = std::tuple<int, int64_t, uint64_t, int>;  // priority, arrival ns, seq, slot
  PriorityKey priority_key(int slot) const;
  bool waiting_empty() const { return fcfs_.empty() && by_priority_.empty(); }
  int waiting_front() const;
  void waiting_pop_front();
  void waiting_push_back(int slot);
  void waiting_push_front(int slot);
  void preempt(int slot, SchedulerOutput& out, bool waits_on_holds = false);
  // Takes running_[victim_index] out of the running list and preempts it (rejects it when it is `slot`
  // and nothing else runs); one already scheduled this step (victim_index < i) loses its entry and
  // `i` steps back. Returns the tokens that entry had.
  int64_t preempt_running(size_t victim_index, size_t& i, int slot, SchedulerOutput& out);
  // The victim of a failed allocation is the request itself and nothing else runs.
  void preempt_alone(int slot, SchedulerOutput& out);
  void admit_lookup(EngineRequest& r);
  void register_blocks(int slot, int64_t num_tokens);
  // vLLM's prefix-cache stats of one successful admission (RequestRecord::prefix_queries etc.).
  // readmission: counted as a re-admission after a preemption (default: the record has preemptions).
  void record_prefix_stats(EngineRequest& r, int64_t hit_tokens, std::optional<bool> readmission = {}) const;
  void attribute_miss(EngineRequest& r, int64_t cached_tokens, int64_t attention_tokens);
  // Refreshes the keys of the blocks `r` reuses, so a prefix kept hot by hits stays within the horizon.
  void touch_hit(const EngineRequest& r, int64_t hit_tokens);
  // The waiting request's prefix lookup (hit_) and, for hybrids, its state boundaries.
  void lookup_waiting(int slot, EngineRequest& r);
  // A waiting request admitted after lookup_waiting: first-admission record, hit touch, num_computed.
  void record_admission(EngineRequest& r, SimTime now);
  // SGLang's scheduler (EngineConfig::step_policy kSglang; sglang_schedule.cpp): a prefill batch when
  // one can be admitted (sglang_prefill returns true), else a decode step of the running requests.
  void schedule_sglang(SimTime now, SchedulerOutput& out);
  bool sglang_prefill(SimTime now, SchedulerOutput& out);
  // mixed: the decode half of a mixed prefill step (enable_mixed_chunk).
  void sglang_decode(SchedulerOutput& out, bool mixed);
  int64_t sglang_free_tokens() const;
  // vLLM Scheduler._mamba_block_aligned_split: tokens to schedule for `r` starting at `start` when
  // `n` would fit, so that states land on block boundaries.
  int64_t align_split(const EngineRequest& r, int64_t start, int64_t n) const;

  EngineConfig config_;
  bool priority_;
  KvCacheCoordinator kv_;
  bool align_ = false;  // hybrid with mamba_cache_mode align and prefix caching
  // Exact, bounded: keys registered (or hit) within the horizon (recent_keys.h, seen_horizon()).
  RecentKeys seen_;
  RecentKeys state_seen_;             // block hashes at which a state was registered (kStateEvicted)
  std::vector<uint64_t> touch_keys_;  // scratch: the keys one registration or hit touches, in order
  std::vector<EngineRequest> requests_;
  std::vector<int> free_slots_;
  std::vector<int> running_;
  std::vector<uint8_t> finished_mark_;
  std::deque<int> fcfs_;
  // Pulled requests ready for their last prompt token, in the order their pulls ended; admitted before
  // the waiting queue (vLLM keeps skipped WAITING_FOR_REMOTE_KVS requests at the queue's front).
  std::deque<int> remote_ready_;
  int remote_waiting_ = 0;  // pulls and tier loads in flight
  KvOffload* offload_ = nullptr;
  int held_ = 0;
  std::set<PriorityKey> by_priority_;
  uint64_t next_seq_ = 0;
  CacheHit hit_;
  std::vector<std::pair<int64_t, uint64_t>> boundaries_;
  // SGLang: the one request mid-prompt (Scheduler.chunked_req; -1: none) and new_token_ratio.
  int sglang_chunked_ = -1;
  double new_token_ratio_ = 0;
};

}  // namespace kvsim
