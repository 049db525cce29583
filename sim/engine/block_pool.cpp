#include "sim/engine/block_pool.h"

#include <algorithm>

#include "sim/core/check.h"
#include "sim/engine/hash_mix.h"

namespace kvsim {

uint64_t cache_key(uint64_t block_hash, int group) {
  return group == 0 ? block_hash : avalanche64(block_hash ^ (static_cast<uint64_t>(group) * kMixP1));
}

BlockHashIndex::BlockHashIndex(int64_t initial_entries) {
  int bits = 4;
  while ((int64_t{1} << bits) < 2 * initial_entries) ++bits;
  slots_.assign(size_t{1} << bits, Entry{});
  mask_ = slots_.size() - 1;
  shift_ = 64 - bits;
}

void BlockHashIndex::resize(int bits) {
  std::vector<Entry> old(size_t{1} << bits, Entry{});
  old.swap(slots_);
  mask_ = slots_.size() - 1;
  shift_ = 64 - bits;
  for (const Entry& e : old) {
    if (e.head == kNoBlock) continue;
    size_t i = home(e.key);
    while (slots_[i].head != kNoBlock) i = (i + 1) & mask_;
    slots_[i] = e;
  }
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
  if (2 * (size_ + 1) > std::ssize(slots_)) resize(64 - shift_ + 1);  // at most half full
  for (size_t i = home(key);; i = (i + 1) & mask_) {
    Entry& e = slots_[i];
    if (e.head == kNoBlock) {
      e.key = key;
      ++size_;
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
  --size_;
}

// The index starts small and doubles as blocks are hashed (at most as many entries as handed-out blocks).
constexpr int64_t kInitialIndexEntries = 1024;

BlockPool::BlockPool(int64_t num_blocks, bool enable_caching)
    : enable_caching_(enable_caching), cached_(enable_caching ? std::min(num_blocks, kInitialIndexEntries) : 1) {
  KVSIM_CHECK(num_blocks >= 2 && num_blocks < (int64_t{1} << 31), "pool needs 2..2^31 - 1 blocks, got " << num_blocks);
  num_blocks_ = num_blocks;
  // Block 0 is the null block: never in the queue (its node is the sentinel). The queue starts as the
  // never-used run 1 .. N - 1 alone.
  meta_.assign(1, Meta{});
  meta_[0].ref_cnt = 1;
  links_.assign(2, Link{});
  links_[node(kSentinel)].prev = links_[node(kSentinel)].next = kSentinel;
  link_before(kMarker, kSentinel);
  num_free_ = num_blocks - 1;
}

void BlockPool::materialise(BlockId end) {
  if (end <= fresh_) return;
  meta_.resize(static_cast<size_t>(end), Meta{});
  links_.resize(node(end), Link{});
  fresh_ = end;
}

double BlockPool::usage() const {
  return 1.0 - static_cast<double>(num_free_) / static_cast<double>(num_usable_blocks());
}

void BlockPool::unlink(BlockId b) {
  const size_t i = node(b);
  links_[node(links_[i].prev)].next = links_[i].next;
  links_[node(links_[i].next)].prev = links_[i].prev;
  links_[i].prev = links_[i].next = kNotQueued;
}

void BlockPool::link_before(BlockId b, BlockId at) {
  const size_t i = node(b);
  const BlockId p = links_[node(at)].prev;
  links_[i].prev = p;
  links_[i].next = at;
  links_[node(p)].next = b;
  links_[node(at)].prev = b;
}

void BlockPool::unindex(BlockId b) {
  const auto i = static_cast<size_t>(b);
  BlockHashIndex::Entry* it = cached_.find(meta_[i].key);
  KVSIM_CHECK(it != nullptr, "hashed block " << b << " missing from the cached map");
  const BlockId p = meta_[i].dup_prev, n = meta_[i].dup_next;
  if (p == kNoBlock && n == kNoBlock) {
    KVSIM_CHECK(it->head == b, "hashed block " << b << " not in its key's chain");
    cached_.erase(it);
  } else {
    if (p == kNoBlock) {
      it->head = n;
    } else {
      meta_[static_cast<size_t>(p)].dup_next = n;
    }
    if (n == kNoBlock) {
      it->tail = p;
    } else {
      meta_[static_cast<size_t>(n)].dup_prev = p;
    }
  }
  meta_[i].dup_next = meta_[i].dup_prev = kNoBlock;
  meta_[i].has_key = 0;
  --num_hashed_;
}

void BlockPool::evict(BlockId b) {
  unindex(b);
  ++evictions_;
}

void BlockPool::drop_hash(BlockId b) {
  const auto i = static_cast<size_t>(b);
  KVSIM_CHECK(meta_[i].ref_cnt > 0, "drop_hash on free block " << b);
  if (meta_[i].has_key) unindex(b);
}

void BlockPool::move_hash(BlockId from, BlockId to) {
  const auto i = static_cast<size_t>(from);
  KVSIM_CHECK(meta_[i].ref_cnt > 0 && meta_[static_cast<size_t>(to)].ref_cnt > 0, "move_hash between free blocks");
  if (!meta_[i].has_key) return;
  const uint64_t key = meta_[i].key;
  unindex(from);
  cache_block(to, key);
}

void BlockPool::get_new_blocks(int64_t n, std::vector<BlockId>& out) {
  KVSIM_CHECK(n <= num_free_, "asked for " << n << " blocks with " << num_free_ << " free");
  // Two passes: the first walks the queue's links (a compact array) and prefetches each block's
  // record; the second pops the same blocks in the same order, prefetching the index slot of the hash
  // of the block a few places ahead, so the misses on records and on the index overlap.
  // At the marker the never-used run gives its next ids, in order, until it runs out.
  popped_.clear();
  const BlockId first_new = fresh_;
  BlockId end = fresh_;  // past the never-used blocks this call takes
  for (BlockId b = links_[node(kSentinel)].next; std::ssize(popped_) < n; b = links_[node(b)].next) {
    if (b == kMarker) {
      const int64_t take = std::min<int64_t>(n - std::ssize(popped_), num_blocks_ - fresh_);
      for (int64_t k = 0; k < take; ++k) popped_.push_back(static_cast<BlockId>(fresh_ + k));
      end = static_cast<BlockId>(fresh_ + take);
      continue;
    }
    __builtin_prefetch(&meta_[static_cast<size_t>(b)], 1);
    popped_.push_back(b);
  }
  materialise(end);
  constexpr int64_t kAhead = 4;
  for (int64_t j = 0; j < n; ++j) {
    if (enable_caching_ && j + kAhead < n) {
      const Meta& a = meta_[static_cast<size_t>(popped_[static_cast<size_t>(j + kAhead)])];
      if (a.has_key) cached_.prefetch(a.key);
    }
    const BlockId b = popped_[static_cast<size_t>(j)];
    if (b < first_new) unlink(b);  // a never-used block was in the run, not linked
    const auto i = static_cast<size_t>(b);
    if (meta_[i].has_key) {
      evict(b);
      --num_cached_free_;
    }
    KVSIM_CHECK(meta_[i].ref_cnt == 0, "free block " << b << " has ref_cnt " << meta_[i].ref_cnt);
    meta_[i].ref_cnt = 1;
    out.push_back(b);
    if (allocation_log_ != nullptr) allocation_log_->push_back(b);
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
    if (meta_[i].ref_cnt == 0) {
      unlink(b);
      --num_free_;
      if (meta_[i].has_key) --num_cached_free_;
    }
    ++meta_[i].ref_cnt;
  }
}

void BlockPool::free_blocks(std::span<const BlockId> ordered) {
  // vLLM: blocks reaching 0 without a hash are prepended as one list (in freeing order), blocks with
  // a hash are appended in freeing order.
  scratch_.clear();
  constexpr size_t kAhead = 8;
  for (size_t k = 0; k < ordered.size(); ++k) {
    if (k + kAhead < ordered.size()) __builtin_prefetch(&meta_[static_cast<size_t>(ordered[k + kAhead])], 1);
    const BlockId b = ordered[k];
    if (b == kNullBlock) continue;
    const auto i = static_cast<size_t>(b);
    KVSIM_CHECK(meta_[i].ref_cnt > 0, "double free of block " << b);
    if (--meta_[i].ref_cnt != 0) continue;
    ++num_free_;
    if (meta_[i].has_key) {
      link_before(b, kSentinel);
      ++num_cached_free_;
    } else {
      scratch_.push_back(b);
    }
  }
  const BlockId front = links_[node(kSentinel)].next;  // the marker, while it leads: before the run
  for (BlockId b : scratch_) link_before(b, front);
}

void BlockPool::cache_block(BlockId b, uint64_t key) {
  if (!enable_caching_ || b == kNullBlock) return;
  const auto i = static_cast<size_t>(b);
  KVSIM_CHECK(!meta_[i].has_key, "block " << b << " cached twice");
  meta_[i].key = key;
  meta_[i].has_key = 1;
  ++num_hashed_;
  BlockHashIndex::Entry& e = cached_.find_or_insert(key);
  if (e.head == kNoBlock) {
    e.head = e.tail = b;
  } else {
    meta_[static_cast<size_t>(e.tail)].dup_next = b;
    meta_[i].dup_prev = e.tail;
    e.tail = b;
  }
}

std::vector<BlockId> BlockPool::linked_free_blocks() const {
  std::vector<BlockId> out;
  for (BlockId b = links_[node(kSentinel)].next; b != kSentinel; b = links_[node(b)].next)
    if (b != kMarker) out.push_back(b);
  return out;
}

std::vector<BlockId> BlockPool::free_queue() const {
  std::vector<BlockId> out;
  for (BlockId b = links_[node(kSentinel)].next; b != kSentinel; b = links_[node(b)].next) {
    if (b == kMarker) {
      for (int64_t f = fresh_; f < num_blocks_; ++f) out.push_back(static_cast<BlockId>(f));
    } else {
      out.push_back(b);
    }
  }
  return out;
}

}  // namespace kvsim
