#pragma once
// Typed records that models emit; sinks decide what is stored (HDF5, JSON summary, in memory).
// Models never print or write files themselves.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/strong_int.h"
#include "sim/core/time.h"

namespace kvsim {

// Offload tiers of one engine at most (engine.kv_offload.tiers: one of each kind host, nvme, remote).
inline constexpr int kMaxOffloadTiers = 3;

// Why part of a prompt that matched in attention, or had been seen before, was not reused.
enum class MissCause : uint8_t {
  kNone = 0,      // everything reusable was reused (or nothing could have been)
  kNeverSeen,     // the blocks were not in the cache within the attribution's horizon (scheduler.h)
  kEvicted,       // attention blocks had been cached (exactly known) but were evicted
  kPartialBlock,  // the matching part ends inside a block (only whole blocks hit)
  // A what-if, not a cache loss: the same text had been cached under another image; the tokens would
  // hit only if the image were the same. Summaries report it apart (what_if_lost_tokens).
  kDifferentImage,
  kNoSavedState,  // hybrid: attention matched, but no saved state inside the match (window: no kept tail)
  kStateEvicted,  // hybrid: the saved state had existed but was evicted
  // kEvicted where the first missing block had also been stored in an offload tier (engine.kv_offload)
  // and is now gone from the GPU and from every tier.
  kEvictedAllTiers,
};
const char* miss_cause_name(MissCause c);
// True for causes that are what-ifs rather than lost reuse (kDifferentImage).
bool is_what_if(MissCause c);
constexpr int kNumMissCauses = 8;

// Why a request left unfinished without being cut off by the end of the run (vLLM refuses such a
// request at its API or the configuration at start-up).
enum class RejectReason : uint8_t {
  kNone = 0,       // finished, or still in the engine when the run ended
  kEmptyPrompt,    // no prompt tokens
  kPromptTooLong,  // prompt of max_model_len tokens or more
  kOverBudget,     // chunked prefill off and the prompt exceeds max_num_batched_tokens
  kDoesNotFit,     // its blocks (the prompt's, or with tokens generated) do not fit in the empty KV cache
  kNoProgress,     // alone in the KV cache it preempted itself twice at the same point: it never ends
  kHitDoesNotFit,  // with its partial prefix-cache hit (copy-on-write blocks) it does not fit the empty KV cache
};
const char* reject_reason_name(RejectReason r);
// One sentence for reports: "prompt of max_model_len tokens or more".
const char* reject_reason_text(RejectReason r);
constexpr int kNumRejectReasons = 7;

struct RequestRecord {
  RequestId id;
  SimTime arrival;
  std::optional<SimTime> first_scheduled;  // unset: never scheduled (rejected, or cut off)
  SimTime first_token;
  SimTime finish;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;  // generated
  int64_t requested_output_tokens = 0;
  int64_t matched_tokens = 0;  // attention (full-attention group) match at admission
  int64_t cached_tokens = 0;   // tokens actually reused from the GPU prefix cache
  int64_t lost_tokens = 0;     // reusable tokens that were not reused, with `cause`
  MissCause cause = MissCause::kNone;
  int preemptions = 0;
  bool finished = false;
  RejectReason rejected = RejectReason::kNone;
  // vLLM PrefixCacheStats.record (vllm/v1/metrics/stats.py), called by Scheduler.schedule once per
  // successful admission from the waiting queue ("Record at admission so unscheduled lookups are not
  // counted", after `if new_blocks is None: break`), with num_tokens = request.num_tokens and hits =
  // the local prefix hit in tokens; preempted = request.num_preemptions > 0 sends it to preempted_*.
  // An admission that does not fit and is retried later counts once, when it succeeds.
  int64_t prefix_queries = 0;         // tokens queried at the first admission (vLLM prefix_cache_queries)
  int64_t prefix_hits = 0;            // tokens hit at the first admission (vLLM prefix_cache_hits)
  int64_t preempted_queries = 0;      // tokens queried at re-admissions after a preemption (vLLM preempted_queries)
  int64_t preempted_hits = 0;         // tokens hit at those re-admissions (vLLM preempted_hits): own recompute
  int64_t prefix_queries_blocks = 0;  // prefix_queries in blocks: floor(num_tokens / block_size)
  int64_t prefix_hits_blocks = 0;     // prefix_hits in blocks: floor(hit / block_size)
  std::vector<int64_t> saved_state_positions;  // hybrid: token positions of saved states (hashed)
  int instance = 0;
  int pool = 0;
  // Disaggregated requests (prefilled on another instance, cluster.disaggregation): the prefill side's
  // instance and times, and the KV transfer. The cache fields above (matched, cached, lost, cause,
  // prefix queries and hits) and first_scheduled are the prefill instance's; `instance` is the decode
  // instance. prefill_instance = -1 for every other request (the times are then unset).
  int prefill_instance = -1;
  SimTime prefill_submitted;  // the request reached the prefill instance
  SimTime prefill_done;       // the prefill instance sampled its one token (its blocks stay held)
  SimTime transfer_start;     // the decode instance allocated the blocks and began to pull
  SimTime transfer_end;       // every flow of the pull finished
  SimTime decode_scheduled;   // the decode instance scheduled the recompute of the last prompt token
  int64_t transfer_bytes = 0;
  int64_t decode_cached_tokens = 0;  // prompt tokens the decode instance found in its own prefix cache
  // KV offload (engine.kv_offload, sim/tier/): tokens loaded from the tier at the first admission (beyond
  // cached_tokens, the GPU hit), and over all admissions the bytes loaded (all TP ranks), the time the
  // loads took (submission to end, queueing included), the bytes stored and the chunks whose store was
  // skipped because the tier was full of chunks that could not be evicted.
  int64_t tier_cached_tokens = 0;
  int64_t tier_cached_blocks = 0;  // blocks loaded at the first admission
  int64_t tier_loaded_bytes = 0;
  int64_t tier_load_ns = 0;
  int tier_loads = 0;
  int64_t tier_stored_bytes = 0;
  int64_t tier_stores_skipped_chunks = 0;
  // tier_cached_tokens and tier_cached_blocks split by the tier each part came from (engine.kv_offload.tiers
  // order: 0 = the host tier); they sum to the two totals.
  std::array<int64_t, kMaxOffloadTiers> tier_cached_tokens_by_tier{};
  std::array<int64_t, kMaxOffloadTiers> tier_cached_blocks_by_tier{};
};

// One flow of a KV transfer (a decode rank reading from one prefill rank), at its end.
struct TransferRecord {
  RequestId id;
  int src_instance = 0;
  int dst_instance = 0;
  int src_rank = 0;
  int dst_rank = 0;
  int src_gpu = 0;  // topology GPU indices
  int dst_gpu = 0;
  int64_t bytes = 0;
  int hops = 0;            // directed links on the path
  std::vector<int> links;  // the path's directed topology link ids, source to destination (hops of them)
  SimTime start;
  SimTime end;
};

// The rate over one directed topology link at a sampling instant (links with traffic only).
struct LinkSample {
  SimTime at;
  int link = 0;
  double rate = 0;         // bytes/s
  double utilisation = 0;  // rate / capacity
};

struct StepRecord {
  SimTime start;
  SimTime end;
  int num_prefill_requests = 0;
  int num_decode_requests = 0;
  int64_t num_prefill_tokens = 0;
  int64_t num_decode_tokens = 0;
  int running = 0;  // requests running after the step was planned
  int waiting = 0;
  int64_t kv_blocks_used = 0;    // pool blocks in use (excluding free/evictable cached blocks)
  int64_t kv_blocks_cached = 0;  // free blocks that still hold a hash
  int preemptions = 0;
  int instance = 0;
  // KV offload (engine.kv_offload): the time the step waited before its forward pass for stores of GPU
  // blocks it reuses (vLLM jobs_to_flush, rule 24; 0: none), and each tier's bytes in use after planning.
  int64_t store_wait_ns = 0;
  std::array<int64_t, kMaxOffloadTiers> tier_used_bytes{};
};

// A sink receives records as the simulation produces them.
class IRecordSink {
 public:
  virtual ~IRecordSink() = default;
  // Request `id` arrived at `at` (at that instant; before its on_request_done). Concurrency counts from
  // here; sinks that do not track it may ignore it.
  virtual void on_arrival(RequestId /*id*/, SimTime /*at*/) {}
  virtual void on_request_done(const RequestRecord& r) = 0;
  virtual void on_step(const StepRecord& s) = 0;
  // `n` tokens of request `id` became available at `at` (first token included).
  virtual void on_tokens(RequestId id, SimTime at, int64_t n) = 0;
  // One flow of a KV transfer ended (disaggregated runs only).
  virtual void on_transfer(const TransferRecord& /*t*/) {}
  virtual void on_link_sample(const LinkSample& /*s*/) {}
};

}  // namespace kvsim
