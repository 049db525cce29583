#include "sim/engine/sliding_window_manager.h"

#include <algorithm>

#include "sim/core/check.h"

namespace kvsim {

SlidingWindowManager::SlidingWindowManager(BlockPool& pool, int group_id, int block_size, int window,
                                           int64_t max_in_flight_tokens, int64_t max_model_len,
                                           int64_t retention_interval)
    : SingleTypeManagerBase(pool, group_id, block_size), window_(window), retention_(retention_interval) {
  KVSIM_CHECK(window > 0, "sliding window must be positive, got " << window);
  const int64_t tokens = std::min<int64_t>(window - 1 + max_in_flight_tokens, max_model_len);
  max_blocks_ = (tokens + block_size - 1) / block_size + 1;
  need_ = (window - 1 + block_size - 1) / block_size;
  masked_ = retention_interval != kRetentionDense;
}

void SlidingWindowManager::set_boundaries(int slot, int64_t replay_boundary, int64_t junction) {
  if (std::ssize(boundaries_) <= slot) boundaries_.resize(static_cast<size_t>(slot) + 1);
  boundaries_[static_cast<size_t>(slot)] = Boundaries{replay_boundary, junction};
}

void SlidingWindowManager::free(int slot) {
  SingleTypeManagerBase::free(slot);
  if (slot < std::ssize(boundaries_)) boundaries_[static_cast<size_t>(slot)] = Boundaries{};
}

bool SlidingWindowManager::keeps_hash(int slot, int64_t block) const {
  // reachable_block_mask without EAGLE (shift 0); the alignment is the scheduler block, B here.
  if (retention_ == kRetentionDense) return true;  // per_segment 1 <= need: every block
  if (retention_ > 0) {
    const int64_t per_segment = retention_ / block_size_;
    if (need_ >= per_segment || block % per_segment >= per_segment - need_) return true;
  }
  if (slot >= std::ssize(boundaries_)) return false;
  const Boundaries& b = boundaries_[static_cast<size_t>(slot)];
  for (int64_t boundary : {b.replay, b.junction}) {
    if (boundary <= 0) continue;
    const int64_t end = boundary / block_size_;  // the tail's blocks are [end - need, end)
    if (block >= end - need_ && block < end) return true;
  }
  return false;
}

void SlidingWindowManager::find_longest_cache_hit(std::span<const uint64_t> hashes, int64_t max_length,
                                                  std::vector<BlockId>& out) const {
  const int64_t need = need_;  // cdiv(window - 1, B)
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
