#pragma once
// FlatMap (used by routers and the metrics collector): open addressing (linear probing, backward-shift deletion) from a
// (64-bit key, 32-bit tag) pair to an int32 value, growing by doubling at 50 % load. No per-entry allocation: routers
// insert and drop millions of block hashes. Lookup only, never iterated.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvsim {

class FlatMap {
 public:
  static constexpr int32_t kAbsent = -1;

  FlatMap() : slots_(16), mask_(15) {}
  int32_t find(uint64_t key, int32_t tag) const {
    for (size_t i = home(key, tag);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == kAbsent) return kAbsent;
      if (s.key == key && s.tag == tag) return s.value;
    }
  }
  // Sets the value (inserting the pair if absent).
  void put(uint64_t key, int32_t tag, int32_t value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (size_t i = home(key, tag);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value == kAbsent) {
        s = {key, tag, value};
        ++size_;
        return;
      }
      if (s.key == key && s.tag == tag) {
        s.value = value;
        return;
      }
    }
  }
  void erase(uint64_t key, int32_t tag) {
    size_t i = home(key, tag);
    while (true) {
      const Slot& s = slots_[i];
      if (s.value == kAbsent) return;
      if (s.key == key && s.tag == tag) break;
      i = (i + 1) & mask_;
    }
    // Backward shift: pull later entries of the cluster into the hole when their home allows it.
    size_t hole = i;
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      Slot& s = slots_[j];
      if (s.value == kAbsent) break;
      const size_t h = home(s.key, s.tag);
      if (((j - h) & mask_) >= ((j - hole) & mask_)) {
        slots_[hole] = s;
        hole = j;
      }
    }
    slots_[hole].value = kAbsent;
    --size_;
  }
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key = 0;
    int32_t tag = 0;
    int32_t value = kAbsent;
  };
  size_t home(uint64_t key, int32_t tag) const {
    const uint64_t k =
        (key ^ (static_cast<uint64_t>(static_cast<uint32_t>(tag)) * 0xC2B2AE3D27D4EB4FULL)) * 0x9E3779B97F4A7C15ULL;
    return static_cast<size_t>(k >> 17) & mask_;
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (const Slot& s : old)
      if (s.value != kAbsent) put(s.key, s.tag, s.value);
  }

  std::vector<Slot> slots_;
  size_t mask_;
  size_t size_ = 0;
};

}  // namespace kvsim
