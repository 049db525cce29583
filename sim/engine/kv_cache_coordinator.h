#pragma once
// KvCacheCoordinator: the shared BlockPool and one ISingleTypeManager per KV cache group
// (vllm/v1/core/kv_cache_coordinator.py, plus KVCacheManager.allocate_slots from kv_cache_manager.py).
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "sim/engine/block_pool.h"
#include "sim/engine/engine_config.h"
#include "sim/engine/i_single_type_manager.h"
#include "sim/engine/mamba_manager.h"
#include "sim/engine/sliding_window_manager.h"
#include "sim/model/kv_layout.h"

namespace kvsim {

// A prefix hit: the blocks backing it in every group, and its length in tokens (a block multiple, or
// with partial hash hits a unit multiple: the last block is then partly used and copied on write).
struct CacheHit {
  std::vector<std::vector<BlockId>> blocks;  // per group
  int64_t num_tokens = 0;
  int64_t first_pass_tokens = 0;  // the first group's own match before groups were reconciled
  // Hybrids: the full-attention match (0 without attention); attention_tokens - num_tokens is vLLM's
  // num_uncached_common_prefix_tokens. With partial hybrid hits the attention blocks cover
  // attention_tokens while num_tokens (where computation resumes) is the last saved state.
  int64_t attention_tokens = 0;
  void clear() {
    for (auto& b : blocks) b.clear();
    num_tokens = 0;
    first_pass_tokens = 0;
    attention_tokens = 0;
  }
};

class KvCacheCoordinator {
 public:
  // `max_in_flight_tokens` bounds one request's tokens per step (sliding-window admission cap).
  KvCacheCoordinator(const KvCacheLayout& layout, bool enable_caching, int64_t max_in_flight_tokens,
                     int64_t max_model_len);
  // Hybrids: state groups follow `config` (mamba_cache_mode, retention, partial hybrid hits).
  KvCacheCoordinator(const EngineConfig& config, int64_t max_in_flight_tokens);

  int block_size() const { return block_size_; }
  int num_groups() const { return static_cast<int>(managers_.size()); }
  const ISingleTypeManager& manager(int g) const { return *managers_[static_cast<size_t>(g)]; }
  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }
  bool has_state() const { return !state_managers_.empty(); }
  // Sliding-window groups: their hashes follow the retention interval too (set_state_boundaries).
  bool has_sliding_window() const { return !sliding_managers_.empty(); }
  bool has_attention() const { return has_full_attention_; }
  // Bytes of one request's state in every state group (the pages copied at a checkpoint).
  int64_t state_bytes() const { return state_bytes_; }
  // The group whose registrations describe the prefix history (first full-attention group, else 0).
  int history_group() const { return history_group_; }

  // vLLM HybridKVCacheCoordinator.find_longest_cache_hit: full attention first; each group accepts
  // or shrinks the candidate length until a fixed point; every group's list is cut to the result.
  // With partial hash hits, `fine` holds the request's hashes at every hash_unit() boundary and the
  // hit may end inside a block (at a unit boundary).
  void find_longest_cache_hit(std::span<const uint64_t> hashes, int64_t max_length, CacheHit& out,
                              std::span<const uint64_t> fine = {}) const;
  // vLLM enable_partial_hash_hits: prefix_match_unit below the block size on a hybrid in align mode
  // with prefix caching.
  bool partial_hash_hits() const { return partial_hash_hits_; }
  // The hash granularity in tokens: prefix_match_unit with partial hash hits, else the block size.
  int hash_unit() const { return partial_hash_hits_ ? hash_unit_ : block_size_; }
  // Partial hash hits: registers the prompt's last unit boundary in every group that reached it
  // (attention and state). Appends a state position registered (first state group) to `saved_states`.
  void cache_partial_tails(int slot, std::span<const uint64_t> fine, int64_t prompt_tokens, int64_t num_tokens,
                           std::vector<int64_t>* saved_states = nullptr);

  // vLLM KVCacheManager.allocate_slots for `slot`, which has `num_computed` processed tokens and gets
  // `num_new_tokens` more this step, after a prefix hit `hit` (new requests only; null otherwise).
  // With `full_sequence_tokens` > 0 the blocks for that many tokens must fit too (admission,
  // scheduler_reserve_full_isl; sliding-window groups capped at max_blocks_per_request). `reserve`
  // blocks are kept free (watermark). Returns false, changing nothing but skipped-block removal,
  // when the blocks do not fit: the caller preempts or stops admitting.
  bool allocate_slots(int slot, int64_t num_computed, int64_t num_new_tokens, const CacheHit* hit,
                      int64_t full_sequence_tokens, int64_t reserve);
  // Registers the hashes of full blocks up to `num_tokens` in every group. Returns the first block
  // index newly registered in the history group (blocks [returned, num_tokens / B) are new there).
  // Appends the positions of states registered with a hash (first state group) to `saved_states`.
  // True when cache_blocks(slot, _, num_tokens) and cache_partial_tails would register nothing: a
  // layout without state groups or partial hashes whose full blocks up to num_tokens are registered
  // (most decode steps). Inline, so the scheduler skips the calls.
  bool nothing_to_cache(int slot, int64_t num_tokens) const {
    const auto s = static_cast<size_t>(slot);
    return state_managers_.empty() && !partial_hash_hits_ && s < cached_full_.size() &&
           num_tokens / block_size_ <= cached_full_[s];
  }
  int64_t cache_blocks(int slot, std::span<const uint64_t> hashes, int64_t num_tokens,
                       std::vector<int64_t>* saved_states = nullptr);
  // State groups: which saved states survive retention 0 for this request (MambaManager).
  void set_state_boundaries(int slot, int64_t replay_boundary, int64_t junction);
  // Called at the start of every scheduler step (same-step state reuse hazard).
  void new_step();
  // Frees every group's blocks, tail first.
  void free(int slot);
  int64_t num_held_blocks(int slot) const;
  // The most blocks one request of `num_tokens` tokens holds at once (vLLM max_memory_usage_bytes in
  // blocks): a block per block column in each group, capped at max_blocks_per_request().
  int64_t blocks_for_request(int64_t num_tokens) const;

 private:
  void init(const KvCacheLayout& layout, int64_t max_in_flight_tokens, const EngineConfig* config);

  int block_size_;
  bool enable_caching_;
  bool partial_hybrid_hits_ = false;
  bool partial_hash_hits_ = false;
  int hash_unit_ = 0;
  bool has_full_attention_ = false;
  bool all_full_attention_ = false;  // every group is full attention (no window, no state)
  int64_t state_bytes_ = 0;
  std::vector<MambaManager*> state_managers_;            // non-owning, into managers_
  std::vector<SlidingWindowManager*> sliding_managers_;  // non-owning, into managers_
  int64_t max_model_len_;
  int history_group_ = 0;
  BlockPool pool_;
  std::vector<std::unique_ptr<ISingleTypeManager>> managers_;
  std::vector<int> lookup_order_;  // full attention first (vLLM sorts FA spec groups first)
  mutable std::vector<BlockId> scratch_;
  // Layouts without state groups: per slot, the full blocks registered so far (-1: none since the
  // slot's blocks were last freed), so cache_blocks() skips calls that complete no block.
  std::vector<int64_t> cached_full_;
};

}  // namespace kvsim
