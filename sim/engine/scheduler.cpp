#include "sim/engine/scheduler.h"

#include <algorithm>
#include <cmath>

#include "sim/core/check.h"

namespace kvsim {
namespace {
// Domain of text-only (image keys dropped) hashes inside the seen filter.
uint64_t text_only_key(uint64_t h) { return avalanche64(h ^ 0x746578742d6f6e6cULL); }

// The attribution's memory of past keys (RecentKeys): a key is remembered for at least 8 x num_blocks
// key insertions after its last touch (a block registers its hash, with images or run boundaries a few
// more keys), so it is forgotten only after the cache has turned over about eight times; the horizon
// is at least 2^14 and at most 2^20 keys (32 B each: 0.5 to 32 MiB per instance; at the cap, a cache
// above 2^17 blocks is remembered for fewer turnovers).
size_t seen_horizon(int64_t num_blocks) {
  size_t h = size_t{1} << 14;
  while (static_cast<int64_t>(h) < 8 * num_blocks && h < (size_t{1} << 20)) h <<= 1;
  return h;
}
}  // namespace

Scheduler::Scheduler(const EngineConfig& config)
    : config_(config),
      priority_(config.policy == "priority"),
      // SGLang without chunked prefill takes whole prompts (sliding-window admission cap: max_model_len).
      kv_(config, config.step_policy == StepPolicy::kSglang && !config.enable_chunked_prefill
                      ? std::max<int64_t>(config.max_model_len, config.max_num_batched_tokens)
                      : config.max_num_batched_tokens),
      seen_(seen_horizon(config.layout.num_blocks)),
      state_seen_(seen_horizon(config.layout.num_blocks)) {
  KVSIM_CHECK(config.policy == "fcfs" || config.policy == "priority", "unknown policy " << config.policy);
  align_ = kv_.has_state() && config.enable_prefix_caching && config.mamba_cache_mode == MambaCacheMode::kAlign;
  KVSIM_CHECK(config.prefix_match_unit == 0 ||
                  (config.prefix_match_unit > 0 && config.layout.block_size % config.prefix_match_unit == 0),
              "prefix_match_unit " << config.prefix_match_unit << " does not divide the block size "
                                   << config.layout.block_size);
  KVSIM_CHECK(config.max_num_batched_tokens > 0 && config.max_num_seqs > 0, "empty step budget");
  KVSIM_CHECK(config.step_policy == StepPolicy::kVllm || (config.max_prefill_tokens > 0 && !priority_),
              "SGLang's scheduler needs max_prefill_tokens > 0 and the fcfs policy");
  new_token_ratio_ = config.init_new_token_ratio;
}

int Scheduler::add_request(RequestSpec spec, int64_t prompt_tokens, int64_t max_output, SimTime now, RemoteKv remote) {
  int slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<int>(requests_.size());
    requests_.emplace_back();
    finished_mark_.push_back(0);
  }
  EngineRequest& r = requests_[static_cast<size_t>(slot)];
  r = EngineRequest{};
  r.seq = TokenSequence(spec.prompt);
  r.hasher = BlockHasher(config_.layout.block_size, spec, kv_.hash_unit());
  if (config_.enable_prefix_caching) r.hasher.extend(r.seq);
  r.prompt_tokens = prompt_tokens;
  r.max_output = max_output;
  r.num_tokens = prompt_tokens;
  r.arrival_seq = next_seq_++;
  r.status = RequestStatus::kWaiting;
  r.remote = remote;
  r.record.id = spec.id;
  r.record.arrival = now;
  r.record.prompt_tokens = prompt_tokens;
  // What the request asked for: the engine may generate fewer (max_output: capped at max_model_len - prompt,
  // or 1 on a P/D prefill instance), and a finished request's output then shows the cap.
  r.record.requested_output_tokens = std::max<int64_t>(spec.output_tokens, 1);
  r.record.instance = config_.instance;
  r.record.pool = config_.pool;
  spec.prompt.clear();  // identities live in r.seq
  spec.prompt.shrink_to_fit();
  r.spec = std::move(spec);
  waiting_push_back(slot);
  return slot;
}

Scheduler::PriorityKey Scheduler::priority_key(int slot) const {
  const EngineRequest& r = request(slot);
  return {r.spec.priority, r.record.arrival.ns(), r.arrival_seq, slot};
}

int Scheduler::waiting_front() const { return priority_ ? std::get<3>(*by_priority_.begin()) : fcfs_.front(); }

void Scheduler::waiting_pop_front() {
  if (priority_) {
    by_priority_.erase(by_priority_.begin());
  } else {
    fcfs_.pop_front();
  }
}

void Scheduler::waiting_push_back(int slot) {
  if (priority_) {
    by_priority_.insert(priority_key(slot));
  } else {
    fcfs_.push_back(slot);
  }
}

void Scheduler::waiting_push_front(int slot) {
  if (priority_) {
    by_priority_.insert(priority_key(slot));  // vLLM: the priority heap orders preempted requests too
  } else {
    fcfs_.push_front(slot);
  }
}

void Scheduler::preempt(int slot, SchedulerOutput& out, bool waits_on_holds) {
  EngineRequest& r = request(slot);
  out.preempted.push_back(slot);
  kv_.free(slot);
  r.num_computed = 0;
  r.status = RequestStatus::kPreempted;
  ++r.record.preemptions;
  // Waiting for blocks that others hold outside the running list (they come back when a pull or a load
  // ends) is not a livelock, however many steps it takes.
  if (!waits_on_holds) ++r.preemptions_without_progress;
  KVSIM_CHECK(r.preemptions_without_progress < config_.max_preemptions_without_progress,
              "livelock: request " << r.record.id.value() << " preempted " << r.preemptions_without_progress
                                   << " times without computing a new token (stuck at " << r.max_computed << " of "
                                   << r.num_tokens << " tokens)");
  waiting_push_front(slot);
}

void Scheduler::preempt_alone(int slot, SchedulerOutput& out) {
  EngineRequest& r = request(slot);
  if (r.alone_preempted_at != r.max_computed) {
    r.alone_preempted_at = r.max_computed;
    preempt(slot, out);
    return;
  }
  kv_.free(slot);
  r.num_computed = 0;
  r.status = RequestStatus::kPreempted;
  ++r.record.preemptions;
  r.record.rejected = RejectReason::kNoProgress;
  out.rejected.push_back(slot);
}

int64_t Scheduler::preempt_running(size_t victim_index, size_t& i, int slot, SchedulerOutput& out) {
  const int victim = running_[victim_index];
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(victim_index));
  int64_t returned = 0;
  if (victim_index < i) {
    // Before the cursor (vLLM decrements req_index when the victim preceded it). Scheduled this step:
    // drop its entry and return its tokens (`if preempted_req in scheduled_running_reqs`). A hybrid's
    // request skipped this step (its chunk floored to 0 by the alignment split) has no entry.
    --i;
    auto it = std::find_if(out.scheduled.begin(), out.scheduled.end(),
                           [victim](const ScheduledRequest& s) { return s.slot == victim; });
    if (it != out.scheduled.end()) {
      returned = it->num_tokens;
      out.scheduled.erase(it);
    }
  }
  // Alone with the whole pool it can never finish, unless blocks it lacks are held by requests outside
  // `running_` (tier loads, loaded requests, P/D sends held for a pull): those come back, so it only waits.
  const bool alone = victim == slot && running_.empty();
  if (alone && num_external_holds() == 0 && remote_ready_.empty())
    preempt_alone(victim, out);
  else
    preempt(victim, out, alone);  // alone here: waiting on held blocks
  ++out.preemptions;
  return returned;
}

void Scheduler::note_progress(int slot) {
  EngineRequest& r = request(slot);
  if (r.num_computed <= r.max_computed) return;
  r.max_computed = r.num_computed;
  r.preemptions_without_progress = 0;
}

void Scheduler::register_blocks(int slot, int64_t num_tokens) {
  if (!config_.enable_prefix_caching || kv_.nothing_to_cache(slot, num_tokens)) return;
  EngineRequest& r = request(slot);
  const size_t saved_before = r.record.saved_state_positions.size();
  const int64_t first = kv_.cache_blocks(slot, r.hasher.hashes(), num_tokens, &r.record.saved_state_positions);
  const int64_t full = std::min<int64_t>(num_tokens / kv_.block_size(), std::ssize(r.hasher.hashes()));
  const int64_t b = kv_.block_size();
  if (kv_.partial_hash_hits()) {
    kv_.cache_partial_tails(slot, r.hasher.fine_hashes(), r.prompt_tokens, num_tokens, &r.record.saved_state_positions);
    // The prompt's tail block is never registered whole before it fills: remember its run-boundary
    // prefixes so a later match ending inside it is attributed (kPartialBlock). Only with the unit on
    // (the default attribution, and its reported numbers, count whole registered blocks only), so
    // lost-token totals of runs with and without the unit differ by this tail accounting.
    if (config_.miss_attribution && num_tokens % b != 0 && num_tokens <= r.prompt_tokens) {
      boundaries_.clear();
      r.hasher.boundary_keys(r.seq, num_tokens / b, num_tokens, boundaries_);
      for (const auto& [pos, key] : boundaries_) seen_.touch(key);
    }
  }
  if (!config_.miss_attribution) return;  // the rest is the attribution's memory of keys
  for (size_t i = saved_before; i < r.record.saved_state_positions.size(); ++i) {
    const int64_t pos = r.record.saved_state_positions[i];
    if (pos % b == 0) state_seen_.touch(r.hasher.hashes()[static_cast<size_t>(pos / b - 1)]);
  }
  touch_keys_.clear();
  for (int64_t k = first; k < full; ++k) {
    const auto ku = static_cast<size_t>(k);
    touch_keys_.push_back(r.hasher.hashes()[ku]);
    if (r.hasher.has_images()) touch_keys_.push_back(text_only_key(r.hasher.text_only_hash(ku)));
    if (r.hasher.has_inner_boundary(ku)) {
      boundaries_.clear();
      r.hasher.boundary_keys(r.seq, k, (k + 1) * b, boundaries_);
      for (const auto& [pos, key] : boundaries_) touch_keys_.push_back(key);
    }
  }
  seen_.touch_all(touch_keys_);
}

int64_t Scheduler::align_split(const EngineRequest& r, int64_t start, int64_t n) const {
  const int64_t b = kv_.block_size();
  const int64_t prefill_end = std::max(r.prompt_tokens, r.num_tokens - 1);
  if (start >= prefill_end) return n;  // decode: untouched
  const int64_t last_cache_position = r.num_tokens - r.num_tokens % b;
  int64_t end = start + n;
  if (end < prefill_end) {
    // Not the final chunk: floor its end to a block boundary.
    int64_t max_prefill = config_.max_num_batched_tokens;
    if (config_.long_prefill_token_threshold > 0)
      max_prefill = std::min(max_prefill, config_.long_prefill_token_threshold);
    const int64_t aligned_end = end / b * b;
    if (aligned_end > start || b <= max_prefill) end = aligned_end;
  }
  const int64_t spb = r.shared_prefix_boundary;
  // Partial hash hits: the prompt's last prefix_match_unit boundary, where a partial tail is saved.
  const int64_t unit = kv_.hash_unit();
  const int64_t tail_boundary = kv_.partial_hash_hits() ? r.prompt_tokens / unit * unit : 0;
  const int64_t stops[4] = {start % b != 0 ? (start / b + 1) * b : 0,  // re-align a mid-block start
                            last_cache_position,                       // the prompt's last full boundary
                            tail_boundary, start < spb && spb < end ? start + (spb - start) / b * b : 0};  // junction
  for (int64_t s : stops)
    if (start < s && s < end) end = s;
  return std::max<int64_t>(end - start, 0);
}

void Scheduler::record_prefix_stats(EngineRequest& r, int64_t hit_tokens, std::optional<bool> readmission) const {
  // vLLM Scheduler.schedule: "Record at admission so unscheduled lookups are not counted":
  // KVCacheManager.record_prefix_cache_stats(request, num_new_local_computed_tokens) after
  // allocate_slots succeeded; PrefixCacheStats.record(num_tokens=request.num_tokens, num_hits,
  // preempted=request.num_preemptions > 0) (vllm/v1/metrics/stats.py).
  RequestRecord& rec = r.record;
  if (readmission.value_or(rec.preemptions > 0)) {
    rec.preempted_queries += r.num_tokens;
    rec.preempted_hits += hit_tokens;
    return;
  }
  rec.prefix_queries += r.num_tokens;
  rec.prefix_hits += hit_tokens;
  rec.prefix_queries_blocks += r.num_tokens / kv_.block_size();
  rec.prefix_hits_blocks += hit_tokens / kv_.block_size();
}

void Scheduler::touch_hit(const EngineRequest& r, int64_t hit_tokens) {
  if (!config_.miss_attribution) return;
  const int64_t n = std::min<int64_t>(hit_tokens / kv_.block_size(), std::ssize(r.hasher.hashes()));
  touch_keys_.clear();
  for (int64_t k = 0; k < n; ++k) {
    const auto ku = static_cast<size_t>(k);
    touch_keys_.push_back(r.hasher.hashes()[ku]);
    if (r.hasher.has_images()) touch_keys_.push_back(text_only_key(r.hasher.text_only_hash(ku)));
  }
  seen_.touch_all(touch_keys_);
}

void Scheduler::attribute_miss(EngineRequest& r, int64_t cached, int64_t attention) {
  if (!config_.miss_attribution) return;  // engine.miss_attribution: false, every miss unattributed
  // A window model under sparse retention: full attention matched, the window had no kept tail there
  // (reachable_block_mask). Named no_saved_state; a kept tail evicted since reads the same.
  if (!kv_.has_state() && kv_.has_sliding_window() && kv_.has_attention() &&
      config_.window_retention_interval != kRetentionDense && attention > cached) {
    r.record.lost_tokens = attention - cached;
    r.record.cause = MissCause::kNoSavedState;
    return;
  }
  if (kv_.has_state()) {
    // Hybrid: the attention side could back `avail` tokens (its match; state-only models: the prefix
    // registered before); everything between the reused state and it is lost for want of a state.
    const int64_t b = kv_.block_size();
    const auto& hashes = r.hasher.hashes();
    int64_t avail = attention;
    if (!kv_.has_attention()) {
      int64_t s = cached / b;
      while (s < std::ssize(hashes) && seen_.contains(hashes[static_cast<size_t>(s)])) ++s;
      avail = std::min(s * b, r.num_tokens - 1) / b * b;
    }
    if (avail > cached) {
      r.record.lost_tokens = avail - cached;
      r.record.cause = MissCause::kNoSavedState;
      for (int64_t k = avail / b; k > cached / b; --k) {
        if (state_seen_.contains(hashes[static_cast<size_t>(k - 1)])) {
          r.record.cause = MissCause::kStateEvicted;
          break;
        }
      }
      return;
    }
  }
  // Reusable = the prefix seen before (whole blocks registered at some time, then a run-boundary
  // prefix of the next block, or the same text under another image), capped at L - 1 as vLLM's hits.
  const int64_t b = kv_.block_size();
  const int64_t len = r.num_tokens;
  const auto& hashes = r.hasher.hashes();
  const int64_t nblocks = std::ssize(hashes);
  int64_t s = cached / b;
  while (s < nblocks && seen_.contains(hashes[static_cast<size_t>(s)])) ++s;
  int64_t seen_tokens = s * b;
  if (s * b < len) {
    boundaries_.clear();
    r.hasher.boundary_keys(r.seq, s, len, boundaries_);
    for (const auto& [pos, key] : boundaries_)
      if (seen_.contains(key)) seen_tokens = std::max(seen_tokens, pos);
  }
  int64_t text_blocks = s;
  if (r.hasher.has_images()) {
    while (text_blocks < nblocks &&
           seen_.contains(text_only_key(r.hasher.text_only_hash(static_cast<size_t>(text_blocks)))))
      ++text_blocks;
  }
  const int64_t reusable = std::min(std::max(seen_tokens, text_blocks * b), len - 1);
  if (cached >= reusable) return;
  r.record.lost_tokens = reusable - cached;
  const int64_t k = cached / b;
  const bool whole_block_usable = (k + 1) * b <= len - 1;
  if (k < s && whole_block_usable) {
    r.record.cause = offload_ != nullptr && offload_->evicted_from_all_tiers(hashes, k) ? MissCause::kEvictedAllTiers
                                                                                        : MissCause::kEvicted;
  } else if (k < text_blocks && whole_block_usable) {
    r.record.cause = MissCause::kDifferentImage;
  } else if (reusable > cached) {
    r.record.cause = MissCause::kPartialBlock;
  } else {
    r.record.cause = MissCause::kNeverSeen;
  }
}

void Scheduler::lookup_waiting(int slot, EngineRequest& r) {
  // vLLM get_computed_blocks: lookup capped at num_tokens - 1 (its stats are recorded at admission).
  kv_.find_longest_cache_hit(r.hasher.hashes(), r.num_tokens - 1, hit_, r.hasher.fine_hashes());
  if ((kv_.has_state() || kv_.has_sliding_window()) && config_.enable_prefix_caching) {
    // vLLM get_computed_blocks: shared_prefix_boundary = hit + num_uncached_common_prefix_tokens (any
    // hybrid coordinator: full attention matched more than the state or window groups could back). The
    // boundaries decide which state / window blocks keep a hash (reachable_block_mask).
    const int64_t uncached = hit_.attention_tokens - hit_.num_tokens;
    r.shared_prefix_boundary = config_.shared_prefix_checkpoint && uncached > 0 ? hit_.attention_tokens : 0;
    const int64_t b = kv_.block_size();
    kv_.set_state_boundaries(slot, (r.prompt_tokens - 1) / b * b, r.shared_prefix_boundary / b * b);
  }
}

void Scheduler::record_admission(EngineRequest& r, SimTime now) {
  if (r.num_cached_tokens < 0) {
    r.num_cached_tokens = hit_.num_tokens;
    r.record.first_scheduled = now;
    // Hybrids: the attention match (state-only models have none: the reused state).
    r.record.matched_tokens = !kv_.has_state()      ? hit_.first_pass_tokens
                              : kv_.has_attention() ? std::max(hit_.attention_tokens, hit_.num_tokens)
                                                    : hit_.num_tokens;
    r.record.cached_tokens = hit_.num_tokens;
    if (config_.enable_prefix_caching) attribute_miss(r, hit_.num_tokens, hit_.attention_tokens);
  }
  if (config_.enable_prefix_caching) touch_hit(r, hit_.num_tokens);
  r.num_computed = hit_.num_tokens;
}

void Scheduler::schedule(SimTime now, SchedulerOutput& out) {
  if (config_.step_policy == StepPolicy::kSglang) {
    schedule_sglang(now, out);
    return;
  }
  out.clear();
  kv_.new_step();
  int64_t budget = config_.max_num_batched_tokens;
  const int64_t thr = config_.long_prefill_token_threshold;

  // 1. Running requests, in list order.
  size_t i = 0;
  while (i < running_.size() && budget > 0) {
    const int slot = running_[i];
    EngineRequest& r = request(slot);
    int64_t n = r.num_tokens - r.num_computed;
    if (thr > 0) n = std::min(n, thr);
    n = std::min(n, budget);
    n = std::min(n, config_.max_model_len - 1 - r.num_computed);
    if (align_ && n > 0) n = align_split(r, r.num_computed, n);
    if (n <= 0) {
      ++i;
      continue;
    }
    bool scheduled = false;
    while (true) {
      if (kv_.allocate_slots(slot, r.num_computed, n, nullptr, 0, 0)) {
        scheduled = true;
        break;
      }
      size_t victim_index = running_.size() - 1;
      if (priority_) {
        for (size_t j = 0; j < running_.size(); ++j) {
          const EngineRequest& a = request(running_[j]);
          const EngineRequest& v = request(running_[victim_index]);
          if (std::tie(a.spec.priority, a.record.arrival, a.arrival_seq) >
              std::tie(v.spec.priority, v.record.arrival, v.arrival_seq))
            victim_index = j;
        }
      }
      const int victim = running_[victim_index];
      budget += preempt_running(victim_index, i, slot, out);  // priority policy: an earlier one's tokens back
      if (victim == slot) break;
    }
    // vLLM: `if new_blocks is None: break`. The request preempted itself; later running requests wait
    // for the next step (under FCFS it was the last one anyway).
    if (!scheduled) break;
    const int64_t b = kv_.block_size(), unit = kv_.hash_unit();
    const bool copy_out =
        kv_.partial_hash_hits() && r.num_computed % b != 0 && r.num_computed == r.prompt_tokens / unit * unit;
    out.scheduled.push_back(ScheduledRequest{slot, n, r.num_computed, copy_out});
    register_blocks(slot, std::min(r.num_computed + n, r.num_tokens));
    budget -= n;
    ++i;
  }

  // 2. Waiting requests, only when nothing was preempted this step.
  if (out.preemptions > 0) return;
  // vLLM KVCacheManager: watermark_blocks = int(watermark * num_blocks), applied to an admission while the
  // running list is not empty (scheduler.py `has_scheduled_reqs=bool(self.running)`, PR #44594).
  const int64_t watermark_blocks =
      static_cast<int64_t>(config_.watermark * static_cast<double>(kv_.pool().num_blocks()));
  while ((!waiting_empty() || !remote_ready_.empty()) && budget > 0) {
    if (std::ssize(running_) >= config_.max_num_seqs) break;
    if (!remote_ready_.empty()) {
      // A pulled request: num_computed = N - 1 (remote_loaded), one token to compute. A tier-loaded one:
      // the rest of its prompt, chunked like any prefill.
      const int slot = remote_ready_.front();
      EngineRequest& r = request(slot);
      int64_t n = r.num_tokens - r.num_computed;
      const bool tier = r.remote != RemoteKv::kReceive;
      if (tier) {
        if (thr > 0) n = std::min(n, thr);
        if (!config_.enable_chunked_prefill && n > budget) break;
        n = std::min(n, budget);
        // Hybrids: the rest of a tier-loaded prompt is chunked like any prefill (states on block boundaries).
        if (align_) {
          n = align_split(r, r.num_computed, n);
          if (n == 0) break;
        }
      }
      const int64_t reserve = running_.empty() ? 0 : watermark_blocks;
      if (!kv_.allocate_slots(slot, r.num_computed, n, nullptr, 0, reserve)) break;
      remote_ready_.pop_front();
      running_.push_back(slot);
      r.status = RequestStatus::kRunning;
      if (!tier) r.record.decode_scheduled = now;
      out.scheduled.push_back(ScheduledRequest{slot, n, r.num_computed, false});
      register_blocks(slot, std::min(r.num_computed + n, r.num_tokens));
      budget -= n;
      continue;
    }
    const int slot = waiting_front();
    EngineRequest& r = request(slot);
    KVSIM_CHECK(r.num_computed == 0, "waiting request with computed tokens");
    lookup_waiting(slot, r);
    const bool pull = r.remote == RemoteKv::kReceive && !r.remote_loaded;
    if (pull) {
      // vLLM NIXL get_num_new_matched_tokens: the prompt beyond the local hit is external (N - 1 tokens for
      // Mamba models, _get_remote_prefill_token_count), loaded asynchronously: allocate_slots for the hit
      // plus the external tokens with delay_cache_blocks, 0 tokens scheduled, no budget used, and the
      // request waits in WAITING_FOR_REMOTE_KVS holding its blocks (scheduler.py, schedule()).
      const int64_t upto = kv_.has_state() ? r.num_tokens - 1 : r.num_tokens;
      const int64_t reserve = running_.empty() ? 0 : watermark_blocks;
      const int64_t full = config_.scheduler_reserve_full_isl ? r.num_tokens : 0;
      // Nothing external (a Mamba model's 1-token prompt, or a local hit of the N - 1 tokens): vLLM
      // computes the rest locally and still notifies the prefill side to free; kvsim keeps the request
      // on the pull path, whose 0-byte message does that, and computes the last token after it. The hit,
      // if any, is pinned meanwhile.
      const int64_t external = std::max<int64_t>(upto - hit_.num_tokens, 0);
      if ((external > 0 || hit_.num_tokens > 0) && !kv_.allocate_slots(slot, 0, external, &hit_, full, reserve)) break;
      // The decode instance's own lookup is counted in its prefix-cache metrics like any admission's
      // (vLLM get_computed_blocks / record_prefix_cache_stats run for requests with kv_transfer_params too);
      // it is this instance's first admission, whatever the prefill side's preemptions.
      if (config_.enable_prefix_caching) record_prefix_stats(r, hit_.num_tokens, /*readmission=*/false);
      waiting_pop_front();
      r.status = RequestStatus::kWaitingForRemoteKvs;
      ++remote_waiting_;
      r.num_cached_tokens = hit_.num_tokens;
      r.record.decode_cached_tokens = hit_.num_tokens;
      out.remote_waits.emplace_back(slot, hit_.num_tokens);
      continue;
    }
    if (offload_ != nullptr && !r.remote_loaded) {
      // vLLM OffloadingConnector get_num_new_matched_tokens after the local hit: a hit of >= 1 chunk is
      // loaded asynchronously like a pull (allocate the hit + the external tokens, schedule 0 tokens, wait
      // in WAITING_FOR_REMOTE_KVS holding the blocks); BLOCK_LEVEL policy: the hit chunks are not stored again.
      const TierHit th = offload_->lookup(r.hasher.hashes(), hit_.num_tokens, r.num_tokens);
      if (th.tokens() > 0) {
        const int64_t reserve = running_.empty() ? 0 : watermark_blocks;
        const int64_t full = config_.scheduler_reserve_full_isl ? r.num_tokens : 0;
        if (!kv_.allocate_slots(slot, 0, th.end - hit_.num_tokens, &hit_, full, reserve)) break;
        record_prefix_stats(r, hit_.num_tokens);
        waiting_pop_front();
        r.status = RequestStatus::kWaitingForRemoteKvs;
        ++remote_waiting_;
        r.tier_load_end = th.end;
        r.next_store_chunk = std::max(r.next_store_chunk, th.end / offload_->config().chunk_tokens);
        if (r.num_cached_tokens < 0) {
          r.num_cached_tokens = hit_.num_tokens;
          r.record.first_scheduled = now;
          r.record.matched_tokens = hit_.first_pass_tokens;
          r.record.cached_tokens = hit_.num_tokens;
          r.record.tier_cached_tokens = std::min(th.end, r.num_tokens - 1) - hit_.num_tokens;
          r.record.tier_cached_blocks = th.tokens() / kv_.block_size();
          for (const TierSegment& seg : th.segments) {
            const auto t = static_cast<size_t>(seg.tier);
            // A full-prompt hit keeps its last token to compute: the last segment gives it up.
            r.record.tier_cached_tokens_by_tier[t] += std::min(seg.end, r.num_tokens - 1) - seg.begin;
            r.record.tier_cached_blocks_by_tier[t] += (seg.end - seg.begin) / kv_.block_size();
          }
          attribute_miss(r, std::min(th.end, r.num_tokens - 1), hit_.attention_tokens);
        }
        touch_hit(r, std::min(th.end, r.num_tokens - 1));
        out.tier_loads.emplace_back(slot, th);
        continue;
      }
    }
    int64_t n = r.num_tokens - hit_.num_tokens;
    if (thr > 0) n = std::min(n, thr);
    if (!config_.enable_chunked_prefill && n > budget) break;
    n = std::min(n, budget);
    if (align_) {
      n = align_split(r, hit_.num_tokens, n);
      if (n == 0) break;  // less than a block of budget left: admission ends this step
    }
    KVSIM_CHECK(n > 0, "nothing to schedule for a waiting request");
    const int64_t reserve = running_.empty() ? 0 : watermark_blocks;
    const int64_t full = config_.scheduler_reserve_full_isl ? r.num_tokens : 0;
    if (!kv_.allocate_slots(slot, 0, n, &hit_, full, reserve)) break;
    if (config_.enable_prefix_caching) record_prefix_stats(r, hit_.num_tokens);
    waiting_pop_front();
    running_.push_back(slot);
    r.status = RequestStatus::kRunning;
    record_admission(r, now);
    const bool cow = kv_.partial_hash_hits() && hit_.num_tokens % kv_.block_size() != 0;
    out.scheduled.push_back(ScheduledRequest{slot, n, r.num_computed, cow});
    register_blocks(slot, std::min(r.num_computed + n, r.num_tokens));
    budget -= n;
  }
}

void Scheduler::append_token(int slot) {
  EngineRequest& r = request(slot);
  // Generated token j (0-based) has identity (output_content_id, j).
  r.seq.append(r.spec.output_content_id, r.generated, 1, false);
  ++r.generated;
  ++r.num_tokens;
  if (config_.enable_prefix_caching) r.hasher.extend(r.seq);
}

void Scheduler::finish(int slot) {
  kv_.free(slot);
  finished_mark_[static_cast<size_t>(slot)] = 1;
}

void Scheduler::hold(int slot) {
  EngineRequest& r = request(slot);
  KVSIM_CHECK(r.remote == RemoteKv::kSend, "only a prefill-for-remote request is held");
  finished_mark_[static_cast<size_t>(slot)] = 1;
  r.status = RequestStatus::kHeld;
  ++held_;
}

void Scheduler::release_held(int slot) {
  KVSIM_CHECK(request(slot).status == RequestStatus::kHeld, "release of a request that is not held");
  kv_.free(slot);
  --held_;
  release(slot);
}

void Scheduler::remote_loaded(int slot) {
  EngineRequest& r = request(slot);
  KVSIM_CHECK(r.status == RequestStatus::kWaitingForRemoteKvs, "pull finished for a request not waiting on one");
  --remote_waiting_;
  r.remote_loaded = true;
  // vLLM _update_waiting_for_remote_kv: num_computed = min(blocks x B, num_tokens), minus 1 on a full hit.
  r.num_computed = r.num_tokens - 1;
  register_blocks(slot, r.num_computed);
  r.status = RequestStatus::kWaiting;
  remote_ready_.push_back(slot);
}

void Scheduler::tier_loaded(int slot) {
  EngineRequest& r = request(slot);
  KVSIM_CHECK(r.status == RequestStatus::kWaitingForRemoteKvs && r.tier_load_end > 0,
              "tier load finished for a request not waiting on one");
  --remote_waiting_;
  r.num_computed = std::min(r.tier_load_end, r.num_tokens - 1);
  r.tier_load_end = 0;
  register_blocks(slot, r.num_computed);
  r.status = RequestStatus::kWaiting;
  remote_ready_.push_back(slot);
}

void Scheduler::compact_running() {
  auto keep = std::remove_if(running_.begin(), running_.end(),
                             [this](int s) { return finished_mark_[static_cast<size_t>(s)] != 0; });
  running_.erase(keep, running_.end());
}

void Scheduler::release(int slot) {
  EngineRequest& r = request(slot);
  r = EngineRequest{};
  finished_mark_[static_cast<size_t>(slot)] = 0;
  free_slots_.push_back(slot);
}

int Scheduler::preempt_loaded_behind_head(SchedulerOutput& out) {
  KVSIM_CHECK(running_.empty(), "preempting loaded requests while others run");
  if (remote_ready_.size() < 2) return 0;
  // One at a time, the last first (the caller plans again after each), so that no more loads are thrown
  // away than the head needs, and the preempted keep their order at the front of the waiting queue.
  const int slot = remote_ready_.back();
  remote_ready_.pop_back();
  preempt(slot, out);
  ++out.preemptions;
  return 1;
}

int Scheduler::pop_unschedulable_head() {
  KVSIM_CHECK(running_.empty() && (!waiting_empty() || !remote_ready_.empty()), "no unschedulable head");
  int slot;
  if (!remote_ready_.empty()) {
    slot = remote_ready_.front();
    remote_ready_.pop_front();
  } else {
    slot = waiting_front();
    waiting_pop_front();
  }
  kv_.free(slot);
  EngineRequest& r = request(slot);
  // Without chunked prefill admission stops at a prompt beyond the budget; else its blocks never fit.
  const bool over_budget = !config_.enable_chunked_prefill && r.num_tokens > config_.max_num_batched_tokens;
  r.record.rejected = over_budget ? RejectReason::kOverBudget : RejectReason::kDoesNotFit;
  if (!over_budget && r.num_computed == 0 && kv_.partial_hash_hits()) {
    // A hit inside a block asks, per state group, for the hit state, its copy-on-write block and the
    // running one (vLLM MambaManager.get_num_blocks_to_allocate: 1 + int(has_partial_hit) plus the
    // evictable hit), one more than the start-up check's 2: the request would fit without its hit, and
    // vLLM keeps it waiting for good. Named apart so that the cause shows.
    kv_.find_longest_cache_hit(r.hasher.hashes(), r.num_tokens - 1, hit_, r.hasher.fine_hashes());
    if (hit_.num_tokens % kv_.block_size() != 0) r.record.rejected = RejectReason::kHitDoesNotFit;
  }
  return slot;
}

std::vector<int> Scheduler::live_slots() const {
  std::vector<int> out;
  for (size_t s = 0; s < requests_.size(); ++s)
    if (requests_[s].status != RequestStatus::kFree) out.push_back(static_cast<int>(s));
  return out;
}

}  // namespace kvsim
