#include "sim/tier/kv_offload.h"

#include <algorithm>

#include "sim/core/check.h"
#include "sim/perf/prefill_time.h"

namespace kvsim {
namespace {
constexpr uint32_t kTagTierStoreDone = 0x20;
constexpr uint32_t kTagTierLoadDone = 0x21;
constexpr uint32_t kTagTierWriteThroughDone = 0x22;
constexpr uint32_t kTagTierPromoteDone = 0x23;

Duration job_duration(Duration latency, int64_t bytes, double bandwidth) {
  return duration_from_seconds(latency.seconds() + static_cast<double>(bytes) / bandwidth);
}
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
  for (const KvOffloadLowerTier& l : config.lower) {
    KVSIM_CHECK(l.read_bandwidth > 0 && l.write_bandwidth > 0, "tier " << l.tier << " bandwidth must be > 0");
    lower_.push_back(Lower{HostTier(l.capacity_chunks, "lru"), SimTime{}, SimTime{}});
  }
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
  const std::span<const uint64_t> all(keys_);
  const int64_t run = tier_.ready_run(all.subspan(static_cast<size_t>(first)));
  // Rule 25: a chunk the host lacks (not one whose store is pending) continues in the first lower tier.
  const int64_t next = first + run;
  int lower = -1;
  int64_t lower_run = 0;
  if (next < std::ssize(keys_) && tier_.state(keys_[static_cast<size_t>(next)]) == HostTier::State::kAbsent) {
    for (size_t i = 0; i < lower_.size() && lower < 0; ++i) {
      int64_t n = 0;
      for (int64_t j = next; j < std::ssize(keys_); ++j) {
        const uint64_t k = keys_[static_cast<size_t>(j)];
        if (tier_.state(k) != HostTier::State::kAbsent || lower_[i].index.state(k) != HostTier::State::kReady) break;
        ++n;
      }
      if (n > 0) lower = static_cast<int>(i), lower_run = n;
    }
  }
  const int64_t end = std::min((next + lower_run) * c, num_tokens);
  if (run + lower_run == 0 || end <= gpu_hit) return {};  // a hit below one chunk is ignored
  if (!worth_loading(gpu_hit, end - gpu_hit)) return {};
  TierHit hit{gpu_hit, end, lower, end};
  if (lower >= 0) hit.promote_begin = std::max(gpu_hit, next * c);
  return hit;
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
  ever_stored_.insert(job.begin(), job.end());
  step_stores_.push_back(std::move(job));
}

void KvOffload::submit_stores() {
  const SimTime now = ctx_.now();
  for (auto& job : step_stores_) {
    const SimTime start = std::max(now, d2h_free_);
    d2h_free_ = start + store_duration(std::ssize(job) * config_.chunk_bytes_rank);
    ctx_.queue.schedule(d2h_free_, Phase::kTransferDone, kTagTierStoreDone, [this, keys = std::move(job)] {
      tier_.complete_store(keys);
      write_through(keys);
    });
  }
  step_stores_.clear();
}

bool KvOffload::evicted_from_all_tiers(std::span<const uint64_t> hashes, int64_t block) const {
  const int64_t bpc = config_.blocks_per_chunk;
  const int64_t last = (block / bpc + 1) * bpc - 1;
  if (last >= std::ssize(hashes)) return false;
  const uint64_t key = hashes[static_cast<size_t>(last)];
  if (!ever_stored_.contains(key) || tier_.state(key) != HostTier::State::kAbsent) return false;
  for (const Lower& l : lower_)
    if (l.index.state(key) != HostTier::State::kAbsent) return false;
  return true;
}

void KvOffload::write_through(const std::vector<uint64_t>& keys) {
  for (size_t i = 0; i < lower_.size(); ++i) {
    Lower& l = lower_[i];
    int64_t inserted = 0, evicted = 0;
    if (!l.index.prepare_store(keys, keys, &inserted, &evicted) || inserted == 0) continue;
    std::vector<uint64_t> job;
    for (uint64_t k : keys)
      if (l.index.state(k) == HostTier::State::kPending && tier_.state(k) == HostTier::State::kReady) job.push_back(k);
    tier_.begin_load(job);  // vLLM prepare_read: the host chunk is pinned until written
    const SimTime start = std::max(ctx_.now(), l.write_free);
    l.write_free = start + job_duration(config_.lower[i].latency, std::ssize(job) * config_.chunk_bytes_rank,
                                        config_.lower[i].write_bandwidth);
    ctx_.queue.schedule(l.write_free, Phase::kTransferDone, kTagTierWriteThroughDone, [this, i, keys = std::move(job)] {
      lower_[i].index.complete_store(keys);
      tier_.end_load(keys);
    });
  }
}

void KvOffload::load_from_host(std::vector<uint64_t> job, int64_t bytes, SimTime first_start,
                               std::function<void(SimTime, SimTime)> done) {
  const SimTime start = std::max(ctx_.now(), h2d_free_);
  h2d_free_ = start + load_duration(bytes);
  ctx_.queue.schedule(h2d_free_, Phase::kTransferDone, kTagTierLoadDone,
                      [this, keys = std::move(job), first_start, end = h2d_free_, done = std::move(done)] {
                        tier_.end_load(keys);
                        done(first_start, end);
                      });
}

void KvOffload::start_load(std::span<const uint64_t> hashes, TierHit hit, std::function<void(SimTime, SimTime)> done) {
  const int64_t c = config_.chunk_tokens;
  const int64_t bytes = bytes_rank(hit.tokens() / block_size_ * block_size_);
  std::vector<uint64_t> job;
  if (hit.lower < 0) {
    keys(hashes, hit.begin / c, (hit.end + c - 1) / c, job);
    tier_.begin_load(job);
    load_from_host(std::move(job), bytes, std::max(ctx_.now(), h2d_free_), std::move(done));
    return;
  }
  // Two hops: lower -> host, then host -> GPU (rule 25).
  std::vector<uint64_t> promoted;
  keys(hashes, hit.begin / c, hit.promote_begin / c, job);
  keys(hashes, hit.promote_begin / c, (hit.end + c - 1) / c, promoted);
  tier_.begin_load(job);
  const size_t li = static_cast<size_t>(hit.lower);
  Lower& l = lower_[li];
  l.index.begin_load(promoted);
  keys(hashes, 0, (hit.end + c - 1) / c, protected_);
  int64_t inserted = 0, evicted = 0;
  const bool kept = tier_.prepare_store(promoted, protected_, &inserted, &evicted);
  const SimTime start = std::max(ctx_.now(), l.read_free);
  const int64_t promote_bytes = bytes_rank((hit.end - hit.promote_begin) / block_size_ * block_size_);
  l.read_free = start + job_duration(config_.lower[li].latency, promote_bytes, config_.lower[li].read_bandwidth);
  ctx_.queue.schedule(l.read_free, Phase::kTransferDone, kTagTierPromoteDone,
                      [this, li, kept, bytes, start, job = std::move(job), promoted = std::move(promoted),
                       done = std::move(done)]() mutable {
                        lower_[li].index.end_load(promoted);
                        if (kept) {
                          tier_.complete_store(promoted);
                          std::vector<uint64_t> now_held;
                          for (uint64_t k : promoted)
                            if (tier_.state(k) == HostTier::State::kReady) now_held.push_back(k);
                          tier_.begin_load(now_held);
                          job.insert(job.end(), now_held.begin(), now_held.end());
                        }
                        load_from_host(std::move(job), bytes, start, std::move(done));
                      });
}

}  // namespace kvsim
