#pragma once
// Sliding-window layers: only the last `window` tokens are attended; older blocks are released and a
// hit needs only the blocks covering the window before the hit point.
#include <cstdint>
#include <vector>

#include "sim/engine/engine_config.h"
#include "sim/engine/single_type_manager_base.h"

namespace kvsim {

class SlidingWindowManager final : public SingleTypeManagerBase {
 public:
  SlidingWindowManager(BlockPool& pool, int group_id, int block_size, int window, int64_t max_in_flight_tokens,
                       int64_t max_model_len, int64_t retention_interval = kRetentionDense);
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
  // The replay boundary floor((L-1)/B)*B and the block-floored junction (0: none) of a request.
  void set_boundaries(int slot, int64_t replay_boundary, int64_t junction);
  void free(int slot) override;

 protected:
  // vLLM get_num_skipped_tokens: max(0, n - window + 1).
  int64_t num_skipped_tokens(int64_t n) const override { return n - window_ + 1 > 0 ? n - window_ + 1 : 0; }

 private:
  // vLLM SlidingWindowManager.reachable_block_mask (PR #43447): a full block keeps its hash only if some
  // hit could use it: the `need` = cdiv(window - 1, B) blocks ending at a segment's end (retention N > 0:
  // N-token segments; dense: every block), and, unless dense, those ending at the replay boundary and at
  // the shared-prefix junction (set_boundaries). The others stay unhashed.
  bool keeps_hash(int slot, int64_t block) const override;

  int window_;
  int64_t max_blocks_;
  int64_t need_;       // cdiv(window - 1, B): contiguous blocks a hit needs
  int64_t retention_;  // kRetentionDense, 0, or N tokens
  struct Boundaries {
    int64_t replay = 0, junction = 0;
  };
  std::vector<Boundaries> boundaries_;  // per slot
};

}  // namespace kvsim
