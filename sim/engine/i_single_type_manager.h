#pragma once
// ISingleTypeManager: the block tables of one KV cache group for every request, and the rules of its
// layer kind (vllm/v1/core/single_type_kv_cache_manager.py). Implementations: FullAttentionManager,
// SlidingWindowManager, MambaManager (state groups of hybrids).
//
// Requests are addressed by a dense slot number owned by the scheduler. All blocks come from the
// coordinator's shared BlockPool. None of these calls fails: the coordinator checks the free-block
// count first (num_blocks_to_allocate) so running out surfaces as a return value there.
#include <cstdint>
#include <span>
#include <vector>

#include "sim/engine/block_pool.h"
#include "sim/model/kv_layout.h"

namespace kvsim {

class ISingleTypeManager {
 public:
  virtual ~ISingleTypeManager() = default;
  virtual KvGroupKind kind() const = 0;
  virtual int group_id() const = 0;

  // The longest prefix hit for `hashes`, at most `max_length` tokens, as the blocks backing it
  // (null blocks where the layer kind needs none). Appends to `out` (cleared first); the hit length is
  // out.size() * block_size.
  virtual void find_longest_cache_hit(std::span<const uint64_t> hashes, int64_t max_length,
                                      std::vector<BlockId>& out) const = 0;
  // Partial hash hits (vLLM prefix_match_unit below the block size, hybrids in align mode): `fine`
  // holds the hashes at every `unit` boundary. Returns the hit length in tokens, a multiple of `unit`;
  // `out` holds cdiv(hit, B) blocks, the last one partly used when the hit ends inside a block.
  // Default: the block-granular search above.
  virtual int64_t find_partial_hit(std::span<const uint64_t> hashes, std::span<const uint64_t> fine, int unit,
                                   int64_t max_length, std::vector<BlockId>& out) const = 0;
  // Partial hash hits: registers the prompt's last unit boundary floor(prompt / unit) * unit when it
  // lies inside a block and `num_tokens` reached it (vLLM _cache_partial_tail_block). Returns the
  // position registered, or 0.
  virtual int64_t cache_partial_tail(int slot, std::span<const uint64_t> fine, int unit, int64_t prompt_tokens,
                                     int64_t num_tokens) = 0;
  // Frees blocks no longer needed once `num_computed_tokens` are processed (sliding window, state).
  virtual void remove_skipped_blocks(int slot, int64_t num_computed_tokens) = 0;
  // Blocks to take from the free queue so `slot` holds `num_tokens` tokens, counting hit blocks that
  // are currently free (evictable) as needed. `total_computed_tokens` includes the hit.
  virtual int64_t num_blocks_to_allocate(int slot, int64_t num_tokens, std::span<const BlockId> new_computed,
                                         int64_t total_computed_tokens) const = 0;
  // At most this many blocks are ever needed by one request at once (full-sequence admission check).
  virtual int64_t max_blocks_per_request() const = 0;
  // Adds the hit blocks (touching them) to a request that holds no blocks yet.
  virtual void save_new_computed_blocks(int slot, std::span<const BlockId> new_computed,
                                        int64_t total_computed_tokens) = 0;
  // Appends new blocks so the table covers `num_tokens` tokens.
  virtual void allocate_new_blocks(int slot, int64_t num_tokens) = 0;
  // Registers the hashes of full blocks up to `num_tokens` not registered yet (vLLM cache_blocks).
  // Returns the index of the first newly registered block; blocks [returned, num_tokens / B) are new.
  virtual int64_t cache_blocks(int slot, std::span<const uint64_t> hashes, int64_t num_tokens) = 0;
  // Frees the request's blocks, tail first (vLLM frees reversed(req_blocks)).
  virtual void free(int slot) = 0;
  virtual std::span<const BlockId> blocks(int slot) const = 0;
  // Blocks of `slot` other than the null block.
  virtual int64_t num_held_blocks(int slot) const = 0;
};

}  // namespace kvsim
