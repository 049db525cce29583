#pragma once
// KvOffload: one engine's KV offload (vLLM OffloadingConnector, scheduler side
// vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py, worker side
// offloading/worker.py and vllm/v1/kv_offload/cpu/gpu_worker.py; or LMCache's storage manager;
// cluster-offload.md A.1, A.2, rules 19-28).
//  - Stores (rule 19): each step the engine offers every scheduled request's newly completed chunks
//    (whole chunks of chunk_tokens, prompt only unless offload_prompt_only is false); prepare_store
//    runs at once (HostTier: eviction or skip, rule 21), the copy is submitted when the step ends
//    (submit_stores) to this GPU's one D2H FIFO queue: a job starts when the previous one ended and
//    takes latency + its bytes / write bandwidth; the chunks become hits at its end.
//  - Lookup (rule 23): after the GPU prefix hit, the longest run of ready chunks from the chunk that
//    holds the first uncomputed token; a run of 0 chunks is no hit; a pending chunk ends the run
//    (vLLM defers the request one step instead; not modelled). Capped at num_tokens: a full-prompt hit
//    still computes one token (the scheduler's job).
//  - Policy (rule 27): vllm loads every hit; cost loads only when latency + bytes / read bandwidth is
//    less than the chunked prefill time of the same tokens (prefill_time.h, the `size --recompute`
//    arithmetic, here from the GPU hit on).
//  - Loads: one H2D FIFO queue, started at admission (vLLM start_kv_transfers of the same step) but not
//    before the store fence of the blocks they fill, latency + bytes / read bandwidth; the chunks cannot
//    be evicted while in flight.
//  - Lower tiers (rule 25, vLLM tiering/manager.py): when a host store completes its chunks are written
//    through to every lower tier (LRU index of size / chunk bytes; a full tier evicts idle chunks, else
//    skips) as a write job of latency + bytes / write bandwidth, the host chunks pinned until written. A
//    lookup that ends the host run at a chunk the host does not hold continues in the first lower tier
//    (list order) that holds a ready run there; the load is then two hops: lower -> host as a read job
//    (latency + bytes / read bandwidth), the promoted
//    chunks inserted into the host tier (when it cannot make room they are only staged), then one
//    host -> GPU job for the whole hit. The cost policy adds the slowest promotion to the host -> GPU hop. A lower
//    tier's jobs run on its IoStation (rule 26: N read + N write servers, io_station.h). Not modelled: the deferral by
//    one step (HIT_PENDING).
//  - Store fence (rule 24, vLLM offloading/scheduler.py build_connector_meta `jobs_to_flush`, worker side
//    offloading/worker.py handle_preemptions -> worker.wait): store_fence() gives the end of the latest
//    submitted store that copies a GPU block handed out again this step, or that belongs to a request
//    preempted this step; the engine's step starts its forward pass only then.
//  - LMCache (config.lmcache, rule 28): see offload_config.h; the write to every tier starts when the
//    chunk's D2H copy into host memory ends (LMCache stages through its CPU buffer), without pinning the
//    host copy; the lookup chains tiers; lower-tier hits are written back to the host tier (the load path
//    is the native promotion).
//  - Hybrids (config.state_slots > 0): the state saved at a chunk's end goes with the chunk to every
//    tier as `state_slots` extra keys; a hit ends at the last chunk boundary, within the run, whose state
//    the tier serving that chunk holds (vLLM: a Mamba group's lookup is a window of one chunk), capped at
//    num_tokens - 1 floored to the block size.
// The D2H and H2D queues run alongside each other and alongside compute (DMA, no SMs). Not modelled:
// store_threshold.
// Times are per GPU: a TP engine copies its ranks' shares in parallel, each chunk_bytes_rank.
// Over a topology (set_links): the D2H and H2D queues stay FIFO, one job at a time, and a lower tier's
// I/O servers stay as they are, but each job's copy is TierLinks::move (one flow per rank, sharing the
// topology's PCIe / NIC links with every other flow), so its end is known only when its last flow ends:
// the store fence is then the store job (in D2H order) to wait for, and the step or load that waits
// starts from that job's completion event (after()).
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sim/core/sim_context.h"
#include "sim/engine/recent_keys.h"
#include "sim/metrics/records.h"
#include "sim/perf/i_latency_model.h"
#include "sim/tier/host_tier.h"
#include "sim/tier/io_station.h"
#include "sim/tier/offload_config.h"
#include "sim/tier/tier_links.h"

namespace kvsim {

// Tokens [begin, end) of one tier hit that come from tier `tier` (0 = the host tier, i = lower[i - 1]).
struct TierSegment {
  int tier = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

// Tokens [begin, end) of a request to load (begin = the GPU hit); empty = no load. `segments` cover it in
// token order: the host tier's part first, then parts promoted from lower tiers (native: at most one).
struct TierHit {
  int64_t begin = 0;
  int64_t end = 0;
  std::vector<TierSegment> segments;
  int64_t tokens() const { return end - begin; }
};

// Totals of one tier over a run.
struct TierTotals {
  int64_t stored_bytes = 0;  // written into the tier (all TP ranks)
  int64_t loaded_bytes = 0;  // read out of it (host: to the GPU; lower: promoted to the host)
  int64_t stores_skipped_chunks = 0;
  int64_t peak_used_bytes = 0;
};

// Rule 24: what a step or a load must wait for before it writes GPU blocks. Without links every store's
// end is known at submission: `at` (never before now). Over a topology: `job`, the store job (numbered
// 1, 2, ... in D2H order) whose completion releases it, or 0.
struct StoreFence {
  SimTime at;
  int64_t job = 0;
};

class KvOffload {
 public:
  // `prefill_chunk`: the engine's prefill chunk (max_num_batched_tokens) for the cost policy.
  KvOffload(SimContext& ctx, const KvOffloadConfig& config, int block_size, const ILatencyModel& latency,
            int64_t prefill_chunk);

  // Admission lookup with the policy applied. `hashes` are the request's full-block hashes.
  TierHit lookup(std::span<const uint64_t> hashes, int64_t gpu_hit, int64_t num_tokens);
  // Offers chunks [next_chunk, upto_tokens / chunk_tokens) of request `id` for a store; advances next_chunk.
  // `blocks`: the request's GPU blocks (attention group, by position) for the store fence; `state_at(p)`:
  // hybrids, whether the GPU saved a state at token p.
  // `state_blocks(p, out)`: hybrids, appends the GPU blocks that hold the state saved at token p (one per
  // state group) so the store fence covers them too.
  void offer_store(RequestId id, std::span<const uint64_t> hashes, std::span<const int32_t> blocks, int64_t& next_chunk,
                   int64_t upto_tokens, RequestRecord& rec, const std::function<bool(int64_t)>& state_at,
                   const std::function<void(int64_t, std::vector<int32_t>&)>& state_blocks = {});
  // The step ended: its store jobs enter the D2H queue now.
  void submit_stores();
  // Starts the load of `hit` now; its host -> GPU copy starts no earlier than `fence` releases (the store
  // fence of the GPU blocks it fills, rule 24). `done(start, end)` runs when it ends (Phase::kTransferDone).
  void start_load(std::span<const uint64_t> hashes, const TierHit& hit, std::function<void(SimTime, SimTime)> done,
                  StoreFence fence = {});
  // Rule 24: the fence of the latest submitted store that copies one of `reused` (GPU blocks handed out
  // this step) or belongs to a request in `preempted` (none pending: `at` = now, no job).
  StoreFence store_fence(std::span<const int32_t> reused, std::span<const RequestId> preempted) const;
  // Whether `fence` still holds back a step started now (a store job not yet ended).
  bool waiting(const StoreFence& fence) const { return fence.job > stores_done_; }
  // Runs `fn` once `fence`'s store job ended (at once when it has; in that job's completion event else).
  void after(const StoreFence& fence, std::function<void()> fn);
  // Copies over the topology from now on (call before the run).
  void set_links(std::unique_ptr<TierLinks> links);
  const TierLinks* links() const { return links_.get(); }

  // Time of one job moving `bytes_rank` bytes (per GPU) in each direction.
  Duration load_duration(int64_t bytes_rank) const;
  Duration store_duration(int64_t bytes_rank) const;
  // Bytes per GPU and over all ranks of `tokens` block-aligned tokens.
  int64_t bytes_rank(int64_t tokens) const { return tokens / block_size_ * block_bytes_rank_; }
  int64_t bytes_total(int64_t tokens) const { return tokens / block_size_ * block_bytes_total_; }
  // Bytes over all ranks a load of `hit` moves to the GPU (hybrids: its chunks and the state at its end).
  int64_t load_bytes_total(const TierHit& hit) const {
    return bytes_total(hit.tokens()) +
           (config_.state_slots > 0 ? config_.state_bytes_rank * (config_.chunk_bytes / config_.chunk_bytes_rank) : 0);
  }
  // The cost policy's decision for loading `tokens` tokens after `from` computed ones (lookup() adds the
  // lower-tier hops of a promoted hit).
  bool worth_loading(int64_t from, int64_t tokens) const;

  // Miss cause evicted_all_tiers: the chunk holding block `block` of `hashes` was once stored in the
  // host tier and is now in no tier (neither pending nor ready).
  bool evicted_from_all_tiers(std::span<const uint64_t> hashes, int64_t block) const;
  const HostTier& tier() const { return tier_; }
  const HostTier& lower_tier(size_t i) const { return lower_.at(i)->index; }
  // Tier i: 0 = host, i = lower[i - 1].
  int num_tiers() const { return 1 + static_cast<int>(lower_.size()); }
  const HostTier& index(int i) const { return i == 0 ? tier_ : lower_.at(static_cast<size_t>(i - 1))->index; }
  int64_t used_bytes(int i) const { return index(i).size() * config_.chunk_bytes; }
  int64_t capacity_bytes(int i) const { return index(i).capacity() * config_.chunk_bytes; }
  const TierTotals& totals(int i) const { return totals_.at(static_cast<size_t>(i)); }
  const KvOffloadConfig& config() const { return config_; }
  // The key of slot s of the state saved at the end of the chunk keyed `chunk_key` (hybrids).
  static uint64_t state_key(uint64_t chunk_key, int64_t s);

 private:
  struct Lower {
    Lower(SimContext& ctx, const KvOffloadLowerTier& l)
        : index(l.capacity_chunks, "lru"),
          io(ctx, l.read_servers, l.write_servers, l.latency, l.read_bandwidth, l.write_bandwidth) {}
    HostTier index;
    IoStation io;
  };
  struct StoreJob {
    RequestId id;
    int64_t seq = 0;                                // 1, 2, ... in D2H order
    std::vector<uint64_t> keys;                     // admitted in the host tier (pending there)
    std::vector<int32_t> blocks;                    // GPU blocks the copy reads
    std::vector<std::vector<uint64_t>> lower_keys;  // LMCache: admitted in each lower tier
    int64_t bytes_rank = 0;                         // the D2H copy
  };
  struct LoadJob {
    std::vector<uint64_t> keys;
    int64_t bytes_rank = 0;
    SimTime first_start;
    StoreFence fence;
    std::function<void(SimTime, SimTime)> done;
  };
  void complete_store(StoreJob& job);
  void pump_d2h();
  void pump_h2d();
  void write_through(const std::vector<uint64_t>& keys);
  void write_lower(size_t i, std::vector<uint64_t> keys, bool pin_host);
  void load_from_host(LoadJob job);
  void keys(std::span<const uint64_t> hashes, int64_t first_chunk, int64_t last_chunk,
            std::vector<uint64_t>& out) const;
  // Bytes one GPU copies for these keys (chunk keys: chunk_bytes_rank; state keys: their share of a state).
  int64_t key_bytes_rank(std::span<const uint64_t> ks) const;
  bool state_ready(const HostTier& t, uint64_t chunk_key) const;
  void note_usage();

  SimContext& ctx_;
  KvOffloadConfig config_;
  int64_t block_size_;
  int64_t block_bytes_rank_;
  int64_t block_bytes_total_;
  const ILatencyModel& latency_;
  int64_t prefill_chunk_;
  HostTier tier_;
  std::vector<std::unique_ptr<Lower>> lower_;
  std::vector<TierTotals> totals_;
  // Keys stored in a tier (miss cause evicted_all_tiers), bounded: see stored_horizon() in the .cpp.
  RecentKeys ever_stored_;
  std::unordered_set<uint64_t> state_keys_;  // hybrids: every state key offered (lookup only)
  SimTime d2h_free_;                         // the D2H queue is busy until then
  SimTime h2d_free_;
  std::vector<StoreJob> step_stores_;  // jobs prepared this step, submitted at its end
  // Rule 24: the latest submitted store job reading each GPU block / of each request (lookup only); jobs
  // end in D2H order, so `stores_done_` (the last one ended) tells which are pending. Without links the
  // pending jobs' end times, oldest first.
  std::vector<int64_t> block_store_job_;  // by GPU block id; 0 = no store pending
  std::unordered_map<int64_t, int64_t> request_store_job_;
  int64_t next_store_job_ = 0, stores_done_ = 0;
  std::deque<SimTime> store_ends_;
  std::multimap<int64_t, std::function<void()>> fence_waiters_;  // by the store job they wait for
  // Over a topology: the D2H and H2D FIFO queues of jobs not yet started.
  std::unique_ptr<TierLinks> links_;
  std::deque<std::shared_ptr<StoreJob>> d2h_queue_;
  std::deque<LoadJob> h2d_queue_;
  bool d2h_busy_ = false, h2d_busy_ = false, h2d_fenced_ = false;
  std::vector<uint64_t> keys_, protected_, copied_;
};

}  // namespace kvsim
