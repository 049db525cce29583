#pragma once
// PagedBlockTerm: what the KV cache block size adds to (or saves from) paged attention, as a delta
// relative to the block size a latency model's constants describe.
//
// Paged-attention kernels read the cache page by page through the block table (vLLM's attention
// backends; one page = one engine block of one layer). Below the kernel's KV tile the kernel gathers
// each page with its own address computation and copies (FlashAttention's cp.async paged path), so a
// context of T tokens in pages of B tokens costs a fixed amount per page on top of the bytes:
//
//   t_block = c_page * sum_layers h_l * T_l * (1/B - 1/B_ref)            [seconds per step, per GPU]
//
//   h_l    KV heads per rank the layer reads pages for: ceil(kv_heads / TP) for full and sliding layers,
//          1 for MLA and sparse MLA (one latent row, replicated on every rank); state layers read none
//   T_l    tokens read through the page table: decode_context_tokens + prefill_context_tokens (the
//          windowed aggregates for sliding layers; num_prefill_tokens when the engine left the prefill
//          aggregate 0, as the roofline assumes)
//   c_page kPagedGatherSecondsPerPageHead, below
//   B_ref  the block size at which the model's own constants were measured or stated: the calibrated
//          model's tables were collected at 64 (aiconfigurator collector/vllm/collect_attn.py,
//          block_size = 64, every version since commit 5554d2e); the roofline states no block size, so
//          its reference is the block size the engine resolves by default for the model (vLLM 16, 64 for
//          MLA, vLLM's hybrid rule), and the default scenarios keep their step times.
//
// Sum over requests of ceil(T_i / B) is T / B + about half a page per request; the half page cancels in
// the difference with B_ref, so the term needs only the batch aggregates (O(1)). It is exactly 0 when
// B == B_ref and negative when B > B_ref (fewer pages).
//
// Not modelled: kernels that switch to a faster bulk-copy (TMA) path when the page equals their tile
// (FlashAttention CuTe SM90 PR #2360, SM100 MLA PR #2468: page 128 ~20 % faster than 16 or 64), the
// block-table and slot-mapping upload, and backend selection: kvsim prices every block size with the
// FLASH_ATTN backend (the tables' kernel), which accepts any multiple of 16 (vLLM
// get_supported_kernel_block_sizes -> MultipleOf(16)) and reads the engine block as its page. A block
// size a backend rejects (8 under FLASH_ATTN; FlashInfer takes 16, 32, 64, FlashMLA 64, and vLLM splits
// a larger engine block into the largest such kernel page that divides it) is priced as pages of the
// engine block all the same.
#include "sim/model/model_spec.h"
#include "sim/perf/i_latency_model.h"

namespace kvsim {

// Seconds per page per KV head. Source: Dao-AILab/flash-attention PR #1999 ("[Cute,Fwd,Sm100] Support
// paged attention", FA4 forward, one decode query, batch 4, seqlen_k 131072, 32 heads, head_dim 128,
// both rows on the cp.async paged path, page < tile 128): page size 1 took 9.906083 ms, page size 32
// 6.344819 ms. Pages differ by 4 x (131072 - 131072/32) = 507,904 per head, over 32 heads:
//   c_page = (9.906083 - 6.344819) ms / (507,904 x 32) = 2.1912e-10 s.
// Measured on a B200 (SM100); kvsim applies it to every GPU (no Hopper measurement at several page
// sizes was found; the aiconfigurator tables have no block-size dimension).
inline constexpr double kPagedGatherSecondsPerPageHead = (9.906083e-3 - 6.344819e-3) / (4.0 * (131072 - 4096) * 32);

class PagedBlockTerm {
 public:
  PagedBlockTerm() = default;  // no term (0 at every batch)
  // Throws InputError when a block size is below 1.
  PagedBlockTerm(const ModelSpec& model, int tp, int block_size, int reference_block_size,
                 double seconds_per_page_head = kPagedGatherSecondsPerPageHead);

  // Seconds to add to one step; 0 when block_size == reference_block_size or the term is off.
  double seconds(const BatchShape& b) const;
  bool active() const { return scale_ != 0.0; }
  int block_size() const { return block_size_; }
  int reference_block_size() const { return reference_block_size_; }
  // Sum over layers of h_l (full + MLA layers, and sliding layers), for tests.
  double heads_full() const { return heads_full_; }
  double heads_sliding() const { return heads_sliding_; }

 private:
  int block_size_ = 0;
  int reference_block_size_ = 0;
  double heads_full_ = 0;
  double heads_sliding_ = 0;
  double scale_ = 0;  // c_page * (1/B - 1/B_ref)
};

}  // namespace kvsim
