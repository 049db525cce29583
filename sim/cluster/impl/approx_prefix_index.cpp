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
    const auto it = holders_.find(h);
    if (it == holders_.end() || it->second.empty()) break;
    for (int32_t i : it->second) ++counts[static_cast<size_t>(i)];
  }
}

void ApproxPrefixIndex::match_strict_prefix(std::span<const uint64_t> hashes, std::vector<int64_t>& counts) const {
  counts.assign(lists_.size(), 0);
  // Instances still matching are exactly those whose count equals the number of hashes walked.
  int64_t walked = 0;
  for (uint64_t h : hashes) {
    const auto it = holders_.find(h);
    if (it == holders_.end()) break;
    bool any = false;
    for (int32_t i : it->second) {
      if (counts[static_cast<size_t>(i)] == walked) {
        ++counts[static_cast<size_t>(i)];
        any = true;
      }
    }
    if (!any) break;
    ++walked;
  }
}

int32_t ApproxPrefixIndex::new_node(uint64_t hash) {
  int32_t n;
  if (!free_nodes_.empty()) {
    n = free_nodes_.back();
    free_nodes_.pop_back();
  } else {
    n = static_cast<int32_t>(nodes_.size());
    nodes_.emplace_back();
  }
  nodes_[static_cast<size_t>(n)] = Node{hash, -1, -1};
  return n;
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

void ApproxPrefixIndex::drop_holder(uint64_t hash, int instance) {
  const auto it = holders_.find(hash);
  KVSIM_CHECK(it != holders_.end(), "prefix index: hash without holders");
  auto& v = it->second;
  const auto pos = std::find(v.begin(), v.end(), instance);
  KVSIM_CHECK(pos != v.end(), "prefix index: holder missing");
  *pos = v.back();
  v.pop_back();
  if (v.empty()) holders_.erase(it);
}

void ApproxPrefixIndex::insert(int instance, std::span<const uint64_t> hashes) {
  Lru& l = lists_[static_cast<size_t>(instance)];
  for (uint64_t h : hashes) {
    const auto [it, added] = l.where.try_emplace(h, -1);
    if (!added) {
      unlink(l, it->second);
      push_front(l, it->second);
      continue;
    }
    const int32_t n = new_node(h);
    it->second = n;
    push_front(l, n);
    holders_[h].push_back(instance);
    if (++l.size <= l.capacity) continue;
    const int32_t victim = l.tail;
    const uint64_t vh = nodes_[static_cast<size_t>(victim)].hash;
    unlink(l, victim);
    l.where.erase(vh);
    drop_holder(vh, instance);
    free_nodes_.push_back(victim);
    --l.size;
  }
}

}  // namespace kvsim
