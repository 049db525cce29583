#include "sim/engine/block_pool.h"

#include "sim/core/check.h"
#include "sim/engine/hash_mix.h"

namespace kvsim {

uint64_t cache_key(uint64_t block_hash, int group) {
  return group == 0 ? block_hash : avalanche64(block_hash ^ (static_cast<uint64_t>(group) * kMixP1));
}

BlockHashIndex::BlockHashIndex(int64_t max_entries) {
  int bits = 4;
  while ((int64_t{1} << bits) < 2 * max_entries) ++bits;
  slots_.assign(size_t{1} << bits, Entry{});
  mask_ = slots_.size() - 1;
  shift_ = 64 - bits;
}

BlockHashIndex::Entry* BlockHashIndex::find(uint64_t key) {
  for (size_t i = home(key);; i = (i + 1) & mask_) {
    Entry& e = slots_[i];
    if (e.head == kNoBlock) return nullptr;
    if (e.key == key) return &e;
  }
}

const BlockHashIndex::Entry* BlockHashIndex::find(uint64_t key) const {
  return const_cast<BlockHashIndex*>(this)->find(key);
}

BlockHashIndex::Entry& BlockHashIndex::find_or_insert(uint64_t key) {
  for (size_t i = home(key);; i = (i + 1) & mask_) {
    Entry& e = slots_[i];
    if (e.head == kNoBlock) {
      e.key = key;
      return e;
    }
    if (e.key == key) return e;
  }
}

void BlockHashIndex::erase(Entry* e) {
  size_t i = static_cast<size_t>(e - slots_.data());
  size_t j = i;
  while (true) {
    j = (j + 1) & mask_;
    if (slots_[j].head == kNoBlock) break;
    const size_t k = home(slots_[j].key);
    // Slot j may move back to i unless its home lies cyclically in (i, j].
    const bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (stays) continue;
    slots_[i] = slots_[j];
    i = j;
  }
  slots_[i] = Entry{};
}

BlockPool::BlockPool(int64_t num_blocks, bool enable_caching)
    : enable_caching_(enable_caching), cached_(enable_caching ? num_blocks : 1) {
  KVSIM_CHECK(num_blocks >= 2 && num_blocks < (int64_t{1} << 31), "pool needs 2..2^31 blocks, got " << num_blocks);
  const auto n = static_cast<size_t>(num_blocks);
  sentinel_ = static_cast<BlockId>(num_blocks);
  ref_cnt_.assign(n, 0);
  prev_.assign(n + 1, kNoBlock);
  next_.assign(n + 1, kNoBlock);
  key_.assign(n, 0);
  has_key_.assign(n, 0);
  dup_next_.assign(n, kNoBlock);
  dup_prev_.assign(n, kNoBlock);
  prev_[n] = next_[n] = sentinel_;
  // Block 0 is the null block: never in the queue.
  for (BlockId b = 1; b < sentinel_; ++b) link_before(b, sentinel_);
  num_free_ = num_blocks - 1;
  ref_cnt_[0] = 1;
}

double BlockPool::usage() const {
  return 1.0 - static_cast<double>(num_free_) / static_cast<double>(num_usable_blocks());
}

void BlockPool::unlink(BlockId b) {
  const auto i = static_cast<size_t>(b);
  next_[static_cast<size_t>(prev_[i])] = next_[i];
  prev_[static_cast<size_t>(next_[i])] = prev_[i];
  prev_[i] = next_[i] = kNoBlock;
}

void BlockPool::link_before(BlockId b, BlockId at) {
  const auto i = static_cast<size_t>(b);
  const BlockId p = prev_[static_cast<size_t>(at)];
  prev_[i] = p;
  next_[i] = at;
  next_[static_cast<size_t>(p)] = b;
  prev_[static_cast<size_t>(at)] = b;
}

void BlockPool::evict(BlockId b) {
  const auto i = static_cast<size_t>(b);
  BlockHashIndex::Entry* it = cached_.find(key_[i]);
  KVSIM_CHECK(it != nullptr, "hashed block " << b << " missing from the cached map");
  const BlockId p = dup_prev_[i], n = dup_next_[i];
  if (p == kNoBlock && n == kNoBlock) {
    KVSIM_CHECK(it->head == b, "hashed block " << b << " not in its key's chain");
    cached_.erase(it);
  } else {
    if (p == kNoBlock) {
      it->head = n;
    } else {
      dup_next_[static_cast<size_t>(p)] = n;
    }
    if (n == kNoBlock) {
      it->tail = p;
    } else {
      dup_prev_[static_cast<size_t>(n)] = p;
    }
  }
  dup_next_[i] = dup_prev_[i] = kNoBlock;
  has_key_[i] = 0;
  ++evictions_;
}

void BlockPool::get_new_blocks(int64_t n, std::vector<BlockId>& out) {
  KVSIM_CHECK(n <= num_free_, "asked for " << n << " blocks with " << num_free_ << " free");
  for (int64_t j = 0; j < n; ++j) {
    const BlockId b = next_[static_cast<size_t>(sentinel_)];
    unlink(b);
    const auto i = static_cast<size_t>(b);
    if (has_key_[i]) {
      evict(b);
      --num_cached_free_;
    }
    KVSIM_CHECK(ref_cnt_[i] == 0, "free block " << b << " has ref_cnt " << ref_cnt_[i]);
    ref_cnt_[i] = 1;
    out.push_back(b);
  }
  num_free_ -= n;
}

BlockId BlockPool::get_cached_block(uint64_t key) const {
  auto it = cached_.find(key);
  return it == nullptr ? kNoBlock : it->head;
}

void BlockPool::touch(std::span<const BlockId> blocks) {
  for (BlockId b : blocks) {
    if (b == kNullBlock) continue;
    const auto i = static_cast<size_t>(b);
    if (ref_cnt_[i] == 0) {
      unlink(b);
      --num_free_;
      if (has_key_[i]) --num_cached_free_;
    }
    ++ref_cnt_[i];
  }
}

void BlockPool::free_blocks(std::span<const BlockId> ordered) {
  // vLLM: blocks reaching 0 without a hash are prepended as one list (in freeing order), blocks with
  // a hash are appended in freeing order.
  scratch_.clear();
  for (BlockId b : ordered) {
    if (b == kNullBlock) continue;
    const auto i = static_cast<size_t>(b);
    KVSIM_CHECK(ref_cnt_[i] > 0, "double free of block " << b);
    if (--ref_cnt_[i] != 0) continue;
    ++num_free_;
    if (has_key_[i]) {
      link_before(b, sentinel_);
      ++num_cached_free_;
    } else {
      scratch_.push_back(b);
    }
  }
  const BlockId front = next_[static_cast<size_t>(sentinel_)];
  for (BlockId b : scratch_) link_before(b, front);
}

void BlockPool::cache_block(BlockId b, uint64_t key) {
  if (!enable_caching_ || b == kNullBlock) return;
  const auto i = static_cast<size_t>(b);
  KVSIM_CHECK(!has_key_[i], "block " << b << " cached twice");
  key_[i] = key;
  has_key_[i] = 1;
  BlockHashIndex::Entry& e = cached_.find_or_insert(key);
  if (e.head == kNoBlock) {
    e.head = e.tail = b;
  } else {
    dup_next_[static_cast<size_t>(e.tail)] = b;
    dup_prev_[i] = e.tail;
    e.tail = b;
  }
}

std::vector<BlockId> BlockPool::free_queue() const {
  std::vector<BlockId> out;
  for (BlockId b = next_[static_cast<size_t>(sentinel_)]; b != sentinel_; b = next_[static_cast<size_t>(b)]) {
    out.push_back(b);
  }
  return out;
}

}  // namespace kvsim
