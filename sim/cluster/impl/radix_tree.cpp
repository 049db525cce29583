#include "sim/cluster/impl/radix_tree.h"

#include <algorithm>
#include <queue>
#include <tuple>

#include "sim/core/check.h"

namespace kvsim {

RadixTree::RadixTree(int num_tenants) : sizes_(static_cast<size_t>(num_tenants), 0) { nodes_.emplace_back(); }

int RadixTree::new_node() {
  if (!free_.empty()) {
    const int n = free_.back();
    free_.pop_back();
    nodes_[static_cast<size_t>(n)] = Node{};
    return n;
  }
  nodes_.emplace_back();
  return static_cast<int>(nodes_.size() - 1);
}

int64_t RadixTree::common(const Node& n, const std::vector<TokenPiece>& prompt, size_t& p, int64_t& q) const {
  int64_t matched = 0;
  size_t lp = 0;
  int64_t lq = 0;
  while (lp < n.label.size() && p < prompt.size()) {
    const TokenPiece& a = n.label[lp];
    const TokenPiece& b = prompt[p];
    if (a.content_id != b.content_id || a.offset + lq != b.offset + q) break;
    const int64_t take = std::min(a.length - lq, b.length - q);
    matched += take;
    lq += take;
    q += take;
    if (lq == a.length) {
      ++lp;
      lq = 0;
    }
    if (q == b.length) {
      ++p;
      q = 0;
    }
  }
  return matched;
}

RadixTree::Match RadixTree::match(const std::vector<TokenPiece>& prompt) const {
  Match m;
  int cur = 0;
  size_t p = 0;
  int64_t q = 0;
  while (p < prompt.size()) {
    const Node& node = nodes_[static_cast<size_t>(cur)];
    const auto it = node.children.find({prompt[p].content_id, prompt[p].offset + q});
    if (it == node.children.end()) break;
    const Node& child = nodes_[static_cast<size_t>(it->second)];
    const int64_t c = common(child, prompt, p, q);
    m.tokens += c;
    cur = it->second;
    if (c < child.length) break;
  }
  if (cur != 0) {
    int64_t latest = INT64_MIN;
    for (const auto& [tenant, at] : nodes_[static_cast<size_t>(cur)].tenants) {
      if (at > latest) {
        latest = at;
        m.tenant = tenant;
      }
    }
  }
  return m;
}

int RadixTree::split(int n, int64_t at) {
  const int mid = new_node();
  Node& child = nodes_[static_cast<size_t>(n)];
  Node& top = nodes_[static_cast<size_t>(mid)];
  // Cut the label after `at` tokens.
  int64_t left = at;
  size_t k = 0;
  while (left > 0) {
    TokenPiece piece = child.label[k];
    if (piece.length <= left) {
      top.label.push_back(piece);
      left -= piece.length;
      ++k;
      continue;
    }
    top.label.push_back({piece.content_id, piece.offset, left});
    child.label[k] = {piece.content_id, piece.offset + left, piece.length - left};
    left = 0;
  }
  child.label.erase(child.label.begin(), child.label.begin() + static_cast<std::ptrdiff_t>(k));
  top.length = at;
  child.length -= at;
  top.tenants = child.tenants;  // sizes unchanged: the tokens just moved between two nodes
  top.parent = child.parent;
  Node& parent = nodes_[static_cast<size_t>(child.parent)];
  const Key old_key{top.label[0].content_id, top.label[0].offset};
  parent.children[old_key] = mid;
  child.parent = mid;
  top.children[{child.label[0].content_id, child.label[0].offset}] = n;
  return mid;
}

void RadixTree::insert(const std::vector<TokenPiece>& prompt, int tenant, int64_t now) {
  int cur = 0;
  size_t p = 0;
  int64_t q = 0;
  const auto stamp = [&](int n) {
    Node& node = nodes_[static_cast<size_t>(n)];
    const auto [it, added] = node.tenants.try_emplace(tenant, now);
    if (added) {
      sizes_[static_cast<size_t>(tenant)] += node.length;
    } else {
      it->second = now;
    }
  };
  while (p < prompt.size()) {
    const Key key{prompt[p].content_id, prompt[p].offset + q};
    const auto it = nodes_[static_cast<size_t>(cur)].children.find(key);
    if (it == nodes_[static_cast<size_t>(cur)].children.end()) {
      // A new leaf with the rest of the prompt.
      const int leaf = new_node();
      Node& l = nodes_[static_cast<size_t>(leaf)];
      l.parent = cur;
      l.label.push_back({prompt[p].content_id, prompt[p].offset + q, prompt[p].length - q});
      for (size_t r = p + 1; r < prompt.size(); ++r) l.label.push_back(prompt[r]);
      for (const TokenPiece& t : l.label) l.length += t.length;
      nodes_[static_cast<size_t>(cur)].children[key] = leaf;
      stamp(leaf);
      return;
    }
    int child = it->second;
    const int64_t c = common(nodes_[static_cast<size_t>(child)], prompt, p, q);
    if (c < nodes_[static_cast<size_t>(child)].length) child = split(child, c);
    stamp(child);
    cur = child;
  }
}

void RadixTree::evict_to(int64_t max_tokens) {
  for (int t = 0; t < static_cast<int>(sizes_.size()); ++t)
    if (sizes_[static_cast<size_t>(t)] > max_tokens) evict_tenant(t, max_tokens);
}

void RadixTree::evict_tenant(int tenant, int64_t max_tokens) {
  // A tenant's leaf: a node it holds none of whose children it holds.
  const auto is_leaf = [&](int n) {
    for (const auto& [k, c] : nodes_[static_cast<size_t>(n)].children)
      if (nodes_[static_cast<size_t>(c)].tenants.count(tenant)) return false;
    return true;
  };
  using Item = std::tuple<int64_t, int>;  // (last access, node): oldest first, ties by node index
  std::priority_queue<Item, std::vector<Item>, std::greater<>> leaves;
  std::vector<int> stack{0};
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    const Node& node = nodes_[static_cast<size_t>(n)];
    for (const auto& [k, c] : node.children) stack.push_back(c);
    const auto it = node.tenants.find(tenant);
    if (n != 0 && it != node.tenants.end() && is_leaf(n)) leaves.emplace(it->second, n);
  }
  int64_t& size = sizes_[static_cast<size_t>(tenant)];
  while (size > max_tokens && !leaves.empty()) {
    const int n = std::get<1>(leaves.top());
    leaves.pop();
    Node& node = nodes_[static_cast<size_t>(n)];
    if (node.tenants.erase(tenant) == 0) continue;  // already evicted through another entry
    size -= node.length;
    const int parent = node.parent;
    if (node.tenants.empty() && node.children.empty()) {
      nodes_[static_cast<size_t>(parent)].children.erase({node.label[0].content_id, node.label[0].offset});
      free_.push_back(n);
    }
    if (parent != 0) {
      const Node& pn = nodes_[static_cast<size_t>(parent)];
      const auto it = pn.tenants.find(tenant);
      if (it != pn.tenants.end() && is_leaf(parent)) leaves.emplace(it->second, parent);
    }
  }
}

}  // namespace kvsim
