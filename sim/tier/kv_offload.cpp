#include "sim/tier/kv_offload.h"

#include <algorithm>

#include "sim/core/check.h"
#include "sim/perf/prefill_time.h"

namespace kvsim {
namespace {
constexpr uint32_t kTagTierStoreDone = 0x20;
constexpr uint32_t kTagTierLoadDone = 0x21;
}  // namespace

KvOffload::KvOffload(SimContext& ctx, const KvOffloadConfig& config, int block_size, const ILatencyModel& latency,
                     int64_t prefill_chunk)
    : ctx_(ctx),
      config_(config),
      block_size_(block_size),
      block_bytes_rank_(config.chunk_bytes_rank / config.blocks_per_chunk),
      block_bytes_total_(config.chunk_bytes / config.blocks_per_chunk),
      latency_(latency),
      prefill_chunk_(prefill_chunk),
      tier_(config.capacity_chunks, config.eviction) {
  KVSIM_CHECK(config.enabled && config.chunk_tokens == config.blocks_per_chunk * block_size,
              "offload chunk " << config.chunk_tokens << " is not blocks_per_chunk x block size");
  KVSIM_CHECK(config.read_bandwidth > 0 && config.write_bandwidth > 0, "tier bandwidth must be > 0");
}

void KvOffload::keys(std::span<const uint64_t> hashes, int64_t first, int64_t last, std::vector<uint64_t>& out) const {
  out.clear();
  const int64_t bpc = config_.blocks_per_chunk;
  last = std::min<int64_t>(last, std::ssize(hashes) / bpc);
  for (int64_t j = first; j < last; ++j) out.push_back(hashes[static_cast<size_t>((j + 1) * bpc - 1)]);
}

Duration KvOffload::load_duration(int64_t bytes_rank) const {
  return duration_from_seconds(config_.latency.seconds() + static_cast<double>(bytes_rank) / config_.read_bandwidth);
}

Duration KvOffload::store_duration(int64_t bytes_rank) const {
  return duration_from_seconds(config_.latency.seconds() + static_cast<double>(bytes_rank) / config_.write_bandwidth);
}

bool KvOffload::worth_loading(int64_t from, int64_t tokens) const {
  if (!config_.cost_policy) return true;  // vLLM never weighs a hit against recompute
  const double load_s = config_.latency.seconds() + static_cast<double>(bytes_rank(tokens)) / config_.read_bandwidth;
  return load_s < prefill_seconds(latency_, tokens, prefill_chunk_, from);
}

TierHit KvOffload::lookup(std::span<const uint64_t> hashes, int64_t gpu_hit, int64_t num_tokens) {
  const int64_t c = config_.chunk_tokens;
  // vLLM get_num_new_matched_tokens touches the request's chunks on every lookup (lru.py touch, reverse).
  keys(hashes, 0, INT64_MAX, keys_);
  tier_.touch(keys_);
  const int64_t first = gpu_hit / c;
  if (first >= std::ssize(keys_)) return {};
  const int64_t run = tier_.ready_run(std::span<const uint64_t>(keys_).subspan(static_cast<size_t>(first)));
  const int64_t end = std::min((first + run) * c, num_tokens);
  if (run == 0 || end <= gpu_hit) return {};  // a hit below one chunk is ignored
  if (!worth_loading(gpu_hit, end - gpu_hit)) return {};
  return TierHit{gpu_hit, end};
}

void KvOffload::offer_store(std::span<const uint64_t> hashes, int64_t& next_chunk, int64_t upto_tokens,
                            RequestRecord& rec) {
  const int64_t last =
      std::min<int64_t>(upto_tokens / config_.chunk_tokens, std::ssize(hashes) / config_.blocks_per_chunk);
  if (last <= next_chunk) return;
  keys(hashes, next_chunk, last, keys_);
  keys(hashes, 0, last, protected_);
  next_chunk = last;
  int64_t inserted = 0, evicted = 0;
  if (!tier_.prepare_store(keys_, protected_, &inserted, &evicted)) {
    rec.tier_stores_skipped_chunks += std::ssize(keys_);
    return;
  }
  tier_.touch(keys_);  // vLLM _touch after a store (keys already present become most recent)
  if (inserted == 0) return;
  std::vector<uint64_t> job;
  for (uint64_t k : keys_)
    if (tier_.state(k) == HostTier::State::kPending) job.push_back(k);
  rec.tier_stored_bytes += inserted * config_.chunk_bytes;
  step_stores_.push_back(std::move(job));
}

void KvOffload::submit_stores() {
  const SimTime now = ctx_.now();
  for (auto& job : step_stores_) {
    const SimTime start = std::max(now, d2h_free_);
    d2h_free_ = start + store_duration(std::ssize(job) * config_.chunk_bytes_rank);
    ctx_.queue.schedule(d2h_free_, Phase::kTransferDone, kTagTierStoreDone,
                        [this, keys = std::move(job)] { tier_.complete_store(keys); });
  }
  step_stores_.clear();
}

void KvOffload::start_load(std::span<const uint64_t> hashes, TierHit hit, std::function<void(SimTime, SimTime)> done) {
  const int64_t c = config_.chunk_tokens;
  std::vector<uint64_t> job;
  keys(hashes, hit.begin / c, (hit.end + c - 1) / c, job);
  tier_.begin_load(job);
  const SimTime start = std::max(ctx_.now(), h2d_free_);
  h2d_free_ = start + load_duration(bytes_rank(hit.tokens() / block_size_ * block_size_));
  ctx_.queue.schedule(h2d_free_, Phase::kTransferDone, kTagTierLoadDone,
                      [this, keys = std::move(job), start, end = h2d_free_, done = std::move(done)] {
                        tier_.end_load(keys);
                        done(start, end);
                      });
}

}  // namespace kvsim
