#pragma once
// BlockPool and its free queue, as vLLM v1 (vllm/v1/core/block_pool.py, FreeKVCacheBlockQueue in
// vllm/v1/core/kv_cache_utils.py, free-list order after PR #43447):
//  - blocks 0..N-1; block 0 is the null block, never allocated or freed, so N-1 blocks are usable;
//  - the free queue is a doubly linked list (index-based, O(1) removal), initially ordered by id;
//  - get_new_blocks(n) pops from the front, evicting a popped block's hash from the prefix cache;
//  - touch() takes ref_cnt == 0 blocks out of the free queue (a prefix hit) and increments ref_cnt;
//  - free_blocks() decrements; blocks reaching 0 without a hash are prepended (reused first), blocks
//    with a hash are appended (evicted LRU, by time of freeing).
// Memory follows the blocks ever handed out, not the pool: blocks never used yet (ids fresh_ .. N-1, in
// id order) are not materialised. They sit as one run where a marker node stands in the queue (the
// initial queue is that run alone; prepended blocks go before it, appended ones after it), so the
// order is vLLM's. A 32-million-page SGLang pool (page size 1 on a B200) costs what its used pages do.
// The cached map is keyed by (block hash, group id) folded into 64 bits; it is used for lookup only,
// never iterated. One key may map to several blocks (no dedup, BlockHashToBlockMap); lookup returns
// the earliest registered.
#include <climits>
#include <cstdint>
#include <span>
#include <vector>

namespace kvsim {

using BlockId = int32_t;
inline constexpr BlockId kNullBlock = 0;
inline constexpr BlockId kNoBlock = -1;

// The prefix-cache key of a block hash in one KV cache group (vLLM: hash + 4-byte group id).
uint64_t cache_key(uint64_t block_hash, int group);

// Open-addressing (linear probing, backward-shift deletion) map from cache key to the chain of blocks
// holding it. It doubles when an insert would take it past half full, so it is at most half full as
// before (when it was sized for every block at once); lookup only, never iterated, so the layout
// changes nothing. Entry pointers are valid until the next insert.
class BlockHashIndex {
 public:
  struct Entry {
    uint64_t key = 0;
    BlockId head = kNoBlock;  // kNoBlock: empty slot
    BlockId tail = kNoBlock;
  };
  explicit BlockHashIndex(int64_t initial_entries);
  Entry* find(uint64_t key);
  const Entry* find(uint64_t key) const;
  // The entry for `key`, created empty (head == kNoBlock) if absent.
  Entry& find_or_insert(uint64_t key);
  void erase(Entry* e);
  // Hint: the slot where `key` is looked up first will be read soon.
  void prefetch(uint64_t key) const { __builtin_prefetch(&slots_[home(key)], 1); }

 private:
  size_t home(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_); }
  void resize(int bits);
  std::vector<Entry> slots_;
  size_t mask_ = 0;
  int shift_ = 0;
  int64_t size_ = 0;
};

class BlockPool {
 public:
  BlockPool(int64_t num_blocks, bool enable_caching);

  int64_t num_blocks() const { return num_blocks_; }
  int64_t num_usable_blocks() const { return num_blocks() - 1; }
  // Blocks in the free queue (free or evictable cached).
  int64_t num_free_blocks() const { return num_free_; }
  int64_t num_used_blocks() const { return num_usable_blocks() - num_free_; }
  // Free blocks that still hold a hash (evictable prefix cache).
  int64_t num_cached_free_blocks() const { return num_cached_free_; }
  // Blocks that hold a hash, free or in use: what a KV-event-fed router index holds for this instance
  // (vLLM emits BlockStored / BlockRemoved as hashes are registered and evicted).
  int64_t num_hashed_blocks() const { return num_hashed_; }
  double usage() const;  // vLLM get_usage(): 1 - free / (N - 1)
  int64_t evictions() const { return evictions_; }

  // Appends n blocks popped from the front of the free queue to `out`, each with ref_cnt 1.
  // Requires n <= num_free_blocks() (callers check first; running out is the preemption path).
  void get_new_blocks(int64_t n, std::vector<BlockId>& out);
  // KV offload store fence (rule 24): while set, every block get_new_blocks hands out is also appended to
  // `log` (not owned; the caller clears it). nullptr (the default): no log.
  void set_allocation_log(std::vector<BlockId>* log) { allocation_log_ = log; }
  // The block cached under `key`, or kNoBlock.
  BlockId get_cached_block(uint64_t key) const;
  void touch(std::span<const BlockId> blocks);
  // Frees in the given order (callers pass a request's blocks tail first). Null blocks are skipped.
  void free_blocks(std::span<const BlockId> ordered);
  // Registers a full block under `key` (vLLM cache_full_blocks). The block must hold no hash yet.
  void cache_block(BlockId b, uint64_t key);
  // Hint: cache_block(b, key) or a lookup of `key` follows soon (the pool and its index are larger
  // than the cache; callers walking many blocks prefetch a few ahead so the misses overlap).
  void prefetch(BlockId b, uint64_t key) const {
    if (b < fresh_) {
      __builtin_prefetch(&meta_[static_cast<size_t>(b)], 1);
      __builtin_prefetch(&links_[node(b)], 1);
    }
    cached_.prefetch(key);
  }
  // Removes a held block's hash from the prefix cache, if any (a partial-tail entry superseded when
  // the block fills; not an eviction).
  void drop_hash(BlockId b);
  // Moves the hash of held block `from` to held block `to` (which must hold none): vLLM
  // move_block_hashes, used when a partial-tail state is copied out of a running block.
  void move_hash(BlockId from, BlockId to);

  int32_t ref_cnt(BlockId b) const { return b < fresh_ ? meta_[static_cast<size_t>(b)].ref_cnt : 0; }
  bool has_hash(BlockId b) const { return b < fresh_ && meta_[static_cast<size_t>(b)].has_key != 0; }
  bool in_free_queue(BlockId b) const { return b >= fresh_ || links_[node(b)].prev != kNotQueued; }
  // Blocks handed out at least once (ids 1 .. this - 1); the per-block records kept.
  int64_t num_materialised_blocks() const { return fresh_ - 1; }
  // Free queue from front to back (tests; O(N), the never-used run written out).
  std::vector<BlockId> free_queue() const;
  // The free queue without the never-used run (invariant checks; O(blocks handed out)); the run holds
  // num_blocks() - 1 - num_materialised_blocks() more.
  std::vector<BlockId> linked_free_blocks() const;

 private:
  // Queue nodes: the sentinel (id 0: the null block, never queued, lends it its links), the marker of
  // the never-used run (id -1), blocks 1 .. fresh_ - 1. links_ is indexed by id + 1.
  static constexpr BlockId kSentinel = 0;
  static constexpr BlockId kMarker = -1;
  static constexpr BlockId kNotQueued = INT32_MIN;  // Link::prev of a node outside the queue
  static size_t node(BlockId b) { return static_cast<size_t>(b + 1); }
  void unlink(BlockId b);
  void link_before(BlockId b, BlockId at);
  void evict(BlockId b);
  void unindex(BlockId b);
  // Materialises the never-used blocks up to id `end` (exclusive): records for them, outside the queue.
  void materialise(BlockId end);

  bool enable_caching_;
  // Per-block state: the pool is memory-bound. The free-queue links sit in an array of their own (8 B a
  // block, cache-resident for any realistic pool), so walking the queue to pop n blocks does not miss
  // on every block; the rest of a block's state is one 24-byte record.
  struct Link {
    BlockId prev = kNotQueued;
    BlockId next = kNotQueued;
  };
  struct Meta {
    uint64_t key = 0;  // cache key, valid when has_key
    int32_t ref_cnt = 0;
    BlockId dup_prev = kNoBlock;  // blocks sharing a key, in registration order
    BlockId dup_next = kNoBlock;
    uint8_t has_key = 0;
  };
  int64_t num_blocks_;
  BlockId fresh_ = 1;            // blocks fresh_ .. N - 1 were never handed out
  std::vector<Link> links_;      // fresh_ + 1 entries: the marker, the sentinel, blocks 1 .. fresh_ - 1
  std::vector<Meta> meta_;       // fresh_ entries, by block id
  std::vector<BlockId> popped_;  // scratch of get_new_blocks
  BlockHashIndex cached_;
  std::vector<BlockId> scratch_;
  int64_t num_free_ = 0;
  int64_t num_cached_free_ = 0;
  int64_t num_hashed_ = 0;
  int64_t evictions_ = 0;
  std::vector<BlockId>* allocation_log_ = nullptr;
};

}  // namespace kvsim
