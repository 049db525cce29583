#pragma once
// KvCacheLayout: how the engine's paged cache is organised for one model on one GPU, as vLLM's
// kv_cache_utils.py forms it: KV cache groups (one per spec bucket split by group_size), one block
// size shared by all groups (hybrids unify page sizes), and the number of blocks in the shared pool.
// The engine works from this struct alone; model/sizing.h builds it from a ModelSpec.
#include <cstdint>
#include <string>
#include <vector>

namespace kvsim {

enum class KvGroupKind { kFullAttention, kSlidingWindow, kState };

struct KvCacheGroup {
  KvGroupKind kind = KvGroupKind::kFullAttention;
  int num_layers = 0;                // layers whose cache this group's block table addresses
  int window = 0;                    // sliding-window groups: window in tokens
  int64_t page_bytes_per_layer = 0;  // bytes of one block in one layer (padded for state groups)
};

struct KvCacheLayout {
  int block_size = 16;  // tokens per block, the same in every group
  std::vector<KvCacheGroup> groups;
  int group_size = 1;           // layers per group = tensors sharing one block id (vLLM group_size)
  int64_t bytes_per_block = 0;  // memory one block id takes: page x group_size (or sum of pages)
  int64_t num_blocks = 0;       // blocks in the pool, including vLLM's null block (block 0)
  std::string describe() const;
  // The window of the first sliding-window group (0: none): the one the step's windowed aggregates use.
  int first_window() const {
    for (const KvCacheGroup& g : groups)
      if (g.kind == KvGroupKind::kSlidingWindow) return g.window;
    return 0;
  }
};

}  // namespace kvsim
