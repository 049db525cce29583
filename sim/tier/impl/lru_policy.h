#pragma once
// LruPolicy: vLLM cpu/policies/lru.py. An ordered list of idle chunks (front = least recently used);
// "use" = the chunk becoming idle (store or load completion) and touch(); eviction scans from the
// front skipping protected keys (cluster-offload.md A.1, rules 21-22).
#include <list>
#include <unordered_map>

#include "sim/tier/i_eviction_policy.h"

namespace kvsim {

class LruPolicy final : public IEvictionPolicy {
 public:
  void insert(uint64_t) override {}
  void on_idle(uint64_t key) override;
  void on_busy(uint64_t key) override;
  void touch(std::span<const uint64_t> keys, const KeyPredicate& is_ready) override;
  bool evict(int64_t n, const KeyPredicate& is_protected, const KeyPredicate& is_idle,
             std::vector<uint64_t>* victims) override;
  bool touch_is_idempotent() const override { return true; }  // every touched idle key ends at the MRU end, in order

 private:
  void to_mru(uint64_t key);
  std::list<uint64_t> lru_;  // idle chunks, front = least recently used
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> pos_;
};

}  // namespace kvsim
