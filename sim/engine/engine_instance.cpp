#include "sim/engine/engine_instance.h"

#include <algorithm>
#include <cstdint>

#include "sim/core/check.h"
#include "sim/core/errors.h"
#include "sim/perf/batch_shape.h"

namespace kvsim {
namespace {
constexpr uint32_t kTagSchedule = 0x10;
constexpr uint32_t kTagStepDone = 0x11;
}  // namespace

EngineInstance::EngineInstance(SimContext& ctx, EngineConfig config, const ILatencyModel& latency, IRecordSink& sink)
    : ctx_(ctx), config_(std::move(config)), latency_(latency), sink_(sink), scheduler_(config_) {
  if (config_.kv_offload.enabled) {
    offload_ = std::make_unique<KvOffload>(ctx_, config_.kv_offload, config_.layout.block_size, latency_,
                                           config_.max_num_batched_tokens);
    scheduler_.set_offload(offload_.get());
    scheduler_.kv().pool().set_allocation_log(&allocated_);
  }
  window_ = config_.layout.first_window();
}

void EngineInstance::submit(RequestSpec spec, SimTime arrival) { submit(std::move(spec), arrival, RemoteKv::kNone); }

void EngineInstance::submit(RequestSpec spec, SimTime arrival, RemoteKv remote, const RequestRecord* prefill) {
  KVSIM_CHECK(arrival <= ctx_.now(), "request submitted before it arrived");
  ++totals_.submitted;
  int64_t prompt = 0;
  for (const Segment& s : spec.prompt) {
    if (s.tokens < 0) throw InputError("request " + std::to_string(spec.id.value()) + ": negative segment length");
    prompt += s.tokens;
  }
  if (spec.prompt_tokens != 0 && spec.prompt_tokens != prompt) {
    throw InputError("request " + std::to_string(spec.id.value()) + ": prompt_tokens " +
                     std::to_string(spec.prompt_tokens) + " != sum of segments " + std::to_string(prompt));
  }
  if (prompt <= 0 || prompt >= config_.max_model_len) {
    // vLLM rejects such a request at its API; here it leaves with an unfinished record.
    RequestRecord rec;
    rec.rejected = prompt <= 0 ? RejectReason::kEmptyPrompt : RejectReason::kPromptTooLong;
    rec.id = spec.id;
    rec.arrival = arrival;
    rec.prompt_tokens = prompt;
    rec.requested_output_tokens = std::max<int64_t>(spec.output_tokens, 1);  // as Scheduler::add_request
    rec.instance = config_.instance;
    rec.pool = config_.pool;
    emit_rejected(rec);
    return;
  }
  if (remote == RemoteKv::kSend && scheduler_.kv().has_state() && prompt > 1) {
    // vLLM _truncate_mamba_request_for_prefill: a hybrid's prefill instance computes N - 1 prompt tokens,
    // the state the decode side pulls (it recomputes the last token itself). vLLM truncates after its own
    // prefix lookup of the whole prompt (capped at N - 1); truncated here, the lookup stops at N - 2: they
    // differ only for a kept state at exactly N - 1.
    while (!spec.prompt.empty() && spec.prompt.back().tokens == 0) spec.prompt.pop_back();
    if (--spec.prompt.back().tokens == 0) spec.prompt.pop_back();
    --prompt;
    if (spec.prompt_tokens != 0) spec.prompt_tokens = prompt;
  }
  // vLLM: max_tokens is capped so prompt + output fits max_model_len.
  // NIXL proxy: the prefill side gets max_tokens = 1 (toy_proxy_server.py).
  const int64_t max_output = remote == RemoteKv::kSend ? 1
                                                       : std::min<int64_t>(std::max<int64_t>(spec.output_tokens, 1),
                                                                           config_.max_model_len - prompt);
  const int slot = scheduler_.add_request(std::move(spec), prompt, max_output, arrival, remote);
  RequestRecord& rec = scheduler_.request(slot).record;
  if (remote == RemoteKv::kSend) rec.prefill_submitted = ctx_.now();
  if (prefill != nullptr) {
    rec.prefill_instance = prefill->instance;
    rec.prefill_submitted = prefill->prefill_submitted;
    rec.prefill_done = prefill->finish;
    rec.first_scheduled = prefill->first_scheduled;
    rec.matched_tokens = prefill->matched_tokens;
    rec.cached_tokens = prefill->cached_tokens;
    rec.lost_tokens = prefill->lost_tokens;
    rec.cause = prefill->cause;
    rec.prefix_queries = prefill->prefix_queries;
    rec.prefix_hits = prefill->prefix_hits;
    rec.preempted_queries = prefill->preempted_queries;
    rec.preempted_hits = prefill->preempted_hits;
    rec.prefix_queries_blocks = prefill->prefix_queries_blocks;
    rec.prefix_hits_blocks = prefill->prefix_hits_blocks;
    rec.saved_state_positions = prefill->saved_state_positions;
    rec.preemptions = prefill->preemptions;
    // Its tier hit is the prefill instance's (the decode side looks up no tier for a pull); the bytes the
    // prefill side copied count with those the decode side copies (each instance's tier totals hold both).
    rec.tier_cached_tokens = prefill->tier_cached_tokens;
    rec.tier_cached_blocks = prefill->tier_cached_blocks;
    rec.tier_cached_tokens_by_tier = prefill->tier_cached_tokens_by_tier;
    rec.tier_cached_blocks_by_tier = prefill->tier_cached_blocks_by_tier;
    rec.tier_loaded_bytes = prefill->tier_loaded_bytes;
    rec.tier_load_ns = prefill->tier_load_ns;
    rec.tier_loads = prefill->tier_loads;
    rec.tier_stored_bytes = prefill->tier_stored_bytes;
    rec.tier_stores_skipped_chunks = prefill->tier_stores_skipped_chunks;
  }
  request_schedule();
}

void EngineInstance::remote_kv_loaded(int slot, SimTime start, SimTime end, int64_t bytes, SimTime prefill_done) {
  RequestRecord& rec = scheduler_.request(slot).record;
  rec.prefill_done = prefill_done;
  rec.transfer_start = start;
  rec.transfer_end = end;
  rec.transfer_bytes = bytes;
  scheduler_.remote_loaded(slot);
  request_schedule();
}

void EngineInstance::release_held(int slot) {
  scheduler_.release_held(slot);
  if (scheduler_.num_running() > 0 || scheduler_.num_waiting() > 0) request_schedule();
}

void EngineInstance::request_schedule() {
  if (step_in_flight_ || schedule_pending_) return;
  schedule_pending_ = true;
  ctx_.queue.schedule(ctx_.now(), Phase::kSchedule, kTagSchedule, [this] { on_schedule(); });
}

void EngineInstance::emit_rejected(RequestRecord rec) {
  rec.finished = false;
  rec.finish = ctx_.now();
  sink_.on_request_done(rec);
  ++totals_.rejected;
  if (on_done_) on_done_(rec.id, false);
}

void EngineInstance::on_schedule() {
  schedule_pending_ = false;
  allocated_.clear();
  preempted_.clear();
  while (true) {
    scheduler_.schedule(ctx_.now(), out_);
    totals_.preemptions += out_.preemptions;
    step_preemptions_ += out_.preemptions;
    if (offload_)
      for (int slot : out_.preempted) preempted_.push_back(scheduler_.request(slot).record.id);
    for (int slot : out_.rejected) {
      EngineRequest& r = scheduler_.request(slot);
      r.record.output_tokens = r.generated;
      emit_rejected(r.record);
      scheduler_.release(slot);
    }
    if (offload_) start_tier_loads();
    for (const auto& [slot, hit] : out_.remote_waits) {
      KVSIM_CHECK(on_remote_wait_, "a pull with nobody to start it");
      on_remote_wait_(scheduler_.request(slot).record.id, slot, hit);
    }
    if (!out_.scheduled.empty()) break;
    if (scheduler_.num_waiting() == 0 && scheduler_.num_running() == 0) return;
    if (out_.preemptions > 0) continue;  // a request preempted itself; admission runs next round
    KVSIM_CHECK(scheduler_.num_running() == 0, "running requests but nothing scheduled");
    // Blocks held for another instance come back when a pull ends or a held send is released.
    if (scheduler_.num_external_holds() > 0) return;
    // Loaded requests queued behind the head may hold blocks it lacks: they go back to waiting, one a round
    // (a deviation from vLLM, which stalls here; scheduler.h).
    out_.preempted.clear();
    if (const int n = scheduler_.preempt_loaded_behind_head(out_); n > 0) {
      totals_.preemptions += n;
      step_preemptions_ += n;
      if (offload_)
        for (int slot : out_.preempted) preempted_.push_back(scheduler_.request(slot).record.id);
      continue;
    }
    // The head of the waiting queue does not fit even in an empty pool: it can never run.
    const int slot = scheduler_.pop_unschedulable_head();
    emit_rejected(scheduler_.request(slot).record);
    scheduler_.release(slot);
  }
  if (on_last_prefill_chunk_) {
    for (const ScheduledRequest& s : out_.scheduled) {
      const EngineRequest& r = scheduler_.request(s.slot);
      if (r.remote == RemoteKv::kSend && s.num_computed_before < r.prompt_tokens &&
          s.num_computed_before + s.num_tokens >= r.prompt_tokens)
        on_last_prefill_chunk_(r.record.id, r.record);
    }
  }
  if (offload_) offer_stores();
  const BatchShape shape = batch_shape();
  const Duration d = latency_.step_time(shape);
  KVSIM_CHECK(d >= Duration::ns(0), "negative step time from " << latency_.name());
  // The clock counts int64 nanoseconds (about 292 years). Input bounds keep one step far below that,
  // but a long run of very slow steps (a GPU of 1 TFLOP/s and 1 MB/s) could still pass it.
  if (d.ns() > INT64_MAX - ctx_.now().ns())
    throw InputError("the simulated clock would pass 292 years (a step of " + std::to_string(d.seconds()) + " s at " +
                     std::to_string(ctx_.now().seconds()) +
                     " s): the GPU's FLOP/s and bandwidths are too low for this workload");
  step_start_ = ctx_.now();
  step_in_flight_ = true;
  // Rule 24 (vLLM offloading/scheduler.py build_connector_meta: jobs_to_flush = the store jobs of requests
  // preempted this step and of GPU blocks re-allocated this step; offloading/worker.py handle_preemptions
  // waits for them synchronously before the forward pass): the step computes only after those stores end.
  const StoreFence fence = offload_ ? offload_->store_fence(allocated_, preempted_) : StoreFence{ctx_.now()};
  // Over a topology the store's end is known only at its completion event: the step starts from it.
  if (offload_ && offload_->waiting(fence)) {
    offload_->after(fence, [this, d] { start_compute(ctx_.now(), d); });
    return;
  }
  start_compute(fence.at, d);
}

void EngineInstance::start_compute(SimTime at, Duration d) {
  store_wait_ = at - step_start_;
  if (d.ns() > INT64_MAX - at.ns())
    throw InputError("the simulated clock would pass 292 years (a store fence at " + std::to_string(at.seconds()) +
                     " s)");
  ctx_.queue.schedule(at + d, Phase::kStepDone, kTagStepDone, [this] { on_step_done(); });
}

BatchShape EngineInstance::batch_shape() const {
  BatchShape b;
  const KvCacheCoordinator& kv = scheduler_.kv();
  const bool state = kv.has_state();
  const bool checkpoints = state && config_.enable_prefix_caching && config_.mamba_cache_mode != MambaCacheMode::kNone;
  const int64_t bs = kv.block_size();
  const int64_t topk = config_.sparse_topk;
  for (const ScheduledRequest& s : out_.scheduled) {
    const EngineRequest& r = scheduler_.request(s.slot);
    const int64_t c = s.num_computed_before;
    const int64_t n = s.num_tokens;
    if (state) {
      ++b.state_requests;
      // vLLM preprocess_mamba: a step that crosses into a new block column first copies the state
      // forward (from the hit block too); "all" writes a state per boundary crossed.
      const int64_t crossed = (c + n + bs - 1) / bs - (c + bs - 1) / bs;
      // Partial hash hits: one more state copy (copy-on-write of a partial hit, or the copy-out of the
      // request's own partial tail); the attention block copied on write is not timed.
      if (checkpoints && ((c > 0 && crossed > 0) || s.partial_state_copy))
        b.state_copy_bytes += kv.state_bytes() * (config_.mamba_cache_mode == MambaCacheMode::kAll ? crossed : 1);
    }
    const bool decode = n == 1 && c >= r.prompt_tokens;
    if (decode)
      add_decode(b, c, window_, topk);
    else
      add_prefill_chunk(b, c, n, window_, topk);
  }
  return b;
}

void EngineInstance::offer_stores() {
  // vLLM _build_store_jobs: tokens after the step = computed + scheduled; offloadable = that, capped at the
  // prompt with offload_prompt_only; whole chunks only.
  for (const ScheduledRequest& s : out_.scheduled) {
    EngineRequest& r = scheduler_.request(s.slot);
    int64_t upto = std::min(s.num_computed_before + s.num_tokens, r.num_tokens);
    if (config_.kv_offload.offload_prompt_only) upto = std::min(upto, r.prompt_tokens);
    const KvCacheCoordinator& kv = scheduler_.kv();
    const std::vector<int64_t>& saved = r.record.saved_state_positions;
    offload_->offer_store(
        r.record.id, r.hasher.hashes(), kv.manager(kv.history_group()).blocks(s.slot), r.next_store_chunk, upto,
        r.record, [&saved](int64_t pos) { return std::find(saved.begin(), saved.end(), pos) != saved.end(); },
        [&kv, slot = s.slot](int64_t pos, std::vector<int32_t>& out) {
          // State tables are position-indexed: the state saved at pos is in column pos / B - 1.
          const auto col = static_cast<size_t>(pos / kv.block_size() - 1);
          for (int g = 0; g < kv.num_groups(); ++g) {
            if (kv.manager(g).kind() != KvGroupKind::kState) continue;
            const std::span<const BlockId> t = kv.manager(g).blocks(slot);
            if (col < t.size() && t[col] != kNullBlock) out.push_back(t[col]);
          }
        });
  }
}

void EngineInstance::start_tier_loads() {
  for (const auto& [slot, hit] : out_.tier_loads) {
    EngineRequest& r = scheduler_.request(slot);
    r.record.tier_loaded_bytes += offload_->load_bytes_total(hit);
    ++r.record.tier_loads;
    const SimTime submitted = ctx_.now();
    // Rule 24: the load writes the request's blocks past its GPU hit, handed out this step; it waits for
    // their running stores, and for those of requests preempted this step (vLLM waits before the step).
    const KvCacheCoordinator& kv = scheduler_.kv();
    const std::span<const BlockId> table = kv.manager(kv.history_group()).blocks(slot);
    const size_t first = std::min(table.size(), static_cast<size_t>(hit.begin / kv.block_size()));
    offload_->start_load(
        r.hasher.hashes(), hit,
        [this, slot, submitted](SimTime, SimTime end) {
          scheduler_.request(slot).record.tier_load_ns += (end - submitted).ns();
          scheduler_.tier_loaded(slot);
          request_schedule();
        },
        offload_->store_fence(table.subspan(first), preempted_));
  }
}

void EngineInstance::on_step_done() {
  step_in_flight_ = false;
  const SimTime now = ctx_.now();
  if (offload_) offload_->submit_stores();  // vLLM: stores built in step k are submitted at step k + 1
  StepRecord step;
  step.start = step_start_;
  step.end = now;
  step.preemptions = step_preemptions_;  // every planning round of this step, not only the last
  step_preemptions_ = 0;
  step.instance = config_.instance;
  if (offload_) {
    step.store_wait_ns = store_wait_.ns();
    for (int i = 0; i < offload_->num_tiers(); ++i)
      step.tier_used_bytes[static_cast<size_t>(i)] = offload_->used_bytes(i);
  }
  done_.clear();
  for (const ScheduledRequest& s : out_.scheduled) {
    EngineRequest& r = scheduler_.request(s.slot);
    if (s.num_tokens == 1 && s.num_computed_before >= r.prompt_tokens) {
      ++step.num_decode_requests;
      ++step.num_decode_tokens;
    } else {
      ++step.num_prefill_requests;
      step.num_prefill_tokens += s.num_tokens;
    }
    r.num_computed += s.num_tokens;
    KVSIM_CHECK(r.num_computed <= r.num_tokens, "computed beyond the sequence");
    scheduler_.note_progress(s.slot);
    if (r.num_computed < r.num_tokens) continue;
    // The step computed the last known token: one token is sampled at step end.
    scheduler_.append_token(s.slot);
    if (!r.first_token_emitted) {
      r.first_token_emitted = true;
      r.record.first_token = now;
      if (on_first_token_) on_first_token_(r.record.id);
    }
    if (r.remote != RemoteKv::kSend) sink_.on_tokens(r.record.id, now, 1);
    if (r.generated >= r.max_output) done_.push_back(s.slot);
  }
  for (int slot : done_) {
    EngineRequest& r = scheduler_.request(slot);
    if (r.remote == RemoteKv::kSend)
      scheduler_.hold(slot);
    else
      scheduler_.finish(slot);
    r.record.finish = now;
    r.record.output_tokens = r.generated;
    r.record.finished = true;
    ++totals_.finished;
    totals_.generated_tokens_finished += r.generated;
    totals_.requested_tokens_finished += r.max_output;
    totals_.prompt_tokens += r.prompt_tokens;
    totals_.cached_tokens += std::max<int64_t>(r.num_cached_tokens, 0);
    if (r.remote != RemoteKv::kSend) sink_.on_request_done(r.record);
  }
  scheduler_.compact_running();
  for (int slot : done_) {
    EngineRequest& r = scheduler_.request(slot);
    const RequestId id = r.record.id;
    if (r.remote == RemoteKv::kSend) {
      KVSIM_CHECK(on_prefill_sent_, "a prefill for a remote decode with nobody to receive it");
      on_prefill_sent_(id, slot, r.record);
      continue;
    }
    scheduler_.release(slot);
    if (on_done_) on_done_(id, true);
  }
  ++totals_.steps;
  step.running = scheduler_.num_running();
  step.waiting = scheduler_.num_waiting();
  step.kv_blocks_used = kv().pool().num_used_blocks();
  step.kv_blocks_cached = kv().pool().num_cached_free_blocks();
  sink_.on_step(step);
  if (scheduler_.num_running() > 0 || scheduler_.num_waiting() > 0) request_schedule();
}

int64_t EngineInstance::held_blocks(RequestId id) const {
  for (int slot : scheduler_.live_slots()) {
    if (scheduler_.request(slot).record.id == id) return kv().num_held_blocks(slot);
  }
  return 0;
}

int64_t EngineInstance::cached_prefix_blocks(std::span<const uint64_t> hashes) const {
  if (!config_.enable_prefix_caching) return 0;
  const KvCacheCoordinator& kv = scheduler_.kv();
  int64_t n = 0;
  for (uint64_t h : hashes) {
    if (kv.pool().get_cached_block(cache_key(h, kv.history_group())) == kNoBlock) break;
    ++n;
  }
  return n;
}

void EngineInstance::check_invariants() const {
  const KvCacheCoordinator& kv = scheduler_.kv();
  const BlockPool& pool = kv.pool();
  // Blocks never handed out (the pool's never-used run) are free and unreferenced by construction: the
  // checks walk the blocks handed out, which every held block is one of.
  const int64_t handed_out = pool.num_materialised_blocks();
  std::vector<int32_t> uses(static_cast<size_t>(handed_out) + 1, 0);
  for (int slot : scheduler_.live_slots()) {
    for (int g = 0; g < kv.num_groups(); ++g) {
      for (BlockId b : kv.manager(g).blocks(slot)) {
        if (b == kNullBlock) continue;
        KVSIM_CHECK(b <= handed_out, "slot " << slot << " holds block " << b << ", never handed out");
        ++uses[static_cast<size_t>(b)];
      }
    }
  }
  int64_t used = 0;
  for (BlockId b = 1; b <= handed_out; ++b) {
    const int32_t u = uses[static_cast<size_t>(b)];
    KVSIM_CHECK(pool.ref_cnt(b) == u, "block " << b << " ref_cnt " << pool.ref_cnt(b) << " but " << u << " uses");
    KVSIM_CHECK((u == 0) == pool.in_free_queue(b), "block " << b << " free-queue membership wrong");
    used += u > 0;
  }
  const auto queue = pool.linked_free_blocks();
  const int64_t free = std::ssize(queue) + pool.num_usable_blocks() - handed_out;
  KVSIM_CHECK(free == pool.num_free_blocks(), "free queue length " << free << " != counter");
  KVSIM_CHECK(free + used == pool.num_usable_blocks(),
              "free " << free << " + used " << used << " != " << pool.num_usable_blocks());
  int64_t cached_free = 0;
  for (BlockId b : queue) cached_free += pool.has_hash(b);
  KVSIM_CHECK(cached_free == pool.num_cached_free_blocks(), "cached-free counter wrong");
}

}  // namespace kvsim
