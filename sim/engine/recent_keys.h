#pragma once
// RecentKeys: the exact set of 64-bit keys touched (inserted or refreshed) within the last `horizon`
// touches, in bounded memory. The miss attribution (Scheduler::attribute_miss) asks it whether a block
// key "had been cached before": a yes is exact (no false positives, unlike the Bloom filter it
// replaces, whose false positives printed "evicted" on traces that never repeat), so kEvicted is only
// reported for a reuse that was really possible. A key touched more than `horizon` touches ago is
// forgotten (reported as not seen): the cache would have had to be many times larger to keep it.
//
// Memory: a ring of the last `horizon` touches (8 B each) and a linear-probing index (12 B a slot,
// 2 x horizon slots, at most half full), allocated at the first touch: 32 B per key of horizon,
// independent of the run's length. Deterministic: no seeds, no std::hash.
#include <cstddef>
#include <cstdint>
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
  size_t size() const { return size_; }

  // Inserts `key`, or makes it the most recent if present.
  void touch(uint64_t key) {
    if (ring_.empty()) {
      ring_.assign(horizon_, 0);
      keys_.assign(2 * horizon_, 0);
      pos_.assign(2 * horizon_, kEmpty);
      mask_ = 2 * horizon_ - 1;
    }
    if (filled_ == horizon_) {
      // The oldest touch leaves the window; its key goes unless touched again since.
      const uint64_t old = ring_[next_];
      const size_t i = slot_of(old);
      if (pos_[i] == next_) erase_at(i);
    } else {
      ++filled_;
    }
    ring_[next_] = key;
    const size_t i = slot_of(key);
    if (pos_[i] == kEmpty) {
      keys_[i] = key;
      ++size_;
    }
    pos_[i] = static_cast<uint32_t>(next_);
    next_ = (next_ + 1) & (horizon_ - 1);
  }

  bool contains(uint64_t key) const { return !ring_.empty() && pos_[slot_of(key)] != kEmpty; }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  size_t home(uint64_t key) const { return static_cast<size_t>(avalanche64(key ^ kMixP1)) & mask_; }
  // The slot holding `key`, or the empty slot where it would go.
  size_t slot_of(uint64_t key) const {
    size_t i = home(key);
    while (pos_[i] != kEmpty && keys_[i] != key) i = (i + 1) & mask_;
    return i;
  }
  // Backward-shift deletion (linear probing keeps no tombstones).
  void erase_at(size_t hole) {
    for (size_t j = (hole + 1) & mask_; pos_[j] != kEmpty; j = (j + 1) & mask_) {
      const size_t h = home(keys_[j]);
      if (((j - h) & mask_) >= ((j - hole) & mask_)) {
        keys_[hole] = keys_[j];
        pos_[hole] = pos_[j];
        hole = j;
      }
    }
    pos_[hole] = kEmpty;
    --size_;
  }

  size_t horizon_;
  size_t mask_ = 0;
  size_t next_ = 0, filled_ = 0, size_ = 0;
  std::vector<uint64_t> ring_;
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> pos_;
};

}  // namespace kvsim
