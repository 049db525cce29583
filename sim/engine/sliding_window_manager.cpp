#include "sim/engine/sliding_window_manager.h"

#include "sim/core/check.h"

namespace kvsim {

SlidingWindowManager::SlidingWindowManager(BlockPool& pool, int group_id, int block_size, int window,
                                           int64_t max_in_flight_tokens, int64_t max_model_len)
    : SingleTypeManagerBase(pool, group_id, block_size), window_(window) {
  KVSIM_CHECK(window > 0, "sliding window must be positive, got " << window);
  const int64_t tokens = std::min<int64_t>(window - 1 + max_in_flight_tokens, max_model_len);
  max_blocks_ = (tokens + block_size - 1) / block_size + 1;
}

void SlidingWindowManager::find_longest_cache_hit(std::span<const uint64_t> hashes, int64_t max_length,
                                                  std::vector<BlockId>& out) const {
  const int64_t need = (window_ - 1 + block_size_ - 1) / block_size_;  // cdiv(window - 1, B)
  const int64_t max_blocks = std::min<int64_t>(max_length / block_size_, std::ssize(hashes));
  out.assign(static_cast<size_t>(max_blocks), kNullBlock);
  int64_t contiguous = 0;
  for (int64_t i = max_blocks - 1; i >= 0; --i) {
    const BlockId b = pool_.get_cached_block(cache_key(hashes[static_cast<size_t>(i)], group_id_));
    if (b == kNoBlock) {
      contiguous = 0;
      continue;
    }
    out[static_cast<size_t>(i)] = b;
    if (++contiguous >= need) {
      out.resize(static_cast<size_t>(i + contiguous));
      return;
    }
  }
  // No run long enough: the leading contiguous run (from block 0) is still a hit.
  out.resize(static_cast<size_t>(contiguous));
}

}  // namespace kvsim
