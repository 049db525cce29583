#pragma once
// ArcPolicy: adaptive replacement (Megiddo & Modha, FAST 2003) as vLLM cpu/policies/arc.py applies it
// to the offload tier (cluster-offload.md A.1):
//  - T1 holds chunks used once, T2 chunks used again; B1 / B2 are ghost lists of keys evicted from
//    T1 / T2 (no data), each trimmed to the tier capacity from its least recent end;
//  - insert -> T1 most recent (a ghost entry for the key is dropped);
//  - touch, keys in reverse: in T1 and ready -> T2 most recent; in T1 and write pending -> T1 most
//    recent (the store's own touch is not a second use); in T2 -> T2 most recent; in B1 -> target
//    += max(1, |B2| / |B1|) (at most the capacity); in B2 -> target -= max(1, |B1| / |B2|) (at least 0);
//  - evict: each victim comes from T1 while |T1| >= int(target), else from T2 (falling back to the
//    other list when one has no candidate); scans start at the least recent end and skip busy and
//    protected chunks; victims go to the most recent end of B1 / B2. The adaptive target starts at 0.
#include <list>
#include <unordered_map>

#include "sim/tier/i_eviction_policy.h"

namespace kvsim {

class ArcPolicy final : public IEvictionPolicy {
 public:
  explicit ArcPolicy(int64_t capacity_chunks) : capacity_(capacity_chunks) {}
  void insert(uint64_t key) override;
  void on_idle(uint64_t) override {}
  void on_busy(uint64_t) override {}
  void touch(std::span<const uint64_t> keys, const KeyPredicate& is_ready) override;
  bool evict(int64_t n, const KeyPredicate& is_protected, const KeyPredicate& is_idle,
             std::vector<uint64_t>* victims) override;

  double target_t1() const { return target_; }
  int64_t t1_size() const { return std::ssize(lists_[kT1]); }
  int64_t t2_size() const { return std::ssize(lists_[kT2]); }
  int64_t b1_size() const { return std::ssize(lists_[kB1]); }
  int64_t b2_size() const { return std::ssize(lists_[kB2]); }

 private:
  enum Which : uint8_t { kT1, kT2, kB1, kB2 };
  struct Pos {
    Which which;
    std::list<uint64_t>::iterator it;
  };
  void move_to(uint64_t key, Which to);  // to the most recent end of `to`
  void erase(uint64_t key);
  void trim(Which ghost);

  int64_t capacity_;
  double target_ = 0;             // vLLM target_t1_size
  std::list<uint64_t> lists_[4];  // front = least recent
  std::unordered_map<uint64_t, Pos> pos_;
};

}  // namespace kvsim
