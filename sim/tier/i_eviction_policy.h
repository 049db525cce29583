#pragma once
// IEvictionPolicy: the order in which a tier gives up chunks, vLLM's CachePolicy
// (vllm/v1/kv_offload/cpu/policies/; cluster-offload.md A.1, rules 21-22). The tier (HostTier) owns
// the chunks and their reference counts; a policy owns only an order over keys. Contract:
//  - insert(key): a chunk enters the tier, write pending (not ready, not idle);
//  - on_idle(key) / on_busy(key): the chunk's reference count became 0 (store or last load completed) /
//    left 0 (a load began);
//  - touch(keys): a lookup or a store used these keys, walked in reverse so the first chunk of a
//    prefix ends most recent (rule 22); keys the tier does not hold may still move ghost state;
//  - evict(n, ...): picks exactly n victims among keys with is_idle(key) and not is_protected(key)
//    and forgets them, or returns false and changes nothing (all or nothing, rule 21).
// Implementations iterate only their own lists (deterministic).
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kvsim {

class IEvictionPolicy {
 public:
  using KeyPredicate = std::function<bool(uint64_t)>;
  virtual ~IEvictionPolicy() = default;
  virtual void insert(uint64_t key) = 0;
  virtual void on_idle(uint64_t key) = 0;
  virtual void on_busy(uint64_t key) = 0;
  // `is_ready`: the tier holds the key and its store completed.
  virtual void touch(std::span<const uint64_t> keys, const KeyPredicate& is_ready) = 0;
  virtual bool evict(int64_t n, const KeyPredicate& is_protected, const KeyPredicate& is_idle,
                     std::vector<uint64_t>* victims) = 0;
  // True when touching the same keys twice in a row, with no other call between, leaves the order as the
  // first touch left it (LRU; not ARC, whose ghost hits move its target on every touch).
  virtual bool touch_is_idempotent() const { return false; }
};

// Registry: "lru" or "arc"; any other name throws InputError listing the valid names.
std::unique_ptr<IEvictionPolicy> make_eviction_policy(const std::string& name, int64_t capacity_chunks);

}  // namespace kvsim
