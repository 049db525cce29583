#pragma once
// MambaManager: the block table of one state (Mamba2 / gated DeltaNet / RWKV) KV cache group
// (vllm/v1/core/single_type_kv_cache_manager.py, MambaManager). Position-indexed: column p holds the
// state after (p+1)*B tokens if some step ended there; other columns are null blocks.
//  - align: the first prefill takes 1 block (the running state, in column cdiv(computed, B) - 1); each
//    step that crosses into a new column takes 1 more (the state is copied forward by the worker);
//    remove_skipped_blocks frees every column before the running one (get_num_skipped_tokens = n - 1)
//    and the block from two steps ago (last_state_block_idx): 1 block held, 2 across a boundary.
//  - none: one block per request for its whole life (mamba_block_size = max_model_len), no hashes.
//  - all: every column crossed gets a block (a state at every boundary), earlier ones freed next step.
// Hashes are registered at schedule time for columns that are full and not null, filtered in align
// mode by the retention policy (set_boundaries). A block registered in the current step cannot be
// reused until the next one (vLLM cached_blocks_this_step): num_blocks_to_allocate then asks for more
// blocks than the pool has, which defers the request.
// prefix_match_unit below B (align only): a step ending exactly at the prompt's last unit boundary
// inside a block registers the running block as a partial tail entry (cache_partial_tail); lookups
// then scan every unit boundary (find_partial_hit), and a hit inside a block is copied on write.
#include <cstdint>
#include <vector>

#include "sim/engine/engine_config.h"
#include "sim/engine/single_type_manager_base.h"

namespace kvsim {

class MambaManager final : public SingleTypeManagerBase {
 public:
  MambaManager(BlockPool& pool, int group_id, int block_size, MambaCacheMode mode, int64_t retention_interval);
  KvGroupKind kind() const override { return KvGroupKind::kState; }
  MambaCacheMode mode() const { return mode_; }

  // Right to left over columns i < max_length / B: the first with a cached hash; returns
  // [null] * i + [state block]. Exactly one state is needed, at the hit boundary.
  void find_longest_cache_hit(std::span<const uint64_t> hashes, int64_t max_length,
                              std::vector<BlockId>& out) const override;
  // Fine-grained (align, partial hash hits): right to left over every unit boundary below max_length,
  // full-block states and partial-tail entries alike; returns [null] * (j / (B / unit)) + [state].
  int64_t find_partial_hit(std::span<const uint64_t> hashes, std::span<const uint64_t> fine, int unit,
                           int64_t max_length, std::vector<BlockId>& out) const override;
  // vLLM MambaManager._cache_partial_tail_block: when a step ends exactly at the prompt's last unit
  // boundary inside a block (the align split's tail stop), the running block holds that state and is
  // registered under its unit hash. The request's next allocation copies it out (copy-on-write into a
  // new block that keeps the entry and is released at once) before the running state moves on.
  int64_t cache_partial_tail(int slot, std::span<const uint64_t> fine, int unit, int64_t prompt_tokens,
                             int64_t num_tokens) override;
  void remove_skipped_blocks(int slot, int64_t num_computed_tokens) override;
  int64_t num_blocks_to_allocate(int slot, int64_t num_tokens, std::span<const BlockId> new_computed,
                                 int64_t total_computed_tokens) const override;
  // MambaSpec.max_memory_usage_bytes / page: align 2, none 1, all unbounded.
  int64_t max_blocks_per_request() const override;
  void allocate_new_blocks(int slot, int64_t num_tokens) override;
  int64_t cache_blocks(int slot, std::span<const uint64_t> hashes, int64_t num_tokens) override;
  // Same, appending the token position of every state registered with a hash to `saved` (if non-null).
  int64_t cache_state_blocks(int slot, std::span<const uint64_t> hashes, int64_t num_tokens,
                             std::vector<int64_t>* saved);
  void free(int slot) override;

  // Retention 0 keeps only these positions (vLLM reachable_block_mask): the replay boundary
  // floor((L-1)/B)*B and the block-floored shared-prefix junction (0: none).
  void set_boundaries(int slot, int64_t replay_boundary, int64_t junction);
  // Starts a new scheduler step: states registered before now become reusable.
  void new_step();

 protected:
  // vLLM's n - 1, never below 0: nothing computed yet skips nothing (-1 // block_size would be a negative
  // block count at block size 1, the default of kind sglang).
  int64_t num_skipped_tokens(int64_t n) const override { return mode_ == MambaCacheMode::kNone || n <= 0 ? 0 : n - 1; }

 private:
  struct Extra {
    int64_t last_state_idx = -1;  // vLLM last_state_block_idx
    bool allocated = false;       // vLLM _allocated_block_reqs
    int64_t replay = 0;
    int64_t junction = 0;
    int64_t last_kept_segment = -1;
    int64_t partial_tail_idx = -1;  // column of a registered partial tail awaiting its copy-out
  };
  Extra& extra(int slot);
  bool keep_state(Extra& x, int64_t pos) const;
  void mark_cached_this_step(BlockId b);

  MambaCacheMode mode_;
  int64_t retention_;
  std::vector<Extra> extra_;
  std::vector<uint8_t> cached_this_step_;  // per block id, grown to the highest id marked
  std::vector<BlockId> marked_;
};

}  // namespace kvsim
