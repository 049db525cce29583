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
  std::optional<DType> weight_dtype;  // default: the checkpoint dtype served (BF16)
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
  DType weight_dtype = DType::kBf16;
  int64_t kv_bytes_per_token = 0;
  int64_t kv_bytes_per_token_bf16 = 0;
  int64_t kv_bytes_per_token_fp8 = 0;
  int64_t window_bytes_max = 0;
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
