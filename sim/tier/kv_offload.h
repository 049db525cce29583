#pragma once
// KvOffload: one engine's native KV offload (vLLM OffloadingConnector, scheduler side
// vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py, worker side
// offloading/worker.py and vllm/v1/kv_offload/cpu/gpu_worker.py; cluster-offload.md A.1, rules 19-23, 27).
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
//  - Loads: one H2D FIFO queue, started at admission (vLLM start_kv_transfers of the same step),
//    latency + bytes / read bandwidth; the chunks cannot be evicted while in flight.
//  - Lower tiers (rule 25, vLLM tiering/manager.py): when a host store completes its chunks are written
//    through to every lower tier (LRU index of size / chunk bytes; a full tier evicts idle chunks, else
//    skips) on that tier's one FIFO write queue, latency + bytes / write bandwidth, the host chunks
//    pinned until written. A lookup that ends the host run at a chunk the host does not hold continues
//    in the first lower tier (list order) that holds a ready run there; the load is then two hops:
//    lower -> host on that tier's FIFO read queue (latency + bytes / read bandwidth), the promoted
//    chunks inserted into the host tier (when it cannot make room they are only staged), then one
//    host -> GPU job for the whole hit. The cost policy prices only the host -> GPU hop. Not modelled:
//    vLLM's 16 + 16 I/O threads per lower tier (rule 26), the deferral by one step (HIT_PENDING).
// The D2H and H2D queues run alongside each other and alongside compute (DMA, no SMs). Not modelled:
// the fence on GPU blocks reused before their store finished (rule 24), store_threshold.
// Times are per GPU: a TP engine copies its ranks' shares in parallel, each chunk_bytes_rank.
#include <cstdint>
#include <functional>
#include <span>
#include <unordered_set>
#include <vector>

#include "sim/core/sim_context.h"
#include "sim/metrics/records.h"
#include "sim/perf/i_latency_model.h"
#include "sim/tier/host_tier.h"
#include "sim/tier/offload_config.h"

namespace kvsim {

// Tokens [begin, end) of a request to load from the tier (begin = the GPU hit); empty = no load.
// Tokens [promote_begin, end) are a promotion from lower tier `lower` (-1: none; promote_begin = end).
struct TierHit {
  int64_t begin = 0;
  int64_t end = 0;
  int lower = -1;
  int64_t promote_begin = 0;
  int64_t tokens() const { return end - begin; }
};

class KvOffload {
 public:
  // `prefill_chunk`: the engine's prefill chunk (max_num_batched_tokens) for the cost policy.
  KvOffload(SimContext& ctx, const KvOffloadConfig& config, int block_size, const ILatencyModel& latency,
            int64_t prefill_chunk);

  // Admission lookup with the policy applied. `hashes` are the request's full-block hashes.
  TierHit lookup(std::span<const uint64_t> hashes, int64_t gpu_hit, int64_t num_tokens);
  // Offers chunks [next_chunk, upto_tokens / chunk_tokens) for a store; advances next_chunk.
  void offer_store(std::span<const uint64_t> hashes, int64_t& next_chunk, int64_t upto_tokens, RequestRecord& rec);
  // The step ended: its store jobs enter the D2H queue now.
  void submit_stores();
  // Starts the load of `hit` now; `done(start, end)` runs when it ends (Phase::kTransferDone).
  void start_load(std::span<const uint64_t> hashes, TierHit hit, std::function<void(SimTime, SimTime)> done);

  // Time of one job moving `bytes_rank` bytes (per GPU) in each direction.
  Duration load_duration(int64_t bytes_rank) const;
  Duration store_duration(int64_t bytes_rank) const;
  // Bytes per GPU and over all ranks of `tokens` block-aligned tokens.
  int64_t bytes_rank(int64_t tokens) const { return tokens / block_size_ * block_bytes_rank_; }
  int64_t bytes_total(int64_t tokens) const { return tokens / block_size_ * block_bytes_total_; }
  // The cost policy's decision for loading `tokens` tokens after `from` computed ones.
  bool worth_loading(int64_t from, int64_t tokens) const;

  // Miss cause evicted_all_tiers: the chunk holding block `block` of `hashes` was once stored in the
  // host tier and is now in no tier (neither pending nor ready).
  bool evicted_from_all_tiers(std::span<const uint64_t> hashes, int64_t block) const;
  const HostTier& tier() const { return tier_; }
  const HostTier& lower_tier(size_t i) const { return lower_.at(i).index; }
  const KvOffloadConfig& config() const { return config_; }

 private:
  struct Lower {
    HostTier index;
    SimTime read_free;  // the lower -> host queue is busy until then
    SimTime write_free;
  };
  void write_through(const std::vector<uint64_t>& keys);
  void load_from_host(std::vector<uint64_t> job, int64_t bytes_rank, SimTime first_start,
                      std::function<void(SimTime, SimTime)> done);
  void keys(std::span<const uint64_t> hashes, int64_t first_chunk, int64_t last_chunk,
            std::vector<uint64_t>& out) const;

  SimContext& ctx_;
  KvOffloadConfig config_;
  int64_t block_size_;
  int64_t block_bytes_rank_;
  int64_t block_bytes_total_;
  const ILatencyModel& latency_;
  int64_t prefill_chunk_;
  HostTier tier_;
  std::vector<Lower> lower_;
  std::unordered_set<uint64_t> ever_stored_;  // lookup only
  SimTime d2h_free_;                          // the D2H queue is busy until then
  SimTime h2d_free_;
  std::vector<std::vector<uint64_t>> step_stores_;  // jobs prepared this step, submitted at its end
  std::vector<uint64_t> keys_, protected_;
};

}  // namespace kvsim
