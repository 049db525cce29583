#pragma once
// Fits of operator cost models to the measured tables of one GPU (Eigen least squares, relative
// error). Used by CalibratedLatencyModel at start-up and reported by `kvsim calibrate`.
#include <optional>
#include <string>

#include "sim/model/hardware.h"
#include "sim/perf/fit.h"
#include "sim/perf/latency_tables.h"

namespace kvsim {

// Roofline for GEMMs the table does not cover:
//   t = floor + max(F / (eta_compute * peak), B / (eta_memory * hbm_bandwidth)),
// eta_compute fitted on compute-bound rows (F / peak > B / bw), eta_memory on memory-bound rows,
// each as t = floor + x / eta; both capped at 1 (never faster than the hardware file allows).
struct RooflineFit {
  double eta_compute = 0;
  double eta_memory = 0;
  double floor_s = 0;
  int rows = 0;
  ErrorStats error;  // the fitted roofline against every GEMM row
};

// Prefill attention of one layer (one kernel call over all prefill chunks of the step):
//   t = per_call + per_pair * pairs + per_token * tokens, pairs = causal query-key pairs.
struct PrefillAttentionFit {
  double per_call_s = 0, per_pair_s = 0, per_token_s = 0;
  int rows = 0;
  int table_heads = 0, table_kv_heads = 0, table_head_dim = 0, table_window = 0;  // shape the fit came from
  ErrorStats error;
};

// Decode attention of one layer: t = per_call + per_request * batch + per_context_token * sum(context).
struct DecodeAttentionFit {
  double per_call_s = 0, per_request_s = 0, per_context_token_s = 0;
  int rows = 0;
  int table_heads = 0, table_kv_heads = 0, table_head_dim = 0, table_window = 0;
  ErrorStats error;
};

// Fused MoE kernel of one layer: t = per_call + per_byte * bytes + per_flop * flops, with bytes the
// weights of the experts touched (uniform routing) plus activations, flops = 6 * tokens * topk * h * I.
struct MoeFit {
  double per_call_s = 0, per_byte_s = 0, per_flop_s = 0;
  int rows = 0;
  ErrorStats error;
};

struct GpuCalibration {
  std::string gpu;
  RooflineFit gemm;
  std::optional<ErrorStats> gemm_holdout;  // interpolation error with each interior k column left out
  // Achieved fractions used where no attention table has the shape (MLA): median achieved FLOP/s
  // fraction of BF16 peak over prefill rows with isl >= 4096, and median achieved HBM fraction over
  // decode rows that read >= 256 MiB of KV.
  double attention_prefill_eta = 0;
  double attention_decode_eta = 0;
  // The fastest decode-attention call the GPU's generation_attention rows measure (any shape, window or
  // not): the least a decode-attention kernel of a shape without rows takes (0: no rows, the GEMM floor).
  double attention_decode_floor_s = 0;
  std::optional<MoeFit> moe;
};

// Fits every per-GPU coefficient. `with_holdout` adds the GEMM leave-k-out error (slower; for
// `kvsim calibrate`). Without tables the roofline takes the GPU file's efficiencies.
GpuCalibration calibrate_gpu(const LatencyTables& tables, const GpuSpec& gpu, bool with_holdout = false);

// Fits for one per-GPU attention shape. The table shape nearest to (heads, kv_heads) with the same
// head_dim and window is used and its times scaled by heads ratio (prefill, compute-bound) or KV
// heads ratio (decode, memory-bound). std::nullopt when the table has no rows for the head_dim.
std::optional<PrefillAttentionFit> fit_prefill_attention(const LatencyTables& tables, int heads, int kv_heads,
                                                         int head_dim, int window);
std::optional<DecodeAttentionFit> fit_decode_attention(const LatencyTables& tables, int heads, int kv_heads,
                                                       int head_dim, int window);

// Causal query-key pairs of one sequence of `len` new tokens with no prefix, each key span capped at
// `window` when > 0.
double causal_pairs(double len, int window);

// Expected distinct experts touched by n tokens choosing k of e experts uniformly.
double experts_touched(double n, int k, int e);

}  // namespace kvsim
