#pragma once
// Full-attention layers: every token keeps its KV; a hit is the leading run of cached blocks.
#include <cstdint>

#include "sim/engine/single_type_manager_base.h"

namespace kvsim {

class FullAttentionManager final : public SingleTypeManagerBase {
 public:
  using SingleTypeManagerBase::SingleTypeManagerBase;
  KvGroupKind kind() const override { return KvGroupKind::kFullAttention; }
  // vLLM FullAttentionManager: the longest run of cached blocks from the start (chained hashes: the
  // first miss ends it), at most max_length / B blocks.
  void find_longest_cache_hit(std::span<const uint64_t> hashes, int64_t max_length,
                              std::vector<BlockId>& out) const override;
  int64_t max_blocks_per_request() const override { return INT64_MAX; }
  // vLLM fine-grained FullAttentionManager.find_longest_cache_hit: the run of whole cached blocks, then
  // the first block after it probed at its interior unit boundaries, longest first.
  int64_t find_partial_hit(std::span<const uint64_t> hashes, std::span<const uint64_t> fine, int unit,
                           int64_t max_length, std::vector<BlockId>& out) const override;
  // vLLM FullAttentionManager._cache_partial_tail_block: the prompt's last unit boundary, if inside a
  // block, is registered on that block (every call until the block holds a hash).
  int64_t cache_partial_tail(int slot, std::span<const uint64_t> fine, int unit, int64_t prompt_tokens,
                             int64_t num_tokens) override;
};

}  // namespace kvsim
