#include "sim/core/errors.h"
#include "sim/tier/i_eviction_policy.h"
#include "sim/tier/impl/arc_policy.h"
#include "sim/tier/impl/lru_policy.h"

namespace kvsim {

std::unique_ptr<IEvictionPolicy> make_eviction_policy(const std::string& name, int64_t capacity_chunks) {
  if (name == "lru") return std::make_unique<LruPolicy>();
  if (name == "arc") return std::make_unique<ArcPolicy>(capacity_chunks);
  throw InputError("unknown eviction policy '" + name + "' (known: arc, lru)");
}

}  // namespace kvsim
