#include "sim/engine/full_attention_manager.h"

#include <algorithm>

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

int64_t FullAttentionManager::find_partial_hit(std::span<const uint64_t> hashes, std::span<const uint64_t> fine,
                                               int unit, int64_t max_length, std::vector<BlockId>& out) const {
  find_longest_cache_hit(hashes, max_length, out);
  int64_t hit = std::ssize(out) * block_size_;
  const int64_t per_block = block_size_ / unit;
  const int64_t first = std::ssize(out) * per_block;
  const int64_t last = std::min({first + per_block - 1, max_length / unit, std::ssize(fine)});
  for (int64_t j = last - 1; j >= first; --j) {
    const BlockId b = pool_.get_cached_block(cache_key(fine[static_cast<size_t>(j)], group_id_));
    if (b == kNoBlock) continue;
    out.push_back(b);
    hit = (j + 1) * unit;
    break;
  }
  return hit;
}

int64_t FullAttentionManager::cache_partial_tail(int slot, std::span<const uint64_t> fine, int unit,
                                                 int64_t prompt_tokens, int64_t num_tokens) {
  const int64_t boundary = prompt_tokens / unit * unit;
  if (boundary == 0 || boundary > num_tokens || boundary % block_size_ == 0) return 0;
  return register_partial(slot, boundary / block_size_, fine, unit, boundary);
}

}  // namespace kvsim
