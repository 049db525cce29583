#pragma once
// RecentKeys: an exact, bounded memory of recently touched 64-bit keys. The miss attribution
// (Scheduler::attribute_miss) asks it whether a block key "had been cached before": a yes is exact (no
// false positives, unlike the Bloom filter it replaced, whose false positives printed "evicted" on
// traces that never repeat), so kEvicted is only reported for a reuse that was really possible.
//
// Rule (two generations): keys are inserted into the current generation; when it holds `horizon`
// distinct keys it becomes the previous one and the old previous one is forgotten. A touch of a key
// held only by the previous generation re-inserts it into the current one. Counting insertions
// (touches of a key not yet in the current generation), a key is remembered for at least the next
// `horizon` insertions after its last touch, forgotten after at most 2 x `horizon`, and in between
// depending on where the generation boundary fell. Deterministic: the boundaries depend only on the
// sequence of keys.
//
// Cost: one open-addressing table per generation (linear probing, 8 B a slot, 2 x horizon slots, at
// most half full), allocated at the first touch: 32 B per key of horizon, independent of the run's
// length. A touch is one probe of the current table (one cache miss on a large table; the former
// ring-and-index form took about four: ring, old key's slot, erase, new key's slot); a generation
// change clears a table sequentially.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sim/core/check.h"
#include "sim/engine/hash_mix.h"

namespace kvsim {

class RecentKeys {
 public:
  // `horizon`: a power of two, at least 2.
  explicit RecentKeys(size_t horizon) : horizon_(horizon) {
    KVSIM_CHECK(horizon >= 2 && (horizon & (horizon - 1)) == 0, "RecentKeys horizon " << horizon);
  }
  size_t horizon() const { return horizon_; }
  // Distinct keys remembered (both generations). O(horizon): for tests.
  size_t size() const {
    size_t n = prev_.count + (cur_.has_zero && !prev_.has_zero ? 1 : 0);
    for (size_t i = 0; i < cur_.slots.size(); ++i)
      if (cur_.slots[i] != 0 && !prev_.contains(cur_.slots[i])) ++n;
    return n;
  }

  // Inserts `key` into the current generation (a no-op if it is there already).
  void touch(uint64_t key) {
    allocate();
    if (!cur_.insert(key)) return;
    if (cur_.count == horizon_) {
      std::swap(cur_, prev_);
      cur_.clear();
    }
  }

  // touch() of each key in order; the table slots of the keys a few places ahead are prefetched, so
  // the cache misses of a request's block keys overlap instead of following one another.
  void touch_all(std::span<const uint64_t> keys) {
    constexpr size_t kAhead = 8;
    if (!keys.empty()) allocate();
    for (size_t i = 0; i < keys.size(); ++i) {
      if (i + kAhead < keys.size()) cur_.prefetch(keys[i + kAhead]);
      touch(keys[i]);
    }
  }

  bool contains(uint64_t key) const { return cur_.contains(key) || prev_.contains(key); }

 private:
  // The tables exist from the first touch on (an engine that never registers a block pays nothing).
  void allocate() {
    if (!cur_.slots.empty()) return;
    cur_.reset(2 * horizon_);
    prev_.reset(2 * horizon_);
  }
  // Keys in open addressing; 0 marks an empty slot, so key 0 itself is a flag.
  struct Table {
    std::vector<uint64_t> slots;
    size_t mask = 0;
    size_t count = 0;
    bool has_zero = false;

    void reset(size_t n) {
      slots.assign(n, 0);
      mask = n - 1;
      count = 0;
      has_zero = false;
    }
    void clear() {
      std::fill(slots.begin(), slots.end(), 0);
      count = 0;
      has_zero = false;
    }
    size_t home(uint64_t key) const { return static_cast<size_t>(avalanche64(key ^ kMixP1)) & mask; }
    void prefetch(uint64_t key) const { __builtin_prefetch(&slots[home(key)], 1); }
    bool contains(uint64_t key) const {
      if (slots.empty()) return false;
      if (key == 0) return has_zero;
      for (size_t i = home(key);; i = (i + 1) & mask) {
        if (slots[i] == key) return true;
        if (slots[i] == 0) return false;
      }
    }
    // True when `key` was not there (and is now).
    bool insert(uint64_t key) {
      if (key == 0) {
        if (has_zero) return false;
        has_zero = true;
        ++count;
        return true;
      }
      for (size_t i = home(key);; i = (i + 1) & mask) {
        if (slots[i] == key) return false;
        if (slots[i] == 0) {
          slots[i] = key;
          ++count;
          return true;
        }
      }
    }
  };

  size_t horizon_;
  Table cur_, prev_;
};

}  // namespace kvsim
