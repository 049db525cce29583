#include "sim/model/kv_layout.h"

namespace kvsim {

std::string KvCacheLayout::describe() const {
  int full = 0, sliding = 0, state = 0;
  for (const auto& g : groups) {
    full += g.kind == KvGroupKind::kFullAttention;
    sliding += g.kind == KvGroupKind::kSlidingWindow;
    state += g.kind == KvGroupKind::kState;
  }
  std::string s = std::to_string(groups.size()) + " KV cache group" + (groups.size() == 1 ? "" : "s") + " (";
  bool first = true;
  auto add = [&](int n, const char* what) {
    if (!n) return;
    s += (first ? "" : ", ") + std::to_string(n) + " " + what;
    first = false;
  };
  add(full, "attention");
  add(sliding, "sliding");
  add(state, "state");
  return s + ") of " + std::to_string(group_size) + " layers, " + std::to_string(bytes_per_block) + " B per block";
}

}  // namespace kvsim
