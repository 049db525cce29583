#pragma once
// Sliding-window layers: only the last `window` tokens are attended; older blocks are released and a
// hit needs only the blocks covering the window before the hit point.
#include <cstdint>

#include "sim/engine/single_type_manager_base.h"

namespace kvsim {

class SlidingWindowManager final : public SingleTypeManagerBase {
 public:
  SlidingWindowManager(BlockPool& pool, int group_id, int block_size, int window, int64_t max_in_flight_tokens,
                       int64_t max_model_len);
  KvGroupKind kind() const override { return KvGroupKind::kSlidingWindow; }
  // vLLM SlidingWindowManager: right to left over blocks below max_length / B, the first run of
  // cdiv(window - 1, B) contiguous cached blocks; earlier positions are null. If none, the leading
  // contiguous run counts.
  void find_longest_cache_hit(std::span<const uint64_t> hashes, int64_t max_length,
                              std::vector<BlockId>& out) const override;
  // SlidingWindowSpec.max_admission_blocks_per_request:
  // cdiv(min(window - 1 + max_in_flight_tokens, max_model_len), B) + 1.
  int64_t max_blocks_per_request() const override { return max_blocks_; }
  int window() const { return window_; }

 protected:
  // vLLM get_num_skipped_tokens: max(0, n - window + 1).
  int64_t num_skipped_tokens(int64_t n) const override { return n - window_ + 1 > 0 ? n - window_ + 1 : 0; }

 private:
  int window_;
  int64_t max_blocks_;
};

}  // namespace kvsim
