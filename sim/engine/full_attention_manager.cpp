#include "sim/engine/full_attention_manager.h"

namespace kvsim {

void FullAttentionManager::find_longest_cache_hit(std::span<const uint64_t> hashes, int64_t max_length,
                                                  std::vector<BlockId>& out) const {
  out.clear();
  const int64_t max_blocks = std::min<int64_t>(max_length / block_size_, std::ssize(hashes));
  for (int64_t i = 0; i < max_blocks; ++i) {
    const BlockId b = pool_.get_cached_block(cache_key(hashes[static_cast<size_t>(i)], group_id_));
    if (b == kNoBlock) break;
    out.push_back(b);
  }
}

}  // namespace kvsim
