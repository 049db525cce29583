#pragma once
// Deterministic 64-bit mixing used by the engine's block hashes and filters (xxHash64-style rounds and
// avalanche). Never std::hash: results must be identical across standard libraries and runs.
#include <cstdint>

namespace kvsim {

inline constexpr uint64_t kMixP1 = 0x9E3779B185EBCA87ULL;
inline constexpr uint64_t kMixP2 = 0xC2B2AE3D27D4EB4FULL;
inline constexpr uint64_t kMixP3 = 0x165667B19E3779F9ULL;

inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64_t avalanche64(uint64_t h) {
  h ^= h >> 33;
  h *= kMixP2;
  h ^= h >> 29;
  h *= kMixP3;
  h ^= h >> 32;
  return h;
}

class Mixer {
 public:
  explicit Mixer(uint64_t seed) : h_(seed) {}
  void add(uint64_t v) {
    h_ += v * kMixP2;
    h_ = rotl64(h_, 31) * kMixP1;
  }
  uint64_t finish() const { return avalanche64(h_ ^ (h_ >> 27)); }

 private:
  uint64_t h_;
};

}  // namespace kvsim
