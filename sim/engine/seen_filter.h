#pragma once
// SeenFilter: a fixed-size blocked Bloom filter of 64-bit keys ever registered in the prefix cache, so a
// miss can be attributed to eviction ("had been cached before") without memory that grows with the
// trace. 2^24 bits (2 MiB), 3 probes inside one 512-bit block (one cache line per query).
// False positives are possible but rare (about 0.1% at 1M keys, a few % past 4M): a never-seen block
// may then be reported as kEvicted. No false negatives. Deterministic: no seeds, no std::hash.
#include <cstdint>
#include <vector>

#include "sim/engine/hash_mix.h"

namespace kvsim {

class SeenFilter {
 public:
  static constexpr int kLog2Bits = 24;
  SeenFilter() : words_(size_t{1} << (kLog2Bits - 6), 0) {}
  void insert(uint64_t key) {
    const uint64_t h = avalanche64(key ^ kMixP3);
    uint64_t* line = &words_[(h >> (64 - (kLog2Bits - 9))) * 8];
    for (int i = 0; i < 3; ++i) {
      const uint64_t bit = (h >> (9 * i)) & 511;
      line[bit >> 6] |= uint64_t{1} << (bit & 63);
    }
  }
  bool contains(uint64_t key) const {
    const uint64_t h = avalanche64(key ^ kMixP3);
    const uint64_t* line = &words_[(h >> (64 - (kLog2Bits - 9))) * 8];
    for (int i = 0; i < 3; ++i) {
      const uint64_t bit = (h >> (9 * i)) & 511;
      if ((line[bit >> 6] & (uint64_t{1} << (bit & 63))) == 0) return false;
    }
    return true;
  }

 private:
  std::vector<uint64_t> words_;
};

}  // namespace kvsim
