#pragma once
// MlaModuleTable: one layer's whole MLA attention module (q_a / kv_a / q_b projections, the absorbed
// attention kernel, o_proj) from aiconfigurator's measured module rows (models/latency/<gpu>/
// mla_{context,generation}.csv; collector/vllm/collect_mla_module.py builds vLLM's own
// DeepseekV2MLAAttention at the DeepSeek-V3 shape and times its forward under CUDA graphs).
//   * rows of one projection format, cache dtype and local head count form a grid over batch and length
//     (new tokens per sequence for context rows, cached tokens for generation rows);
//   * a query interpolates linearly in length along each measured batch (the last segment's slope beyond
//     the longest length, the shortest length's value below it), then linearly in batch between the two
//     nearest measured batches; a batch whose rows stop before the length keeps its value at its longest
//     length times the growth from there to the length of the largest batch measured that far (the rows
//     are far from linear in batch); above the largest measured batch it scales that batch's time by
//     batch / largest (sequences beyond the grid cost what the largest measured batch's did each);
//   * a measured point comes back exactly.
// The rows are measured at the DeepSeek-V3 MLA shape only (hidden 7168, q_lora_rank 1536, kv_lora_rank
// 512, qk_nope 128, qk_rope 64, v_head 128); mla_module_shape() says whether a layer has it. Kimi-K2.5
// shares it (64 heads: its local head counts are rows of the same grid).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/model/model_spec.h"
#include "sim/perf/latency_tables.h"

namespace kvsim {

// True when the layer is a (dense, not DSA) MLA layer of the shape the module rows were measured at.
bool mla_module_shape(const ModelSpec& m, const LayerSpec& l);
// True when the layer is a DSA layer of GLM-5's shape, the one the DSA decode rows (dsa_generation.csv,
// SGLang 0.5.14, zai-org/GLM-5-FP8) were measured at: hidden 6144, q_lora_rank 2048, kv_lora_rank 512,
// qk_nope 192, qk_rope 64, v_head 256, an indexer of 32 heads of 128.
bool dsa_module_shape(const ModelSpec& m, const LayerSpec& l);

class MlaModuleTable {
 public:
  MlaModuleTable() = default;
  // The rows of points with this projection format, cache dtype and local head count.
  MlaModuleTable(const std::vector<MlaModulePoint>& points, const std::string& gemm, const std::string& kv_dtype,
                 int num_heads);
  bool empty() const { return by_batch_.empty(); }
  // Seconds for one layer: `batch` sequences of `length` tokens each (both > 0).
  double seconds(double batch, double length) const;

 private:
  using Curve = std::vector<std::pair<double, double>>;  // (length, seconds), ascending length
  static double along(const Curve& c, double length);
  std::map<double, Curve> by_batch_;
  double longest_ = 0;  // the longest length any batch was measured at
};

}  // namespace kvsim
