#include "sim/engine/single_type_manager_base.h"

#include "sim/core/check.h"

namespace kvsim {
namespace {
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

SingleTypeManagerBase::SingleTypeManagerBase(BlockPool& pool, int group_id, int block_size)
    : pool_(pool), group_id_(group_id), block_size_(block_size) {}

SingleTypeManagerBase::Table& SingleTypeManagerBase::table(int slot) {
  KVSIM_CHECK(slot >= 0, "negative slot");
  if (static_cast<size_t>(slot) >= tables_.size()) tables_.resize(static_cast<size_t>(slot) + 1);
  return tables_[static_cast<size_t>(slot)];
}

const SingleTypeManagerBase::Table* SingleTypeManagerBase::find_table(int slot) const {
  return static_cast<size_t>(slot) < tables_.size() ? &tables_[static_cast<size_t>(slot)] : nullptr;
}

std::span<const BlockId> SingleTypeManagerBase::blocks(int slot) const {
  const Table* t = find_table(slot);
  return t == nullptr ? std::span<const BlockId>() : std::span<const BlockId>(t->blocks);
}

int64_t SingleTypeManagerBase::num_held_blocks(int slot) const {
  const Table* t = find_table(slot);
  if (t == nullptr) return 0;
  int64_t n = 0;
  for (size_t i = static_cast<size_t>(t->first_live); i < t->blocks.size(); ++i) n += t->blocks[i] != kNullBlock;
  return n;
}

void SingleTypeManagerBase::remove_skipped_blocks(int slot, int64_t num_computed_tokens) {
  const int64_t skipped_tokens = num_skipped_tokens(num_computed_tokens);
  if (skipped_tokens <= 0) return;
  Table& t = table(slot);
  const int64_t skipped_blocks = std::min<int64_t>(skipped_tokens / block_size_, std::ssize(t.blocks));
  // vLLM walks right to left from the last skipped block and stops at the first null; the freed list
  // is in that (tail-first) order.
  scratch_.clear();
  for (int64_t i = skipped_blocks - 1; i >= t.first_live; --i) {
    BlockId& b = t.blocks[static_cast<size_t>(i)];
    if (b == kNullBlock) break;
    scratch_.push_back(b);
    b = kNullBlock;
  }
  t.first_live = std::max(t.first_live, skipped_blocks);
  pool_.free_blocks(scratch_);
}

int64_t SingleTypeManagerBase::num_blocks_to_allocate(int slot, int64_t num_tokens,
                                                      std::span<const BlockId> new_computed,
                                                      int64_t total_computed_tokens) const {
  const int64_t required = cdiv(num_tokens, block_size_);
  const Table* t = find_table(slot);
  const int64_t held = t == nullptr ? 0 : std::ssize(t->blocks);
  if (t != nullptr && t->active) return std::max<int64_t>(required - held, 0);
  const int64_t skipped_blocks = num_skipped_tokens(total_computed_tokens) / block_size_;
  const int64_t local_computed = std::ssize(new_computed) + held;
  const int64_t new_blocks = std::max<int64_t>(required - std::max(skipped_blocks, local_computed), 0);
  int64_t evictable = 0;
  for (size_t i = static_cast<size_t>(std::min<int64_t>(skipped_blocks, std::ssize(new_computed)));
       i < new_computed.size(); ++i) {
    const BlockId b = new_computed[i];
    evictable += b != kNullBlock && pool_.ref_cnt(b) == 0;
  }
  // A hit ending inside a block: the shared tail block is copied into a private one (vLLM _apply_cow).
  const bool cow =
      total_computed_tokens % block_size_ != 0 && !new_computed.empty() && new_computed.back() != kNullBlock;
  return new_blocks + evictable + (cow ? 1 : 0);
}

void SingleTypeManagerBase::save_new_computed_blocks(int slot, std::span<const BlockId> new_computed,
                                                     int64_t total_computed_tokens) {
  Table& t = table(slot);
  KVSIM_CHECK(!t.active && t.blocks.empty(), "slot " << slot << " already holds blocks");
  const int64_t skipped_blocks =
      std::min<int64_t>(num_skipped_tokens(total_computed_tokens) / block_size_, std::ssize(new_computed));
  t.blocks.assign(static_cast<size_t>(skipped_blocks), kNullBlock);
  auto live = new_computed.subspan(static_cast<size_t>(skipped_blocks));
  pool_.touch(live);
  t.blocks.insert(t.blocks.end(), live.begin(), live.end());
  t.first_live = skipped_blocks;
  t.num_cached = std::ssize(t.blocks);
  t.active = true;
  if (total_computed_tokens % block_size_ != 0 && !t.blocks.empty() && t.blocks.back() != kNullBlock) {
    // Partial hit: copy-on-write of the tail block. The request writes past the hit inside that block,
    // so it gets a private copy; the shared block is released once copied (at once here).
    const BlockId source = t.blocks.back();
    t.blocks.pop_back();
    pool_.get_new_blocks(1, t.blocks);
    const BlockId released[1] = {source};
    pool_.free_blocks(released);
    t.num_cached = std::ssize(t.blocks) - 1;
  }
}

void SingleTypeManagerBase::allocate_new_blocks(int slot, int64_t num_tokens) {
  Table& t = table(slot);
  t.active = true;
  const int64_t n = cdiv(num_tokens, block_size_) - std::ssize(t.blocks);
  if (n > 0) pool_.get_new_blocks(n, t.blocks);
}

int64_t SingleTypeManagerBase::cache_blocks(int slot, std::span<const uint64_t> hashes, int64_t num_tokens) {
  Table& t = table(slot);
  const int64_t first = t.num_cached;
  const int64_t full = std::min<int64_t>(num_tokens / block_size_, std::ssize(t.blocks));
  if (first >= full) return full;
  KVSIM_CHECK(std::ssize(hashes) >= full, "block hashes missing: have " << hashes.size() << ", need " << full);
  constexpr int64_t kAhead = 4;
  for (int64_t i = first; i < full; ++i) {
    if (i + kAhead < full) {
      const auto a = static_cast<size_t>(i + kAhead);
      pool_.prefetch(t.blocks[a], cache_key(hashes[a], group_id_));
    }
    const BlockId b = t.blocks[static_cast<size_t>(i)];
    if (b == kNullBlock || (masked_ && !keeps_hash(slot, i))) continue;
    // A partial-tail entry on a block that is now full is superseded by the full hash (vLLM
    // cache_full_blocks drops it at promotion).
    pool_.drop_hash(b);
    pool_.cache_block(b, cache_key(hashes[static_cast<size_t>(i)], group_id_));
  }
  t.num_cached = full;
  return first;
}

int64_t SingleTypeManagerBase::find_partial_hit(std::span<const uint64_t> hashes, std::span<const uint64_t>, int,
                                                int64_t max_length, std::vector<BlockId>& out) const {
  find_longest_cache_hit(hashes, max_length, out);
  return std::ssize(out) * block_size_;
}

int64_t SingleTypeManagerBase::cache_partial_tail(int, std::span<const uint64_t>, int, int64_t, int64_t) { return 0; }

int64_t SingleTypeManagerBase::register_partial(int slot, int64_t idx, std::span<const uint64_t> fine, int unit,
                                                int64_t pos) {
  Table& t = table(slot);
  if (idx >= std::ssize(t.blocks)) return 0;
  const BlockId b = t.blocks[static_cast<size_t>(idx)];
  if (b == kNullBlock || pool_.has_hash(b)) return 0;
  KVSIM_CHECK(pos / unit <= std::ssize(fine), "fine hashes missing: have " << fine.size() << ", need " << pos / unit);
  pool_.cache_block(b, cache_key(fine[static_cast<size_t>(pos / unit - 1)], group_id_));
  return pos;
}

void SingleTypeManagerBase::free(int slot) {
  Table& t = table(slot);
  scratch_.assign(t.blocks.rbegin(), t.blocks.rend());
  pool_.free_blocks(scratch_);
  t.blocks.clear();
  t.num_cached = 0;
  t.first_live = 0;
  t.active = false;
}

}  // namespace kvsim
