#include "sim/tier/impl/lru_policy.h"

namespace kvsim {

void LruPolicy::to_mru(uint64_t key) {
  const auto it = pos_.find(key);
  if (it != pos_.end()) {
    lru_.splice(lru_.end(), lru_, it->second);  // the node moves; its iterator stays valid
    return;
  }
  pos_.emplace(key, lru_.insert(lru_.end(), key));
}

void LruPolicy::on_idle(uint64_t key) { to_mru(key); }

void LruPolicy::on_busy(uint64_t key) {
  const auto it = pos_.find(key);
  if (it == pos_.end()) return;
  lru_.erase(it->second);
  pos_.erase(it);
}

void LruPolicy::touch(std::span<const uint64_t> keys, const KeyPredicate&) {
  for (auto k = keys.rbegin(); k != keys.rend(); ++k) {
    const auto it = pos_.find(*k);  // only idle chunks are in the list
    if (it != pos_.end()) lru_.splice(lru_.end(), lru_, it->second);
  }
}

bool LruPolicy::evict(int64_t n, const KeyPredicate& is_protected, const KeyPredicate&,
                      std::vector<uint64_t>* victims) {
  victims->clear();
  for (auto it = lru_.begin(); it != lru_.end() && std::ssize(*victims) < n; ++it)
    if (!is_protected(*it)) victims->push_back(*it);
  if (std::ssize(*victims) < n) {
    victims->clear();
    return false;  // vLLM: evict() is all or nothing
  }
  for (uint64_t v : *victims) on_busy(v);
  return true;
}

}  // namespace kvsim
