#include "sim/cluster/impl/approx_prefix_index.h"

#include <algorithm>

#include "sim/core/check.h"

namespace kvsim {

ApproxPrefixIndex::ApproxPrefixIndex(std::vector<int64_t> capacity) {
  lists_.resize(capacity.size());
  for (size_t i = 0; i < capacity.size(); ++i) {
    KVSIM_CHECK(capacity[i] >= 1, "prefix index capacity must be >= 1");
    lists_[i].capacity = capacity[i];
  }
}

void ApproxPrefixIndex::match_longest_prefix(std::span<const uint64_t> hashes, std::vector<int64_t>& counts) const {
  counts.assign(lists_.size(), 0);
  for (uint64_t h : hashes) {
    int32_t n = holders_.find(h, -1);
    if (n == FlatMap::kAbsent) break;
    for (; n >= 0; n = nodes_[static_cast<size_t>(n)].holder_next)
      ++counts[static_cast<size_t>(nodes_[static_cast<size_t>(n)].instance)];
  }
}

void ApproxPrefixIndex::match_strict_prefix(std::span<const uint64_t> hashes, std::vector<int64_t>& counts) const {
  counts.assign(lists_.size(), 0);
  // Instances still matching are exactly those whose count equals the number of hashes walked.
  int64_t walked = 0;
  for (uint64_t h : hashes) {
    bool any = false;
    for (int32_t n = holders_.find(h, -1); n >= 0; n = nodes_[static_cast<size_t>(n)].holder_next) {
      int64_t& c = counts[static_cast<size_t>(nodes_[static_cast<size_t>(n)].instance)];
      if (c == walked) {
        ++c;
        any = true;
      }
    }
    if (!any) break;
    ++walked;
  }
}

int32_t ApproxPrefixIndex::new_node(uint64_t hash, int instance) {
  int32_t n;
  if (!free_nodes_.empty()) {
    n = free_nodes_.back();
    free_nodes_.pop_back();
  } else {
    n = static_cast<int32_t>(nodes_.size());
    nodes_.emplace_back();
  }
  Node& x = nodes_[static_cast<size_t>(n)];
  x = Node{};
  x.hash = hash;
  x.instance = instance;
  // Prepend to the hash's holder list.
  const int32_t first = holders_.find(hash, -1);
  x.holder_next = first;
  if (first >= 0) nodes_[static_cast<size_t>(first)].holder_prev = n;
  holders_.put(hash, -1, n);
  where_.put(hash, instance, n);
  return n;
}

void ApproxPrefixIndex::remove(int32_t n) {
  const Node x = nodes_[static_cast<size_t>(n)];
  if (x.holder_prev >= 0) {
    nodes_[static_cast<size_t>(x.holder_prev)].holder_next = x.holder_next;
  } else if (x.holder_next >= 0) {
    holders_.put(x.hash, -1, x.holder_next);
  } else {
    holders_.erase(x.hash, -1);
  }
  if (x.holder_next >= 0) nodes_[static_cast<size_t>(x.holder_next)].holder_prev = x.holder_prev;
  where_.erase(x.hash, x.instance);
  free_nodes_.push_back(n);
}

void ApproxPrefixIndex::unlink(Lru& l, int32_t n) {
  Node& x = nodes_[static_cast<size_t>(n)];
  if (x.prev >= 0) nodes_[static_cast<size_t>(x.prev)].next = x.next;
  if (x.next >= 0) nodes_[static_cast<size_t>(x.next)].prev = x.prev;
  if (l.head == n) l.head = x.next;
  if (l.tail == n) l.tail = x.prev;
  x.prev = x.next = -1;
}

void ApproxPrefixIndex::push_front(Lru& l, int32_t n) {
  Node& x = nodes_[static_cast<size_t>(n)];
  x.prev = -1;
  x.next = l.head;
  if (l.head >= 0) nodes_[static_cast<size_t>(l.head)].prev = n;
  l.head = n;
  if (l.tail < 0) l.tail = n;
}

void ApproxPrefixIndex::insert(int instance, std::span<const uint64_t> hashes) {
  Lru& l = lists_[static_cast<size_t>(instance)];
  for (uint64_t h : hashes) {
    const int32_t found = where_.find(h, instance);
    if (found != FlatMap::kAbsent) {
      unlink(l, found);
      push_front(l, found);
      continue;
    }
    push_front(l, new_node(h, instance));
    if (++l.size <= l.capacity) continue;
    const int32_t victim = l.tail;
    unlink(l, victim);
    remove(victim);
    --l.size;
  }
}

}  // namespace kvsim
