#pragma once
// KvTransferModel: what one disaggregated pull moves (vLLM NIXL connector, cluster-offload.md A.3 and G
// rules 10, 13-15). The decode instance reads, for every decode rank, the pages it holds of the blocks
// its own prefix cache lacks, from the prefill ranks that vLLM's compute_tp_mapping (nixl/tp_mapping.py)
// assigns to it:
//  - GQA (full and sliding attention): decode rank r holds max(1, kv_heads / D_TP) heads; with
//    D_TP >= P_TP it reads them from prefill rank r * P_TP / D_TP; with P_TP > D_TP from the prefill ranks
//    r * k ... (r + 1) * k - 1 (k = P_TP / D_TP), one prefill rank per distinct head (np.unique). Summed
//    over decode ranks that is the cache once, or D_TP / kv_heads times it when D_TP > kv_heads (heads
//    replicated on the decode side, each replica read).
//  - MLA: the latent row is replicated on every rank and read whole by every decode rank from prefill
//    rank r * P_TP / D_TP: D_TP x the bytes of one copy.
//  - Sliding-window layers: only the blocks inside the window of the last prompt token.
//  - Mamba / DeltaNet state: the state at N - 1 tokens goes with the cache (P truncates the last prompt
//    token, _truncate_mamba_request_for_prefill), sharded by heads like GQA.
// A flow reads whole blocks (NIXL block regions). Descriptors (one per layer, K / V and block, vLLM's
// default layout; one per layer and block for MLA; two per state layer) enter the per-descriptor cost.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/model/dtype.h"
#include "sim/model/model_spec.h"
#include "sim/model/sizing.h"

namespace kvsim {

struct RankFlow {
  int dst_rank = 0;  // decode rank
  int src_rank = 0;  // prefill rank
  int64_t bytes = 0;
  int64_t descriptors = 0;
};

struct TransferSides {
  int prefill_tp = 1;
  int decode_tp = 1;
  int prefill_block_size = 16;
  int decode_block_size = 16;
  DType prefill_kv = DType::kBf16;
  DType decode_kv = DType::kBf16;
  bool hybrid_hetero_tp = false;  // allow P_TP != D_TP on a model with state layers
};

class KvTransferModel {
 public:
  // Throws InputError for pairings vLLM's NIXL connector rejects (nixl_connector_compatibility.md):
  // different KV dtypes; a prefill block larger than the decode block; different block sizes on a hybrid
  // (HMA); P_TP != D_TP on a model with state layers unless hybrid_hetero_tp.
  KvTransferModel(const ModelSpec& spec, const StateDtypes& state_dtypes, const TransferSides& sides);

  // The flows of one pull of a `prompt_tokens` prompt whose first `local_hit` tokens the decode instance
  // already holds, in (dst_rank, src_rank) order; pairs that move nothing are left out.
  std::vector<RankFlow> plan(int64_t prompt_tokens, int64_t local_hit) const;
  int64_t total_bytes(int64_t prompt_tokens, int64_t local_hit) const;
  int decode_tp() const { return sides_.decode_tp; }
  int prefill_tp() const { return sides_.prefill_tp; }

 private:
  // Bytes per pulled token (or per request for the state), per (dst_rank, src_rank) pair.
  struct Coef {
    double full = 0;                               // full attention and MLA layers, per token
    std::vector<std::pair<int, double>> windowed;  // (window, per token) for sliding-window layers
    double state = 0;                              // per request
    int64_t full_desc_per_block = 0, window_desc_per_block = 0, state_desc = 0;
  };
  Coef& coef(int dst, int src) { return coefs_[static_cast<size_t>(dst * sides_.prefill_tp + src)]; }
  void add_sharded(int heads, double per_rank_bytes, int kind, int window, int desc);

  TransferSides sides_;
  bool has_state_ = false;
  std::vector<Coef> coefs_;  // decode_tp x prefill_tp
};

}  // namespace kvsim
