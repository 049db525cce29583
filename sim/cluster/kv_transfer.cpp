#include "sim/cluster/kv_transfer.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/core/errors.h"

namespace kvsim {
namespace {
enum Kind { kFull = 0, kWindow = 1, kState = 2 };

// The heads [lo, hi) a rank of a TP group holds: an equal slice, or one replicated head when the group is
// wider than the heads (vLLM get_num_kv_heads: max(1, heads // tp)).
std::pair<int, int> held_heads(int rank, int tp, int heads) {
  if (tp <= heads) return {rank * heads / tp, (rank + 1) * heads / tp};
  const int h = rank * heads / tp;
  return {h, h + 1};
}

bool holds(int rank, int tp, int heads, int head) {
  const auto [lo, hi] = held_heads(rank, tp, heads);
  return lo <= head && head < hi;
}
}  // namespace

KvTransferModel::KvTransferModel(const ModelSpec& spec, const StateDtypes& dt, const TransferSides& sides)
    : sides_(sides) {
  if (sides.prefill_tp < 1 || sides.decode_tp < 1) throw InputError("tensor_parallel_size must be at least 1");
  for (const LayerSpec& l : spec.layers) has_state_ = has_state_ || is_state(l.kind);
  if (sides.prefill_kv != sides.decode_kv)
    throw InputError("the prefill and decode pools use different KV cache dtypes (" + dtype_name(sides.prefill_kv) +
                     " vs " + dtype_name(sides.decode_kv) +
                     "): vLLM's NIXL connector needs the same cache_dtype on both sides");
  if (sides.prefill_block_size > sides.decode_block_size)
    throw InputError("the prefill block size " + std::to_string(sides.prefill_block_size) +
                     " is larger than the decode block size " + std::to_string(sides.decode_block_size) +
                     ": vLLM's NIXL connector supports only a prefill block smaller than or equal to the decode block");
  if (has_state_ && sides.prefill_block_size != sides.decode_block_size)
    throw InputError("a hybrid model needs the same block size on the prefill and decode pools (" +
                     std::to_string(sides.prefill_block_size) + " vs " + std::to_string(sides.decode_block_size) +
                     "): vLLM's NIXL connector supports different block sizes only without the hybrid allocator");
  if (has_state_ && sides.prefill_tp != sides.decode_tp && !sides.hybrid_hetero_tp)
    throw InputError("a hybrid model with prefill TP " + std::to_string(sides.prefill_tp) + " and decode TP " +
                     std::to_string(sides.decode_tp) +
                     ": vLLM's NIXL connector documents hybrid models as homogeneous TP only "
                     "(cluster.disaggregation.hybrid_hetero_tp: true uses tp_mapping.py's SSM path)");
  coefs_.assign(static_cast<size_t>(sides.decode_tp * sides.prefill_tp), Coef{});
  const int d = sides.decode_tp;
  for (const LayerSpec& l : spec.layers) {
    if (is_attention(l.kind)) {
      const double per_rank = attention_bytes_per_token(l, sides.decode_kv, d);
      if (per_rank <= 0) continue;  // reads another layer's cache
      const bool mla = l.kind == LayerKind::kMla || l.kind == LayerKind::kSparseMla;
      // MLA: one latent row replicated on every rank (a single "head" everybody holds).
      const int heads = mla ? 1 : l.attn.num_kv_heads;
      const int desc = mla || l.attn.k_eq_v ? 1 : 2;
      if (l.kind == LayerKind::kSlidingWindow)
        add_sharded(heads, per_rank, kWindow, l.attn.window, desc);
      else
        add_sharded(heads, per_rank, kFull, 0, desc);
    } else if (is_state(l.kind)) {
      const double per_rank = static_cast<double>(state_bytes(l, dt, d));
      const int heads = static_cast<int>(std::max<int64_t>(l.state.ssm_heads, 1));
      add_sharded(heads, per_rank, kState, 0, 2);  // conv and SSM state
    }
  }
}

void KvTransferModel::add_sharded(int heads, double per_rank, int kind, int window, int desc) {
  const int p = sides_.prefill_tp, d = sides_.decode_tp;
  for (int r = 0; r < d; ++r) {
    const auto [lo, hi] = held_heads(r, d, heads);
    std::map<int, int> from;  // source rank -> heads read from it
    for (int h = lo; h < hi; ++h) {
      // compute_tp_mapping: D_TP >= P_TP -> rank r * P / D; P_TP > D_TP -> the first of r*k ... (r+1)*k - 1
      // holding the head (np.unique over heads).
      int src = -1;
      if (d >= p) {
        src = r * p / d;
      } else {
        const int k = p / d;
        for (int j = r * k; j < (r + 1) * k && j < p; ++j)
          if (holds(j, p, heads, h)) {
            src = j;
            break;
          }
      }
      if (src < 0 || !holds(src, p, heads, h))
        for (int j = 0; j < p; ++j)
          if (holds(j, p, heads, h)) {
            src = j;
            break;
          }
      ++from[src];
    }
    for (const auto& [src, n] : from) {
      Coef& c = coef(r, src);
      const double bytes = per_rank * n / (hi - lo);
      if (kind == kFull) {
        c.full += bytes;
        c.full_desc_per_block += desc;
      } else if (kind == kWindow) {
        auto it = std::find_if(c.windowed.begin(), c.windowed.end(), [&](const auto& w) { return w.first == window; });
        if (it == c.windowed.end()) {
          c.windowed.emplace_back(window, bytes);
        } else {
          it->second += bytes;
        }
        c.window_desc_per_block += desc;
      } else {
        c.state += bytes;
        c.state_desc += desc;
      }
    }
  }
}

std::vector<RankFlow> KvTransferModel::plan(int64_t prompt_tokens, int64_t local_hit) const {
  std::vector<RankFlow> flows;
  const int64_t b = sides_.decode_block_size;
  // The tokens the decode side needs: N, or N - 1 with state layers (the state at N - 1 comes along).
  const int64_t upto = has_state_ ? prompt_tokens - 1 : prompt_tokens;
  if (upto <= local_hit) return flows;  // a full local hit: nothing to read, P is only told to free
  const int64_t first = local_hit / b;
  const int64_t last = (upto + b - 1) / b;
  const int64_t full_blocks = std::max<int64_t>(last - first, 0);
  for (int r = 0; r < sides_.decode_tp; ++r) {
    for (int s = 0; s < sides_.prefill_tp; ++s) {
      const Coef& c = coefs_[static_cast<size_t>(r * sides_.prefill_tp + s)];
      double bytes = c.full * static_cast<double>(full_blocks * b);
      int64_t desc = c.full_desc_per_block * full_blocks;
      int64_t widest = 0;
      for (const auto& [w, per_token] : c.windowed) {
        // The blocks inside the window of the last needed token that the local hit does not cover.
        const int64_t wfirst = std::max(first, std::max<int64_t>(upto - w, 0) / b);
        const int64_t blocks = std::max<int64_t>(last - wfirst, 0);
        bytes += per_token * static_cast<double>(blocks * b);
        widest = std::max(widest, blocks);
      }
      desc += c.window_desc_per_block * widest;
      bytes += c.state;
      desc += c.state_desc;
      const auto n = static_cast<int64_t>(std::llround(bytes));
      if (n > 0) flows.push_back(RankFlow{r, s, n, desc});
    }
  }
  return flows;
}

int64_t KvTransferModel::total_bytes(int64_t prompt_tokens, int64_t local_hit) const {
  int64_t sum = 0;
  for (const RankFlow& f : plan(prompt_tokens, local_hit)) sum += f.bytes;
  return sum;
}

}  // namespace kvsim
