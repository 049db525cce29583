#include "sim/tier/host_tier.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "sim/core/check.h"

namespace kvsim {

HostTier::State HostTier::state(uint64_t key) const {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return State::kAbsent;
  return it->second.ref < 0 ? State::kPending : State::kReady;
}

int64_t HostTier::ready_run(std::span<const uint64_t> keys) const {
  int64_t n = 0;
  for (uint64_t k : keys) {
    if (state(k) != State::kReady) break;
    ++n;
  }
  return n;
}

void HostTier::to_mru(uint64_t key, Entry& e) {
  if (e.ref != 0) return;
  if (e.pos != lru_.end()) lru_.erase(e.pos);
  e.pos = lru_.insert(lru_.end(), key);
}

bool HostTier::prepare_store(std::span<const uint64_t> keys, std::span<const uint64_t> protected_keys,
                             int64_t* inserted, int64_t* evicted) {
  *inserted = 0;
  *evicted = 0;
  std::vector<uint64_t> fresh;
  for (uint64_t k : keys)
    if (!entries_.contains(k) && std::find(fresh.begin(), fresh.end(), k) == fresh.end()) fresh.push_back(k);
  if (fresh.empty()) return true;
  const int64_t need = std::ssize(fresh) - (capacity_ - size());
  if (need > 0) {
    const std::unordered_set<uint64_t> keep(protected_keys.begin(), protected_keys.end());
    std::vector<uint64_t> victims;
    for (auto it = lru_.begin(); it != lru_.end() && std::ssize(victims) < need; ++it)
      if (!keep.contains(*it)) victims.push_back(*it);
    if (std::ssize(victims) < need) return false;  // vLLM: evict() is all or nothing; the store is skipped
    for (uint64_t v : victims) {
      auto e = entries_.find(v);
      lru_.erase(e->second.pos);
      entries_.erase(e);
    }
    *evicted = need;
    evictions_ += need;
  }
  for (uint64_t k : fresh) entries_.emplace(k, Entry{-1, lru_.end()});
  *inserted = std::ssize(fresh);
  KVSIM_CHECK(size() <= capacity_, "tier holds " << size() << " chunks, capacity " << capacity_);
  return true;
}

void HostTier::complete_store(std::span<const uint64_t> keys) {
  for (uint64_t k : keys) {
    auto it = entries_.find(k);
    if (it == entries_.end() || it->second.ref != -1) continue;
    it->second.ref = 0;
    to_mru(k, it->second);
  }
}

void HostTier::touch(std::span<const uint64_t> keys) {
  for (auto k = keys.rbegin(); k != keys.rend(); ++k) {
    auto it = entries_.find(*k);
    if (it != entries_.end()) to_mru(*k, it->second);
  }
}

void HostTier::begin_load(std::span<const uint64_t> keys) {
  for (uint64_t k : keys) {
    auto it = entries_.find(k);
    KVSIM_CHECK(it != entries_.end() && it->second.ref >= 0, "load of a chunk the tier does not hold ready");
    if (it->second.ref == 0) {
      lru_.erase(it->second.pos);
      it->second.pos = lru_.end();
    }
    ++it->second.ref;
  }
}

void HostTier::end_load(std::span<const uint64_t> keys) {
  for (uint64_t k : keys) {
    auto it = entries_.find(k);
    KVSIM_CHECK(it != entries_.end() && it->second.ref > 0, "load end without a load");
    if (--it->second.ref == 0) to_mru(k, it->second);
  }
}

}  // namespace kvsim
