#include "sim/tier/kv_offload.h"

#include <algorithm>

#include "sim/core/check.h"
#include "sim/perf/prefill_time.h"

namespace kvsim {
namespace {
constexpr uint32_t kTagTierStoreDone = 0x20;
// The memory of stored keys (RecentKeys, the rule of the scheduler's memory of GPU keys): a key is
// remembered for at least 8 x (every tier's capacity in chunks) stores after its last one, so that it is
// forgotten only after the tiers have turned over about eight times; at least 2^14, at most 2^20 keys
// (32 B each: 0.5 to 32 MiB per instance; above 2^17 chunks of tiers, fewer turnovers). It was a set of
// every key ever stored, which grew without bound over a long replay.
size_t stored_horizon(const KvOffloadConfig& c) {
  int64_t chunks = c.capacity_chunks;
  for (const KvOffloadLowerTier& l : c.lower) chunks += l.capacity_chunks;
  size_t h = size_t{1} << 14;
  while (static_cast<int64_t>(h) < 8 * chunks && h < (size_t{1} << 20)) h <<= 1;
  return h;
}
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
      tier_(config.capacity_chunks, config.eviction),
      ever_stored_(stored_horizon(config)) {
  KVSIM_CHECK(config.enabled && config.chunk_tokens == config.blocks_per_chunk * block_size,
              "offload chunk " << config.chunk_tokens << " is not blocks_per_chunk x block size");
  KVSIM_CHECK(config.read_bandwidth > 0 && config.write_bandwidth > 0, "tier bandwidth must be > 0");
  KVSIM_CHECK(std::ssize(config.lower) < kMaxOffloadTiers, "more than " << kMaxOffloadTiers << " offload tiers");
  for (const KvOffloadLowerTier& l : config.lower) {
    KVSIM_CHECK(l.read_bandwidth > 0 && l.write_bandwidth > 0, "tier " << l.tier << " bandwidth must be > 0");
    lower_.push_back(std::make_unique<Lower>(ctx, l));
  }
  totals_.resize(static_cast<size_t>(num_tiers()));
}

uint64_t KvOffload::state_key(uint64_t chunk_key, int64_t s) {
  // splitmix64 finaliser over the chunk key and the slot: a domain of its own beside the block hashes.
  uint64_t x = chunk_key ^ (0x73746174652d6b76ULL + static_cast<uint64_t>(s + 1) * 0x9E3779B97F4A7C15ULL);
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

bool KvOffload::state_ready(const HostTier& t, uint64_t chunk_key) const {
  for (int64_t s = 0; s < config_.state_slots; ++s)
    if (t.state(state_key(chunk_key, s)) != HostTier::State::kReady) return false;
  return true;
}

void KvOffload::keys(std::span<const uint64_t> hashes, int64_t first, int64_t last, std::vector<uint64_t>& out) const {
  out.clear();
  const int64_t bpc = config_.blocks_per_chunk;
  last = std::min<int64_t>(last, std::ssize(hashes) / bpc);
  for (int64_t j = first; j < last; ++j) out.push_back(hashes[static_cast<size_t>((j + 1) * bpc - 1)]);
}

int64_t KvOffload::key_bytes_rank(std::span<const uint64_t> ks) const {
  int64_t states = 0;
  if (config_.state_slots > 0)
    for (uint64_t k : ks) states += state_keys_.contains(k);
  const int64_t chunks = std::ssize(ks) - states;
  // A saved state's bytes are spread over its slots (the last slot may be partly empty).
  return chunks * config_.chunk_bytes_rank +
         (config_.state_slots > 0 ? states * config_.state_bytes_rank / config_.state_slots : 0);
}

Duration KvOffload::load_duration(int64_t bytes_rank) const {
  return duration_from_seconds(config_.latency.seconds() + static_cast<double>(bytes_rank) / config_.read_bandwidth);
}

Duration KvOffload::store_duration(int64_t bytes_rank) const {
  return duration_from_seconds(config_.latency.seconds() + static_cast<double>(bytes_rank) / config_.write_bandwidth);
}

namespace {
// The cost policy (rule 27): load only when the path (lower-tier hops `promote_s`, then latency + bytes /
// read bandwidth to the GPU) is faster than the chunked prefill of the same tokens.
bool cheaper_than_prefill(const KvOffloadConfig& c, const ILatencyModel& latency, int64_t prefill_chunk,
                          int64_t bytes_rank, int64_t from, int64_t tokens, double promote_s) {
  if (!c.cost_policy) return true;  // vLLM never weighs a hit against recompute
  const double load_s = promote_s + c.latency.seconds() + static_cast<double>(bytes_rank) / c.read_bandwidth;
  return load_s < prefill_seconds(latency, tokens, prefill_chunk, from);
}
}  // namespace

bool KvOffload::worth_loading(int64_t from, int64_t tokens) const {
  return cheaper_than_prefill(config_, latency_, prefill_chunk_, bytes_rank(tokens), from, tokens, 0);
}

TierHit KvOffload::lookup(std::span<const uint64_t> hashes, int64_t gpu_hit, int64_t num_tokens) {
  const int64_t c = config_.chunk_tokens;
  // vLLM get_num_new_matched_tokens touches the request's chunks on every lookup (lru.py touch, reverse).
  keys(hashes, 0, INT64_MAX, keys_);
  tier_.touch(keys_);
  const int64_t first = gpu_hit / c;
  const int64_t nk = std::ssize(keys_);
  if (first >= nk) return {};
  const std::span<const uint64_t> all(keys_);
  struct Run {
    int tier;
    int64_t from, to;  // chunks
  };
  std::vector<Run> runs;
  int64_t pos = first + tier_.ready_run(all.subspan(static_cast<size_t>(first)));
  if (pos > first) runs.push_back({0, first, pos});
  if (config_.lmcache) {
    // LMCache async_lookup_and_prefetch: each backend in order counts the prefix of the remaining keys
    // it holds; "we retrieve 0-t1 tokens from backend 1 and t1-t2 tokens from backend 2, etc."
    for (size_t i = 0; i < lower_.size() && pos < nk; ++i) {
      const int64_t n = lower_[i]->index.ready_run(all.subspan(static_cast<size_t>(pos)));
      if (n > 0) runs.push_back({static_cast<int>(i) + 1, pos, pos + n});
      pos += n;
    }
  } else if (pos < nk && tier_.state(keys_[static_cast<size_t>(pos)]) == HostTier::State::kAbsent) {
    // Rule 25: a chunk the host lacks (not one whose store is pending) continues in the first lower tier
    // (list order) that holds a ready run there.
    for (size_t i = 0; i < lower_.size(); ++i) {
      int64_t n = 0;
      for (int64_t j = pos; j < nk; ++j) {
        const uint64_t k = keys_[static_cast<size_t>(j)];
        if (tier_.state(k) != HostTier::State::kAbsent || lower_[i]->index.state(k) != HostTier::State::kReady) break;
        ++n;
      }
      if (n > 0) {
        runs.push_back({static_cast<int>(i) + 1, pos, pos + n});
        pos += n;
        break;
      }
    }
  }
  if (runs.empty()) return {};  // a hit below one chunk is ignored
  int64_t cap = num_tokens;
  if (config_.state_slots > 0) {
    // vLLM _lookup_complete_chunks with Mamba groups: the hit is capped at num_tokens - 1 rounded down to
    // the Mamba alignment (the block size), and the Mamba group accepts a candidate end only where its one
    // chunk window (the state at that boundary) hits: the groups iterate to the fixed point, here the last
    // chunk boundary whose state the tier serving the chunk before it holds.
    cap = (num_tokens - 1) / block_size_ * block_size_;
    int64_t e = std::min(pos, cap / c);
    while (e > first) {
      const auto run = std::find_if(runs.begin(), runs.end(), [e](const Run& r) { return r.from < e && e <= r.to; });
      if (run != runs.end() && state_ready(index(run->tier), keys_[static_cast<size_t>(e - 1)])) break;
      --e;
    }
    pos = e;
  }
  const int64_t end = std::min(pos * c, cap);
  if (end <= gpu_hit) return {};
  TierHit hit{gpu_hit, end, {}};
  // The cost policy prices the whole path: each lower tier's promotion (they run side by side: the
  // slowest counts) before the host -> GPU copy.
  double promote_s = 0;
  for (const Run& r : runs) {
    const int64_t b = std::max(gpu_hit, r.from * c), e = std::min(r.to * c, end);
    if (e <= b) continue;
    hit.segments.push_back(TierSegment{r.tier, b, e});
    if (r.tier > 0) {
      const KvOffloadLowerTier& l = config_.lower[static_cast<size_t>(r.tier - 1)];
      promote_s = std::max(promote_s, l.latency.seconds() + static_cast<double>(bytes_rank(e - b)) / l.read_bandwidth);
    }
  }
  if (!cheaper_than_prefill(config_, latency_, prefill_chunk_, bytes_rank(end - gpu_hit), gpu_hit, end - gpu_hit,
                            promote_s))
    return {};
  return hit;
}

void KvOffload::offer_store(RequestId id, std::span<const uint64_t> hashes, std::span<const int32_t> blocks,
                            int64_t& next_chunk, int64_t upto_tokens, RequestRecord& rec,
                            const std::function<bool(int64_t)>& state_at,
                            const std::function<void(int64_t, std::vector<int32_t>&)>& state_blocks) {
  const int64_t c = config_.chunk_tokens, bpc = config_.blocks_per_chunk;
  const int64_t last = std::min<int64_t>(upto_tokens / c, std::ssize(hashes) / bpc);
  if (last <= next_chunk) return;
  const int64_t first = next_chunk;
  next_chunk = last;
  keys(hashes, first, last, keys_);
  // The chunk keys, each followed by its state's keys when the GPU saved a state at the chunk's end.
  std::vector<uint64_t> offered;
  for (int64_t j = first; j < last; ++j) {
    const uint64_t k = keys_[static_cast<size_t>(j - first)];
    offered.push_back(k);
    if (config_.state_slots > 0 && state_at && state_at((j + 1) * c)) {
      for (int64_t s = 0; s < config_.state_slots; ++s) {
        offered.push_back(state_key(k, s));
        state_keys_.insert(offered.back());
      }
    }
  }
  // Only this store's keys are kept from eviction (vLLM CPUOffloadingManager.prepare_store:
  // `protected = set(keys)`, keys = the hashes of this call): the request's earlier chunks, once their
  // store completed, are idle like any other and may make room for its later ones.
  protected_.assign(offered.begin(), offered.end());
  const auto absent_in = [&](const HostTier& t) {
    std::vector<uint64_t> out;
    for (uint64_t k : offered)
      if (t.state(k) == HostTier::State::kAbsent) out.push_back(k);
    return out;
  };
  StoreJob job;
  job.id = id;
  int64_t inserted = 0, evicted = 0;
  std::vector<uint64_t> fresh = absent_in(tier_);
  if (tier_.prepare_store(offered, protected_, &inserted, &evicted)) {
    tier_.touch(offered);  // vLLM _touch after a store (keys already present become most recent)
    job.keys = std::move(fresh);
  } else {
    rec.tier_stores_skipped_chunks += last - first;
    totals_[0].stores_skipped_chunks += last - first;
  }
  // The keys some tier copies, sorted for lookup (a set per offer cost more than the rest of it).
  std::vector<uint64_t>& copied = copied_;
  copied.assign(job.keys.begin(), job.keys.end());
  if (config_.lmcache) {
    // LMCache StorageManager.batched_put: a put to every backend, each with its own allocator.
    job.lower_keys.resize(lower_.size());
    for (size_t i = 0; i < lower_.size(); ++i) {
      HostTier& t = lower_[i]->index;
      std::vector<uint64_t> f = absent_in(t);
      if (!t.prepare_store(offered, protected_, &inserted, &evicted)) {
        totals_[i + 1].stores_skipped_chunks += last - first;
        continue;
      }
      t.touch(offered);
      copied.insert(copied.end(), f.begin(), f.end());
      job.lower_keys[i] = std::move(f);
    }
  }
  note_usage();
  if (copied.empty()) return;
  std::sort(copied.begin(), copied.end());
  const auto is_copied = [&copied](uint64_t k) { return std::binary_search(copied.begin(), copied.end(), k); };
  const int64_t host_total = key_bytes_rank(job.keys) * (config_.chunk_bytes / config_.chunk_bytes_rank);
  rec.tier_stored_bytes += host_total;
  totals_[0].stored_bytes += host_total;
  std::vector<uint64_t> all_copied;
  for (uint64_t k : offered)
    if (is_copied(k)) all_copied.push_back(k);
  job.bytes_rank = key_bytes_rank(all_copied);
  ever_stored_.touch_all(all_copied);
  // The GPU blocks the copy reads (rule 24): those of every chunk with a key copied.
  for (int64_t j = first; j < last; ++j) {
    if (!is_copied(keys_[static_cast<size_t>(j - first)])) continue;
    for (int64_t b = j * bpc; b < (j + 1) * bpc && b < std::ssize(blocks); ++b)
      job.blocks.push_back(blocks[static_cast<size_t>(b)]);
    // Hybrids: the blocks holding the state saved at the chunk's end, when the copy takes it.
    if (config_.state_slots > 0 && state_blocks && is_copied(state_key(keys_[static_cast<size_t>(j - first)], 0)))
      state_blocks((j + 1) * c, job.blocks);
  }
  step_stores_.push_back(std::move(job));
}

void KvOffload::submit_stores() {
  const SimTime now = ctx_.now();
  for (StoreJob& job : step_stores_) {
    job.seq = ++next_store_job_;
    for (int32_t b : job.blocks) {
      // Block ids are dense (0 .. num_blocks - 1): a vector, not a map, per GPU block.
      if (static_cast<size_t>(b) >= block_store_job_.size()) block_store_job_.resize(static_cast<size_t>(b) + 1, 0);
      block_store_job_[static_cast<size_t>(b)] = job.seq;
    }
    request_store_job_[job.id.value()] = job.seq;
    if (links_) {
      d2h_queue_.push_back(std::make_shared<StoreJob>(std::move(job)));
      continue;
    }
    const SimTime start = std::max(now, d2h_free_);
    d2h_free_ = start + store_duration(job.bytes_rank);
    store_ends_.push_back(d2h_free_);
    ctx_.queue.schedule(d2h_free_, Phase::kTransferDone, kTagTierStoreDone,
                        [this, job = std::move(job)]() mutable { complete_store(job); });
  }
  step_stores_.clear();
  if (links_) pump_d2h();
}

void KvOffload::pump_d2h() {
  if (d2h_busy_ || d2h_queue_.empty()) return;
  d2h_busy_ = true;
  std::shared_ptr<StoreJob> job = std::move(d2h_queue_.front());
  d2h_queue_.pop_front();
  const int64_t bytes = job->bytes_rank;
  links_->move(0, true, bytes, config_.write_bandwidth, config_.latency, [this, job = std::move(job)] {
    d2h_busy_ = false;
    complete_store(*job);
    pump_d2h();
  });
}

void KvOffload::complete_store(StoreJob& job) {
  tier_.complete_store(job.keys);
  if (config_.lmcache) {
    for (size_t i = 0; i < job.lower_keys.size(); ++i) write_lower(i, std::move(job.lower_keys[i]), false);
  } else {
    write_through(job.keys);
  }
  for (int32_t b : job.blocks) {
    if (block_store_job_[static_cast<size_t>(b)] == job.seq) block_store_job_[static_cast<size_t>(b)] = 0;
  }
  const auto it = request_store_job_.find(job.id.value());
  if (it != request_store_job_.end() && it->second == job.seq) request_store_job_.erase(it);
  KVSIM_CHECK(job.seq == stores_done_ + 1, "store job " << job.seq << " ended out of order");
  stores_done_ = job.seq;
  if (!store_ends_.empty()) store_ends_.pop_front();
  while (!fence_waiters_.empty() && fence_waiters_.begin()->first <= stores_done_) {
    std::function<void()> fn = std::move(fence_waiters_.begin()->second);
    fence_waiters_.erase(fence_waiters_.begin());
    fn();
  }
}

StoreFence KvOffload::store_fence(std::span<const int32_t> reused, std::span<const RequestId> preempted) const {
  int64_t job = 0;  // entries are cleared when their job ends: every one found is pending
  for (int32_t b : reused) {
    if (b >= 0 && static_cast<size_t>(b) < block_store_job_.size())
      job = std::max(job, block_store_job_[static_cast<size_t>(b)]);
  }
  for (RequestId id : preempted) {
    const auto it = request_store_job_.find(id.value());
    if (it != request_store_job_.end()) job = std::max(job, it->second);
  }
  if (links_ || job == 0) return StoreFence{ctx_.now(), job};
  return StoreFence{std::max(ctx_.now(), store_ends_.at(static_cast<size_t>(job - stores_done_ - 1))), 0};
}

void KvOffload::after(const StoreFence& fence, std::function<void()> fn) {
  if (!waiting(fence)) {
    fn();
    return;
  }
  fence_waiters_.emplace(fence.job, std::move(fn));
}

void KvOffload::set_links(std::unique_ptr<TierLinks> links) {
  links_ = std::move(links);
  if (!links_) return;
  KVSIM_CHECK(links_->routed(0), "the first offload tier is off the topology");
  for (size_t i = 0; i < lower_.size(); ++i) {
    if (!links_->routed(static_cast<int>(i) + 1)) continue;
    const KvOffloadLowerTier& l = config_.lower[i];
    lower_[i]->io.set_mover([this, i, l](IoStation::Dir d, int64_t bytes, std::function<void()> done) {
      const bool write = d == IoStation::Dir::kWrite;
      links_->move(static_cast<int>(i) + 1, write, bytes, write ? l.write_bandwidth : l.read_bandwidth, l.latency,
                   std::move(done));
    });
  }
}

bool KvOffload::evicted_from_all_tiers(std::span<const uint64_t> hashes, int64_t block) const {
  const int64_t bpc = config_.blocks_per_chunk;
  const int64_t last = (block / bpc + 1) * bpc - 1;
  if (last >= std::ssize(hashes)) return false;
  const uint64_t key = hashes[static_cast<size_t>(last)];
  if (!ever_stored_.contains(key) || tier_.state(key) != HostTier::State::kAbsent) return false;
  for (const auto& l : lower_)
    if (l->index.state(key) != HostTier::State::kAbsent) return false;
  return true;
}

void KvOffload::write_through(const std::vector<uint64_t>& keys) {
  for (size_t i = 0; i < lower_.size(); ++i) {
    HostTier& t = lower_[i]->index;
    std::vector<uint64_t> fresh;
    for (uint64_t k : keys)
      if (t.state(k) == HostTier::State::kAbsent && tier_.state(k) == HostTier::State::kReady) fresh.push_back(k);
    int64_t inserted = 0, evicted = 0;
    if (!t.prepare_store(keys, keys, &inserted, &evicted)) {
      totals_[i + 1].stores_skipped_chunks += std::ssize(keys);
      continue;
    }
    write_lower(i, std::move(fresh), true);
  }
}

void KvOffload::write_lower(size_t i, std::vector<uint64_t> ks, bool pin_host) {
  if (ks.empty()) return;
  if (pin_host) tier_.begin_load(ks);  // vLLM prepare_read: the host chunk is pinned until written
  const int64_t bytes = key_bytes_rank(ks);
  totals_[i + 1].stored_bytes += bytes * (config_.chunk_bytes / config_.chunk_bytes_rank);
  note_usage();
  lower_[i]->io.submit(IoStation::Dir::kWrite, bytes, [this, i, pin_host, ks = std::move(ks)](SimTime) {
    lower_[i]->index.complete_store(ks);
    if (pin_host) tier_.end_load(ks);
  });
}

void KvOffload::load_from_host(LoadJob job) {
  if (links_) {
    h2d_queue_.push_back(std::move(job));
    pump_h2d();
    return;
  }
  const SimTime start = std::max({ctx_.now(), h2d_free_, job.fence.at});
  h2d_free_ = start + load_duration(job.bytes_rank);
  ctx_.queue.schedule(
      h2d_free_, Phase::kTransferDone, kTagTierLoadDone,
      [this, keys = std::move(job.keys), first_start = job.first_start, end = h2d_free_, done = std::move(job.done)] {
        tier_.end_load(keys);
        done(first_start, end);
      });
}

void KvOffload::pump_h2d() {
  if (h2d_busy_ || h2d_fenced_ || h2d_queue_.empty()) return;
  if (waiting(h2d_queue_.front().fence)) {
    // FIFO: the head waits for its store fence, and the jobs behind it with it.
    h2d_fenced_ = true;
    after(h2d_queue_.front().fence, [this] {
      h2d_fenced_ = false;
      pump_h2d();
    });
    return;
  }
  h2d_busy_ = true;
  auto job = std::make_shared<LoadJob>(std::move(h2d_queue_.front()));
  h2d_queue_.pop_front();
  const int64_t bytes = job->bytes_rank;
  links_->move(0, false, bytes, config_.read_bandwidth, config_.latency, [this, job = std::move(job)] {
    h2d_busy_ = false;
    tier_.end_load(job->keys);
    job->done(job->first_start, ctx_.now());
    pump_h2d();
  });
}

void KvOffload::start_load(std::span<const uint64_t> hashes, const TierHit& hit,
                           std::function<void(SimTime, SimTime)> done, StoreFence fence) {
  const int64_t c = config_.chunk_tokens;
  const int64_t tp = config_.chunk_bytes / config_.chunk_bytes_rank;
  const bool hybrid = config_.state_slots > 0;
  const int64_t bytes = bytes_rank(hit.tokens() / block_size_ * block_size_) + (hybrid ? config_.state_bytes_rank : 0);
  totals_[0].loaded_bytes += bytes * tp;
  struct Pending {
    LoadJob host_job;
    int outstanding = 0;
  };
  auto p = std::make_shared<Pending>();
  p->host_job.bytes_rank = bytes;
  p->host_job.first_start = ctx_.now();
  p->host_job.fence = fence;
  p->host_job.done = std::move(done);
  keys(hashes, 0, (hit.end + c - 1) / c, protected_);
  for (size_t si = 0; si < hit.segments.size(); ++si) {
    const TierSegment& seg = hit.segments[si];
    std::vector<uint64_t> ks;
    keys(hashes, seg.begin / c, (seg.end + c - 1) / c, ks);
    // The state at the hit's end comes from the tier serving the last chunk.
    if (hybrid && si + 1 == hit.segments.size()) {
      const uint64_t last = ks.back();
      for (int64_t s = 0; s < config_.state_slots; ++s) ks.push_back(state_key(last, s));
    }
    if (seg.tier == 0) {
      // vLLM pins a hit's blocks at lookup; here a promotion started earlier in the same planning pass
      // (another request's) may have evicted one of these idle chunks: it is loaded as planned, unpinned.
      std::erase_if(ks, [this](uint64_t k) { return tier_.state(k) != HostTier::State::kReady; });
      tier_.begin_load(ks);
      p->host_job.keys.insert(p->host_job.keys.end(), ks.begin(), ks.end());
      continue;
    }
    // Promotion lower -> host (rule 25; LMCache: the write-back of a lower-tier hit to the host tier),
    // then one host -> GPU job for the whole hit once every promotion ended.
    const size_t li = static_cast<size_t>(seg.tier - 1);
    lower_[li]->index.begin_load(ks);
    std::vector<uint64_t> fresh;
    for (uint64_t k : ks)
      if (tier_.state(k) == HostTier::State::kAbsent) fresh.push_back(k);
    std::vector<uint64_t> prot = protected_;
    prot.insert(prot.end(), ks.begin(), ks.end());
    int64_t inserted = 0, evicted = 0;
    const bool kept = tier_.prepare_store(fresh, prot, &inserted, &evicted);
    note_usage();
    const int64_t seg_bytes = key_bytes_rank(ks);
    totals_[static_cast<size_t>(seg.tier)].loaded_bytes += seg_bytes * tp;
    ++p->outstanding;
    lower_[li]->io.submit(IoStation::Dir::kRead, seg_bytes,
                          [this, li, kept, p, ks = std::move(ks), fresh = std::move(fresh)](SimTime) {
                            lower_[li]->index.end_load(ks);
                            if (kept) {
                              tier_.complete_store(fresh);
                              std::vector<uint64_t> now_held;
                              for (uint64_t k : fresh)
                                if (tier_.state(k) == HostTier::State::kReady) now_held.push_back(k);
                              tier_.begin_load(now_held);
                              p->host_job.keys.insert(p->host_job.keys.end(), now_held.begin(), now_held.end());
                            }
                            if (--p->outstanding == 0) load_from_host(std::move(p->host_job));
                          });
  }
  if (p->outstanding == 0) load_from_host(std::move(p->host_job));
}

void KvOffload::note_usage() {
  for (int i = 0; i < num_tiers(); ++i) {
    TierTotals& t = totals_[static_cast<size_t>(i)];
    t.peak_used_bytes = std::max(t.peak_used_bytes, used_bytes(i));
  }
}

}  // namespace kvsim
