#pragma once
// RadixTree: SGLang router's approximate radix tree (sgl-router src/tree.rs), one tree shared by all
// instances ("tenants"), each node remembering which tenants hold it and when each last used it.
// SGLang keys the tree by the request's characters; kvsim by token identities (content id, offset),
// so a match is exact to the token. Edges are compressed runs of tokens; a match may end inside an
// edge. Inserting marks the tenant on every node of the path (a tenant holding a node holds its
// ancestors); eviction removes a tenant's least recently used leaves first.
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace kvsim {

struct TokenPiece {
  uint64_t content_id = 0;
  int64_t offset = 0;  // of the first token inside its content
  int64_t length = 0;
};

class RadixTree {
 public:
  explicit RadixTree(int num_tenants);

  struct Match {
    int64_t tokens = 0;  // matched tokens (may end inside an edge)
    int tenant = -1;     // a tenant of the deepest node reached: the most recent user, ties the lowest id
  };
  Match match(const std::vector<TokenPiece>& prompt) const;
  // Inserts the prompt for `tenant`, stamping every node on its path with `now`.
  void insert(const std::vector<TokenPiece>& prompt, int tenant, int64_t now);
  // Tokens held by the tenant (sum of its nodes' edge lengths).
  int64_t tenant_size(int tenant) const { return sizes_[static_cast<size_t>(tenant)]; }
  // Evicts each tenant's least recently used leaves until it holds at most `max_tokens`.
  void evict_to(int64_t max_tokens);
  int64_t num_nodes() const { return static_cast<int64_t>(nodes_.size() - free_.size()); }

 private:
  using Key = std::pair<uint64_t, int64_t>;  // first token's (content id, offset)
  struct Node {
    std::vector<TokenPiece> label;
    int64_t length = 0;
    int parent = -1;
    std::map<Key, int> children;
    std::map<int, int64_t> tenants;  // tenant -> last access
  };
  // Tokens in common between node n's label and the prompt from (piece p, offset q); advances p, q.
  int64_t common(const Node& n, const std::vector<TokenPiece>& prompt, size_t& p, int64_t& q) const;
  // Splits node n after `at` tokens: a new parent holds the first part; returns it.
  int split(int n, int64_t at);
  int new_node();
  void evict_tenant(int tenant, int64_t max_tokens);

  std::vector<Node> nodes_;
  std::vector<int> free_;
  std::vector<int64_t> sizes_;
};

}  // namespace kvsim
