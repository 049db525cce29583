#include "sim/perf/paged_block_term.h"

#include <string>

#include "sim/core/errors.h"

namespace kvsim {

PagedBlockTerm::PagedBlockTerm(const ModelSpec& model, int tp, int block_size, int reference_block_size,
                               double seconds_per_page_head)
    : block_size_(block_size), reference_block_size_(reference_block_size) {
  if (block_size < 1 || reference_block_size < 1)
    throw InputError("paged block term: block sizes must be >= 1 (got " + std::to_string(block_size) + " and " +
                     std::to_string(reference_block_size) + ")");
  if (tp < 1) throw InputError("paged block term: tensor parallel size must be >= 1 (got " + std::to_string(tp) + ")");
  for (const LayerSpec& l : model.layers) {
    switch (l.kind) {
      case LayerKind::kFullAttention:
        heads_full_ += (l.attn.num_kv_heads + tp - 1) / tp;
        break;
      case LayerKind::kSlidingWindow:
        heads_sliding_ += (l.attn.num_kv_heads + tp - 1) / tp;
        break;
      case LayerKind::kMla:
      case LayerKind::kSparseMla:
        heads_full_ += 1;  // one latent row per token, replicated on every rank
        break;
      default:
        break;  // state and MLP-only layers read no pages
    }
  }
  if (block_size != reference_block_size)
    scale_ = seconds_per_page_head * (1.0 / block_size - 1.0 / reference_block_size);
}

double PagedBlockTerm::seconds(const BatchShape& b) const {
  if (scale_ == 0.0) return 0.0;
  const double prefill =
      static_cast<double>(b.prefill_context_tokens > 0 ? b.prefill_context_tokens : b.num_prefill_tokens);
  const double prefill_win = static_cast<double>(
      b.prefill_context_tokens_windowed > 0 ? b.prefill_context_tokens_windowed : b.num_prefill_tokens);
  const double full = static_cast<double>(b.decode_context_tokens) + prefill;
  const double sliding = static_cast<double>(b.decode_context_tokens_windowed) + prefill_win;
  return scale_ * (heads_full_ * full + heads_sliding_ * sliding);
}

}  // namespace kvsim
