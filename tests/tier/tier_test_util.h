#pragma once
// Fixtures shared by the tier tests, with round numbers every expected value is worked out from: block
// size 16, 1e6 bytes per block per GPU (TP 1), a host tier of 10 us per job, an NVMe-like lower tier, and
// an engine of 4 usable GPU blocks (64 tokens). FixedLatency steps (tests/engine/engine_test_util.h) take
// 1 ms + 1 us per scheduled token.
#include <cstdint>

#include "sim/engine/engine_config.h"
#include "sim/tier/offload_config.h"
#include "tests/engine/engine_test_util.h"

namespace kvsim::tier_test {

constexpr int64_t kBlockBytes = 1000000;

inline int64_t ms_ns(double ms) { return static_cast<int64_t>(ms * 1e6 + 0.5); }

// Host tier of `capacity_chunks` chunks of `chunk_tokens` (a multiple of 16), read / write bandwidth in
// B/s per GPU, 10 us per job.
inline KvOffloadConfig host_tier(int64_t capacity_chunks, double read_bw, double write_bw, int64_t chunk_tokens = 16) {
  KvOffloadConfig c;
  c.enabled = true;
  c.tier = "host-dram";
  c.chunk_tokens = chunk_tokens;
  c.blocks_per_chunk = chunk_tokens / 16;
  c.chunk_bytes_rank = kBlockBytes * c.blocks_per_chunk;
  c.chunk_bytes = c.chunk_bytes_rank;
  c.capacity_chunks = capacity_chunks;
  c.size_bytes = capacity_chunks * c.chunk_bytes;
  c.read_bandwidth = read_bw;
  c.write_bandwidth = write_bw;
  c.latency = Duration::us(10);
  return c;
}

// A lower tier (NVMe-like): read 1e9, write 0.5e9 B/s, 100 us per job, 100 chunks, 16 + 16 servers.
inline KvOffloadLowerTier nvme_tier() {
  KvOffloadLowerTier l;
  l.tier = "nvme-gen4";
  l.capacity_chunks = 100;
  l.size_bytes = 100 * kBlockBytes;
  l.read_bandwidth = 1e9;
  l.write_bandwidth = 0.5e9;
  l.latency = Duration::us(100);
  return l;
}

// num_blocks 5 = 4 usable blocks = 64 tokens: a second 64-token prompt evicts the first from the GPU.
inline EngineConfig small_engine(KvOffloadConfig off) {
  EngineConfig c = testing::config_for(testing::full_layout(16, 5));
  c.kv_offload = off;
  return c;
}

}  // namespace kvsim::tier_test
