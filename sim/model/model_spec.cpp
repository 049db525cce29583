#include "sim/model/model_spec.h"

namespace kvsim {

const char* layer_kind_name(LayerKind k) {
  switch (k) {
    case LayerKind::kFullAttention:
      return "full";
    case LayerKind::kSlidingWindow:
      return "sliding";
    case LayerKind::kMla:
      return "mla";
    case LayerKind::kSparseMla:
      return "sparse_mla";
    case LayerKind::kMamba2:
      return "mamba2";
    case LayerKind::kGatedDeltaNet:
      return "gated_deltanet";
    case LayerKind::kRwkv6:
      return "rwkv6";
    case LayerKind::kNone:
      return "none";
  }
  return "?";
}

bool is_attention(LayerKind k) {
  return k == LayerKind::kFullAttention || k == LayerKind::kSlidingWindow || k == LayerKind::kMla ||
         k == LayerKind::kSparseMla;
}

bool is_state(LayerKind k) {
  return k == LayerKind::kMamba2 || k == LayerKind::kGatedDeltaNet || k == LayerKind::kRwkv6;
}

int ModelSpec::count(LayerKind k) const {
  int n = 0;
  for (const auto& l : layers) n += l.kind == k;
  return n;
}

bool ModelSpec::has_state() const {
  for (const auto& l : layers)
    if (is_state(l.kind)) return true;
  return false;
}

bool ModelSpec::is_hybrid() const {
  bool attn = false;
  for (const auto& l : layers) attn |= is_attention(l.kind);
  return attn && has_state();
}

}  // namespace kvsim
