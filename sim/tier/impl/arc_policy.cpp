#include "sim/tier/impl/arc_policy.h"

#include <algorithm>

namespace kvsim {

void ArcPolicy::erase(uint64_t key) {
  const auto it = pos_.find(key);
  if (it == pos_.end()) return;
  lists_[it->second.which].erase(it->second.it);
  pos_.erase(it);
}

void ArcPolicy::move_to(uint64_t key, Which to) {
  erase(key);
  pos_[key] = Pos{to, lists_[to].insert(lists_[to].end(), key)};
}

void ArcPolicy::trim(Which ghost) {
  while (std::ssize(lists_[ghost]) > capacity_) erase(lists_[ghost].front());
}

void ArcPolicy::insert(uint64_t key) { move_to(key, kT1); }

void ArcPolicy::touch(std::span<const uint64_t> keys, const KeyPredicate& is_ready) {
  for (auto k = keys.rbegin(); k != keys.rend(); ++k) {
    const auto it = pos_.find(*k);
    if (it == pos_.end()) continue;
    const double b1 = static_cast<double>(b1_size()), b2 = static_cast<double>(b2_size());
    switch (it->second.which) {
      case kT1:
        move_to(*k, is_ready(*k) ? kT2 : kT1);
        break;
      case kT2:
        move_to(*k, kT2);
        break;
      case kB1:
        target_ = std::min(target_ + std::max(1.0, b2 / b1), static_cast<double>(capacity_));
        move_to(*k, kB1);
        break;
      case kB2:
        target_ = std::max(target_ - std::max(1.0, b1 / b2), 0.0);
        move_to(*k, kB2);
        break;
    }
  }
}

bool ArcPolicy::evict(int64_t n, const KeyPredicate& is_protected, const KeyPredicate& is_idle,
                      std::vector<uint64_t>* victims) {
  victims->clear();
  std::vector<Which> from;
  auto cur1 = lists_[kT1].begin(), cur2 = lists_[kT2].begin();
  const auto next = [&](std::list<uint64_t>::iterator& cur, Which w) {
    for (; cur != lists_[w].end(); ++cur)
      if (is_idle(*cur) && !is_protected(*cur)) return true;
    return false;
  };
  int64_t t1 = t1_size();  // |T1| as the victims so far leave it
  // vLLM policies/arc.py evict: from T1 while |T1| (as the victims so far leave it) >= int(target), falling
  // back to T2 when T1 has nothing evictable; below the target from T2 only: none there fails the whole
  // store, T1 is not tried.
  for (int64_t i = 0; i < n; ++i) {
    const bool prefer_t1 = t1 >= static_cast<int64_t>(target_);
    if (prefer_t1 && next(cur1, kT1)) {
      victims->push_back(*cur1++);
      from.push_back(kB1);
      --t1;
    } else if (next(cur2, kT2)) {
      victims->push_back(*cur2++);
      from.push_back(kB2);
    } else {
      victims->clear();
      return false;  // vLLM: all or nothing, nothing changes
    }
  }
  for (size_t i = 0; i < victims->size(); ++i) move_to((*victims)[i], from[i]);
  trim(kB1);
  trim(kB2);
  return true;
}

}  // namespace kvsim
