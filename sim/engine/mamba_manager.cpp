#include "sim/engine/mamba_manager.h"

#include <algorithm>

#include "sim/core/check.h"

namespace kvsim {
namespace {
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

const char* mamba_cache_mode_name(MambaCacheMode m) {
  switch (m) {
    case MambaCacheMode::kNone:
      return "none";
    case MambaCacheMode::kAlign:
      return "align";
    case MambaCacheMode::kAll:
      return "all";
  }
  return "?";
}

MambaManager::MambaManager(BlockPool& pool, int group_id, int block_size, MambaCacheMode mode,
                           int64_t retention_interval)
    : SingleTypeManagerBase(pool, group_id, block_size), mode_(mode), retention_(retention_interval) {}

MambaManager::Extra& MambaManager::extra(int slot) {
  if (static_cast<size_t>(slot) >= extra_.size()) extra_.resize(static_cast<size_t>(slot) + 1);
  return extra_[static_cast<size_t>(slot)];
}

void MambaManager::find_longest_cache_hit(std::span<const uint64_t> hashes, int64_t max_length,
                                          std::vector<BlockId>& out) const {
  out.clear();
  if (mode_ == MambaCacheMode::kNone) return;
  const int64_t max_blocks = std::min<int64_t>(max_length / block_size_, std::ssize(hashes));
  for (int64_t i = max_blocks - 1; i >= 0; --i) {
    const BlockId b = pool_.get_cached_block(cache_key(hashes[static_cast<size_t>(i)], group_id_));
    if (b == kNoBlock) continue;
    out.assign(static_cast<size_t>(i), kNullBlock);
    out.push_back(b);
    return;
  }
}

int64_t MambaManager::find_partial_hit(std::span<const uint64_t> hashes, std::span<const uint64_t> fine, int unit,
                                       int64_t max_length, std::vector<BlockId>& out) const {
  if (mode_ != MambaCacheMode::kAlign || fine.empty() || unit >= block_size_)
    return SingleTypeManagerBase::find_partial_hit(hashes, fine, unit, max_length, out);
  out.clear();
  const int64_t per_block = block_size_ / unit;
  for (int64_t j = std::min<int64_t>(max_length / unit, std::ssize(fine)) - 1; j >= 0; --j) {
    const BlockId b = pool_.get_cached_block(cache_key(fine[static_cast<size_t>(j)], group_id_));
    if (b == kNoBlock) continue;
    out.assign(static_cast<size_t>(j / per_block), kNullBlock);
    out.push_back(b);
    return (j + 1) * unit;
  }
  return 0;
}

int64_t MambaManager::cache_partial_tail(int slot, std::span<const uint64_t> fine, int unit, int64_t prompt_tokens,
                                         int64_t num_tokens) {
  if (mode_ != MambaCacheMode::kAlign || unit >= block_size_) return 0;
  if (num_tokens % block_size_ == 0 || num_tokens % unit != 0 || num_tokens != prompt_tokens / unit * unit) return 0;
  const int64_t idx = num_tokens / block_size_;
  const int64_t pos = register_partial(slot, idx, fine, unit, num_tokens);
  if (pos == 0) return 0;
  extra(slot).partial_tail_idx = idx;
  mark_cached_this_step(table(slot).blocks[static_cast<size_t>(idx)]);
  return pos;
}

void MambaManager::mark_cached_this_step(BlockId b) {
  // Grown on demand, like the pool's records: ids up to the blocks handed out.
  if (std::ssize(cached_this_step_) <= b) cached_this_step_.resize(static_cast<size_t>(b) + 1, 0);
  if (cached_this_step_[static_cast<size_t>(b)] != 0) return;
  cached_this_step_[static_cast<size_t>(b)] = 1;
  marked_.push_back(b);
}

void MambaManager::remove_skipped_blocks(int slot, int64_t num_computed_tokens) {
  if (mode_ == MambaCacheMode::kNone) return;
  SingleTypeManagerBase::remove_skipped_blocks(slot, num_computed_tokens);
  if (mode_ != MambaCacheMode::kAlign) return;
  // The block allocated two steps ago: its state was copied into last step's block.
  Extra& x = extra(slot);
  if (x.last_state_idx < 0 || x.last_state_idx >= cdiv(num_computed_tokens, block_size_) - 1) return;
  Table& t = table(slot);
  if (x.last_state_idx >= std::ssize(t.blocks)) return;
  BlockId& b = t.blocks[static_cast<size_t>(x.last_state_idx)];
  if (b == kNullBlock) return;
  const BlockId freed[1] = {b};
  b = kNullBlock;
  pool_.free_blocks(freed);
}

int64_t MambaManager::num_blocks_to_allocate(int slot, int64_t num_tokens, std::span<const BlockId> new_computed,
                                             int64_t total_computed_tokens) const {
  const Table* t = find_table(slot);
  const bool active = t != nullptr && t->active;
  if (mode_ == MambaCacheMode::kNone) return active ? 0 : 1;
  int64_t evictable = 0;
  for (BlockId b : new_computed) {
    if (b == kNullBlock) continue;
    // vLLM: a state cached by another request in this step is not reusable yet; asking for more
    // blocks than exist defers the request to the next step.
    if (b < std::ssize(cached_this_step_) && cached_this_step_[static_cast<size_t>(b)] != 0)
      return pool_.num_blocks() + 1;
    evictable += pool_.ref_cnt(b) == 0;
  }
  if (mode_ == MambaCacheMode::kAll)
    return SingleTypeManagerBase::num_blocks_to_allocate(slot, num_tokens, new_computed, total_computed_tokens);
  const int64_t held = t == nullptr ? 0 : std::ssize(t->blocks);
  const int64_t missing = cdiv(num_tokens, block_size_) - std::ssize(new_computed) - held;
  // A partial hit (copy-on-write of the hit state) or a partial tail of this request awaiting its
  // copy-out needs one more block; vLLM then asks for 1 + 1 whatever `missing` is.
  const bool partial_hit =
      total_computed_tokens % block_size_ != 0 && !new_computed.empty() && new_computed.back() != kNullBlock;
  const bool pending =
      active && static_cast<size_t>(slot) < extra_.size() && extra_[static_cast<size_t>(slot)].partial_tail_idx >= 0;
  if (partial_hit || pending) return 2 + evictable;
  // Old request: at most one more block; first prefill: one block for the running state.
  return (missing > 0 ? 1 : 0) + evictable;
}

int64_t MambaManager::max_blocks_per_request() const {
  switch (mode_) {
    case MambaCacheMode::kNone:
      return 1;
    case MambaCacheMode::kAlign:
      return 2;
    case MambaCacheMode::kAll:
      break;
  }
  return INT64_MAX;
}

void MambaManager::allocate_new_blocks(int slot, int64_t num_tokens) {
  Table& t = table(slot);
  if (mode_ == MambaCacheMode::kNone) {
    t.active = true;
    if (t.blocks.empty()) pool_.get_new_blocks(1, t.blocks);
    return;
  }
  if (mode_ == MambaCacheMode::kAll) {
    SingleTypeManagerBase::allocate_new_blocks(slot, num_tokens);
    return;
  }
  Extra& x = extra(slot);
  t.active = true;
  if (x.partial_tail_idx >= 0) {
    // Copy-out of this request's partial tail state (vLLM: the entry moves to cow_block, the worker
    // copies the state there before this step overwrites the running block; cow_block is released
    // after the copy, here at once, and stays cached).
    const BlockId source = t.blocks[static_cast<size_t>(x.partial_tail_idx)];
    x.partial_tail_idx = -1;
    scratch_.clear();
    if (source != kNullBlock && pool_.has_hash(source)) {
      pool_.get_new_blocks(1, scratch_);
      const BlockId cow = scratch_[0];
      pool_.move_hash(source, cow);
      mark_cached_this_step(cow);
      pool_.free_blocks(scratch_);
    }
  }
  const int64_t required = cdiv(num_tokens, block_size_);
  const int64_t prev = std::ssize(t.blocks);
  if (required <= prev) return;
  // vLLM: the running state sits in the last column; on a hit the last column holds the hit state.
  if (prev > 0) x.last_state_idx = prev - 1;
  if (prev < required - 1) t.blocks.resize(static_cast<size_t>(required - 1), kNullBlock);
  pool_.get_new_blocks(required - std::ssize(t.blocks), t.blocks);
  x.allocated = true;
}

bool MambaManager::keep_state(Extra& x, int64_t pos) const {
  if (mode_ != MambaCacheMode::kAlign || retention_ == kRetentionDense) return true;
  if (pos == x.replay || (x.junction > 0 && pos == x.junction)) return true;
  if (retention_ > 0 && pos / retention_ > x.last_kept_segment) {
    x.last_kept_segment = pos / retention_;
    return true;
  }
  return false;
}

int64_t MambaManager::cache_blocks(int slot, std::span<const uint64_t> hashes, int64_t num_tokens) {
  return cache_state_blocks(slot, hashes, num_tokens, nullptr);
}

int64_t MambaManager::cache_state_blocks(int slot, std::span<const uint64_t> hashes, int64_t num_tokens,
                                         std::vector<int64_t>* saved) {
  if (mode_ == MambaCacheMode::kNone) return num_tokens / block_size_;
  Table& t = table(slot);
  Extra& x = extra(slot);
  const int64_t first = t.num_cached;
  const int64_t full = std::min<int64_t>(num_tokens / block_size_, std::ssize(t.blocks));
  if (first >= full) return full;
  KVSIM_CHECK(std::ssize(hashes) >= full, "block hashes missing: have " << hashes.size() << ", need " << full);
  for (int64_t i = first; i < full; ++i) {
    const BlockId b = t.blocks[static_cast<size_t>(i)];
    if (b == kNullBlock || pool_.has_hash(b)) continue;
    const int64_t pos = (i + 1) * block_size_;
    // Not kept: the block stays unhashed and is prepended to the free queue when freed.
    if (!keep_state(x, pos)) continue;
    pool_.cache_block(b, cache_key(hashes[static_cast<size_t>(i)], group_id_));
    mark_cached_this_step(b);
    if (saved != nullptr) saved->push_back(pos);
  }
  t.num_cached = full;
  return first;
}

void MambaManager::free(int slot) {
  SingleTypeManagerBase::free(slot);
  extra(slot) = Extra{};
}

void MambaManager::set_boundaries(int slot, int64_t replay_boundary, int64_t junction) {
  Extra& x = extra(slot);
  x.replay = replay_boundary;
  x.junction = junction;
}

void MambaManager::new_step() {
  for (BlockId b : marked_) cached_this_step_[static_cast<size_t>(b)] = 0;
  marked_.clear();
}

}  // namespace kvsim
