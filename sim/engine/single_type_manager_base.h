#pragma once
// Shared bookkeeping of SingleTypeKVCacheManager (block tables, allocation, caching, freeing); the
// layer kinds override the hit search and the skipped-token rule.
#include <vector>

#include "sim/engine/i_single_type_manager.h"

namespace kvsim {

class SingleTypeManagerBase : public ISingleTypeManager {
 public:
  SingleTypeManagerBase(BlockPool& pool, int group_id, int block_size);
  int group_id() const override { return group_id_; }
  void remove_skipped_blocks(int slot, int64_t num_computed_tokens) override;
  int64_t num_blocks_to_allocate(int slot, int64_t num_tokens, std::span<const BlockId> new_computed,
                                 int64_t total_computed_tokens) const override;
  void save_new_computed_blocks(int slot, std::span<const BlockId> new_computed,
                                int64_t total_computed_tokens) override;
  void allocate_new_blocks(int slot, int64_t num_tokens) override;
  int64_t cache_blocks(int slot, std::span<const uint64_t> hashes, int64_t num_tokens) override;
  int64_t find_partial_hit(std::span<const uint64_t> hashes, std::span<const uint64_t> fine, int unit,
                           int64_t max_length, std::vector<BlockId>& out) const override;
  int64_t cache_partial_tail(int slot, std::span<const uint64_t> fine, int unit, int64_t prompt_tokens,
                             int64_t num_tokens) override;
  void free(int slot) override;
  std::span<const BlockId> blocks(int slot) const override;
  int64_t num_held_blocks(int slot) const override;

 protected:
  // Tokens at the start whose KV is no longer needed once n tokens are computed (0 for full attention).
  virtual int64_t num_skipped_tokens(int64_t n) const { return 0; }
  // With masked_ set, cache_blocks registers only the full blocks this keeps (vLLM reachable_block_mask);
  // the others stay unhashed.
  virtual bool keeps_hash(int /*slot*/, int64_t /*block*/) const { return true; }
  bool masked_ = false;
  struct Table {
    std::vector<BlockId> blocks;
    int64_t num_cached = 0;  // leading blocks already registered in the prefix cache
    int64_t first_live = 0;  // blocks before this index are null (skipped)
    bool active = false;     // holds blocks (vLLM: request_id in num_cached_block)
  };
  Table& table(int slot);
  // Registers block `idx` of `slot` under the fine hash of `pos` (a partial-tail entry) if it holds no
  // hash yet; returns pos, or 0 when nothing was registered.
  int64_t register_partial(int slot, int64_t idx, std::span<const uint64_t> fine, int unit, int64_t pos);
  const Table* find_table(int slot) const;

  BlockPool& pool_;
  int group_id_;
  int block_size_;
  std::vector<Table> tables_;
  std::vector<BlockId> scratch_;
};

}  // namespace kvsim
