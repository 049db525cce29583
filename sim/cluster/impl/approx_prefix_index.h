#pragma once
// ApproxPrefixIndex: a router's own guess of which block hashes each instance holds (llm-d's
// approximate prefix index, approximateprefix/indexer.go; Dynamo's predicted index with KV events
// off). Hashes are inserted when the router sends a request somewhere, before it runs; the index
// never hears about real evictions: only its per-instance LRU capacity ages entries (golang-lru:
// an insert of a present hash makes it most recent; a full LRU drops its least recent entry).
// Lookups cost O(hashes + holders of those hashes), whatever the number of instances.
#include <cstdint>
#include <span>
#include <vector>

#include "sim/core/flat_map.h"

namespace kvsim {

class ApproxPrefixIndex {
 public:
  // One LRU per instance with the given capacity (entries).
  explicit ApproxPrefixIndex(std::vector<int64_t> capacity);

  // llm-d matchLongestPrefix: walks `hashes` in order and stops at the first one no instance holds;
  // counts[i] = how many of the walked hashes instance i holds (not a strict per-instance prefix).
  void match_longest_prefix(std::span<const uint64_t> hashes, std::vector<int64_t>& counts) const;
  // Strict prefix per instance: counts[i] = leading hashes instance i holds all of.
  void match_strict_prefix(std::span<const uint64_t> hashes, std::vector<int64_t>& counts) const;
  void insert(int instance, std::span<const uint64_t> hashes);
  int64_t size(int instance) const { return lists_[static_cast<size_t>(instance)].size; }
  int num_instances() const { return static_cast<int>(lists_.size()); }

 private:
  struct Node {
    uint64_t hash = 0;
    int32_t instance = 0;
    int32_t prev = -1;         // LRU: towards the most recent
    int32_t next = -1;         // LRU: towards the least recent
    int32_t holder_prev = -1;  // the other instances holding the same hash
    int32_t holder_next = -1;
  };
  struct Lru {
    int64_t capacity = 0;
    int64_t size = 0;
    int32_t head = -1;  // most recent
    int32_t tail = -1;  // least recent
  };
  void unlink(Lru& l, int32_t n);
  void push_front(Lru& l, int32_t n);
  int32_t new_node(uint64_t hash, int instance);
  void remove(int32_t n);

  std::vector<Lru> lists_;
  std::vector<Node> nodes_;
  std::vector<int32_t> free_nodes_;
  FlatMap where_;    // (hash, instance) -> node
  FlatMap holders_;  // (hash, -1) -> first node of the hash's holder list
};

}  // namespace kvsim
