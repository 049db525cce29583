#pragma once
// The numbers `kvsim size` reports for one model, computed once and printed by each format.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/model/hardware.h"
#include "sim/model/model_spec.h"
#include "sim/model/sizing.h"

namespace kvsim {

// Longest context `kvsim size` accepts (text plus image tokens): byte counts stay inside int64.
inline constexpr int64_t kMaxContextTokens = int64_t{1} << 40;

struct SizeOptions {
  std::string kv_dtype = "auto";  // auto: the model's default (see default_kv_dtype)
  std::string state_dtype = "auto";
  std::optional<DType> weight_dtype;       // nullopt: as quantization_config stores the weights, else BF16
  std::string weight_dtype_name = "auto";  // as given; --recompute's kernels follow fp8_block_scaled (sizing.h)
  std::vector<int64_t> contexts;
  int images = 0;
  int image_width = 0, image_height = 0;
  Parallel par;
  int decode_tp = 0;  // 0 = same as tp
  std::optional<GpuSpec> gpu;
  EngineKind engine = EngineKind::kVllm;
  std::optional<double> memory_fraction;
  std::optional<int64_t> reserve_bytes;
  int block_size = 0;  // 0 = auto
  std::optional<LinkSpec> link;
  int cla = 1;
  int yoco_window = 0;
};

struct ContextRow {
  int64_t tokens = 0;
  int64_t bytes = 0;         // exact, whole request (all ranks' shards counted once at tp 1)
  int64_t bytes_padded = 0;  // whole blocks at the engine block size
  int64_t bytes_per_gpu = 0;
  int64_t bytes_padded_per_gpu = 0;
  std::optional<int64_t> max_concurrent;
  std::optional<double> transfer_s;
  std::optional<int64_t> bytes_per_decode_gpu;
};

struct SizeReport {
  ModelSpec spec;
  DType kv_dtype = DType::kBf16;
  StateDtypes state_dtypes;
  DType weight_dtype = DType::kBf16;  // the dtype latency models see (served_weight_dtype)
  std::string weight_format;          // what the weight bytes assume (weight_format in sizing.h)
  int64_t kv_bytes_per_token = 0;
  int64_t kv_bytes_per_token_bf16 = 0;
  int64_t kv_bytes_per_token_fp8 = 0;
  int64_t window_bytes_max = 0;
  int64_t window_bytes_per_token = 0;  // sliding layers together, until their windows fill
  int window_min = 0;                  // the shortest window (tokens), 0 without sliding layers
  int64_t state_bytes_per_request = 0;
  int64_t state_bytes_bf16 = 0;
  double state_token_equivalent = 0;  // state / kv bytes per token (0 when no growing cache)
  int64_t weight_bytes = 0;
  int block_size = 0;
  KvCacheLayout layout;  // per GPU, with num_blocks when a GPU is given
  int64_t kv_bytes_per_token_per_gpu = 0;
  int64_t window_bytes_max_per_gpu = 0;
  int64_t state_bytes_per_gpu = 0;
  int64_t weight_bytes_per_gpu = 0;
  std::optional<MemoryBudget> memory;
  double memory_fraction = 0;
  // With --gpu: false when weights and reserve leave no room for one request at the longest context.
  // Then gpus_needed is the fewest GPUs whose memory would hold it (weights split evenly, one request
  // of the longest context beside them), and tp_needed the smallest TP size from there that also
  // divides the heads; 0 when none up to 1,024 does.
  bool fits = true;
  int gpus_needed = 0;
  int tp_needed = 0;
  std::vector<std::string> warnings;  // e.g. a context past max_position_embeddings
  int64_t image_tokens_each = 0;
  int64_t image_tokens_total = 0;
  int64_t image_bytes = 0;
  std::vector<ContextRow> contexts;
};

SizeReport build_size_report(const ModelSpec& spec, const SizeOptions& opt);

void print_size_table(const std::vector<SizeReport>& reports, const SizeOptions& opt, std::ostream& out);
void print_size_json(const std::vector<SizeReport>& reports, const SizeOptions& opt, std::ostream& out);
void print_size_csv(const std::vector<SizeReport>& reports, const SizeOptions& opt, std::ostream& out);

}  // namespace kvsim
