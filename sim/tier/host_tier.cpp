#include "sim/tier/host_tier.h"

#include <algorithm>
#include <vector>

#include "sim/core/check.h"

namespace kvsim {

HostTier::HostTier(int64_t capacity_chunks, const std::string& eviction)
    : capacity_(capacity_chunks), policy_(make_eviction_policy(eviction, capacity_chunks)) {}

HostTier::State HostTier::state(uint64_t key) const {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return State::kAbsent;
  return it->second.ref < 0 ? State::kPending : State::kReady;
}

bool HostTier::is_ready(uint64_t key) const { return state(key) == State::kReady; }

bool HostTier::is_idle(uint64_t key) const {
  const auto it = entries_.find(key);
  return it != entries_.end() && it->second.ref == 0;
}

int64_t HostTier::ready_run(std::span<const uint64_t> keys) const {
  int64_t n = 0;
  for (uint64_t k : keys) {
    if (state(k) != State::kReady) break;
    ++n;
  }
  return n;
}

bool HostTier::prepare_store(std::span<const uint64_t> keys, std::span<const uint64_t> protected_keys,
                             int64_t* inserted, int64_t* evicted) {
  ++changes_;
  *inserted = 0;
  *evicted = 0;
  // The keys not yet held, in order, once each (a sorted copy finds repeats without a quadratic scan).
  fresh_.clear();
  for (uint64_t k : keys)
    if (!entries_.contains(k)) fresh_.push_back(k);
  sorted_.assign(fresh_.begin(), fresh_.end());
  std::sort(sorted_.begin(), sorted_.end());
  if (std::adjacent_find(sorted_.begin(), sorted_.end()) != sorted_.end()) {
    std::vector<uint64_t> once;
    for (uint64_t k : fresh_)
      if (std::find(once.begin(), once.end(), k) == once.end()) once.push_back(k);
    fresh_ = std::move(once);
  }
  if (fresh_.empty()) return true;
  const int64_t need = std::ssize(fresh_) - (capacity_ - size());
  if (need > 0) {
    // The storing request's chunks, sorted for the victims' lookups: the LRU scan seldom meets them (they
    // were just touched), so sorting them costs less than marking each in the index.
    protected_.assign(protected_keys.begin(), protected_keys.end());
    std::sort(protected_.begin(), protected_.end());
    std::vector<uint64_t> victims;
    // vLLM: evict() is all or nothing; on failure the store is skipped.
    if (!policy_->evict(
            need, [this](uint64_t k) { return std::binary_search(protected_.begin(), protected_.end(), k); },
            [this](uint64_t k) { return is_idle(k); }, &victims))
      return false;
    KVSIM_CHECK(std::ssize(victims) == need, "policy evicted " << victims.size() << " chunks, asked " << need);
    for (uint64_t v : victims) entries_.erase(v);
    *evicted = need;
    evictions_ += need;
  }
  for (uint64_t k : fresh_) {
    entries_.emplace(k, Entry{-1});
    policy_->insert(k);
  }
  *inserted = std::ssize(fresh_);
  KVSIM_CHECK(size() <= capacity_, "tier holds " << size() << " chunks, capacity " << capacity_);
  return true;
}

void HostTier::complete_store(std::span<const uint64_t> keys) {
  ++changes_;
  for (uint64_t k : keys) {
    auto it = entries_.find(k);
    if (it == entries_.end() || it->second.ref != -1) continue;
    it->second.ref = 0;
    policy_->on_idle(k);
  }
}

void HostTier::touch(std::span<const uint64_t> keys) {
  const bool idempotent = policy_->touch_is_idempotent();
  if (idempotent && changes_ == last_touch_changes_ && std::ranges::equal(keys, last_touch_)) return;
  ++changes_;
  policy_->touch(keys, [this](uint64_t k) { return is_ready(k); });
  if (idempotent) {
    last_touch_.assign(keys.begin(), keys.end());
    last_touch_changes_ = changes_;
  }
}

void HostTier::begin_load(std::span<const uint64_t> keys) {
  ++changes_;
  for (uint64_t k : keys) {
    auto it = entries_.find(k);
    KVSIM_CHECK(it != entries_.end() && it->second.ref >= 0, "load of a chunk the tier does not hold ready");
    if (it->second.ref++ == 0) policy_->on_busy(k);
  }
}

void HostTier::end_load(std::span<const uint64_t> keys) {
  ++changes_;
  for (uint64_t k : keys) {
    auto it = entries_.find(k);
    KVSIM_CHECK(it != entries_.end() && it->second.ref > 0, "load end without a load");
    if (--it->second.ref == 0) policy_->on_idle(k);
  }
}

}  // namespace kvsim
