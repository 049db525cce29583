#pragma once
// config.json's quantization_config, read into a QuantScheme, and the stored size of each linear
// weight under it. Methods understood (the checkpoint formats of current configs):
//   fp8 (HF fine-grained FP8, DeepSeek / MiniMax): 8-bit values; with weight_block_size [r, c] one
//       FP32 scale per r x c block (ceil(out / r) x ceil(in / c) per matrix), else one per tensor;
//   mxfp4 (gpt-oss): 4-bit E2M1 values, one 8-bit E8M0 scale per 32 values of a row;
//   nvfp4, modelopt NVFP4: 4-bit values, one FP8 scale per 16 values, one FP32 scale per tensor;
//   compressed-tensors (Kimi-K2.x, llm-compressor): every config group: num_bits, type, strategy
//       (group, channel, tensor; fp8 block; nvfp4 tensor_group), group_size, symmetric; scales in
//       BF16 (the checkpoint dtype); `ignore`; a group's named or "re:" targets before "Linear";
//   gptq, awq: bits, group_size (default 128, -1 per row), FP16 scales and packed zero points.
// Patterns (modules_to_not_convert, ignore, exclude_modules): "re:" + a regular expression searched in
// the module name, or a name with '*' wildcards matched at dot boundaries ("lm_head",
// "model.layers.*.self_attn"). Names follow Hugging Face's (model.layers.3.self_attn.q_proj,
// model.layers.3.mlp.experts.gate_up_proj); a multimodal checkpoint's "language_model." prefix is
// tried too.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/model/json.h"
#include "sim/model/model_spec.h"

namespace re2 {
class RE2;
}

namespace kvsim {

// `where` names the object in errors, e.g. "models/x.json: quantization_config".
QuantScheme read_quantization(const JsonValue& q, const std::string& where);

bool module_matches(const std::string& pattern, const std::string& module);

// One compiled pattern: a plain dotted name is matched on component boundaries without a regex
// (configs list thousands of them); wildcards and "re:" patterns use RE2 (linear time).
class ModulePattern {
 public:
  ModulePattern(const std::string& pattern, const std::string& where);
  bool matches(const std::string& module) const;

 private:
  std::string plain_;                   // empty when re_ is used
  std::shared_ptr<const re2::RE2> re_;  // RE2: linear time, a pattern like (.*)*x cannot hang a run
};

// Adds up parameters and their stored bits, one weight at a time.
class WeightTally {
 public:
  explicit WeightTally(const QuantScheme& q);
  // A linear layer's weight [out x in], `copies` times (stacked experts); quantised unless a keep
  // pattern names it or it is outside the targets. Returns out x in x copies.
  int64_t linear(const std::string& module, int64_t out, int64_t in, int64_t copies = 1);
  // Parameters that stay in 16 bits whatever the scheme: embeddings, lm_head, norms, biases, routers,
  // convolutions, RWKV mixing vectors. Returns n.
  int64_t other(int64_t n);
  // The same for 16-bit parameters of the routed experts (gpt-oss's expert biases).
  int64_t expert_other(int64_t n);
  // Modules every TP rank holds whole (vLLM ReplicatedLinear: MLA's q_a / kv_a projections, the sparse
  // indexer; routers and norms): a linear layer as linear(), and 16-bit parameters as other().
  int64_t replicated(const std::string& module, int64_t out, int64_t in);
  int64_t replicated_other(int64_t n);
  // A K or V projection of `kv_heads` heads (vLLM QKVParallelLinear: split over min(TP, heads) ranks, a
  // head copied on TP / heads ranks beyond that).
  int64_t kv_linear(const std::string& module, int64_t out, int64_t in, int kv_heads);

  int64_t quantized_params() const { return quantized_; }
  // Of those, the ones outside stacked experts (linear() calls with copies == 1: attention, dense MLPs,
  // shared experts).
  int64_t quantized_dense_params() const { return quantized_dense_; }
  int64_t kept_params() const { return kept_; }
  // Bits of the quantised weights, scales and zero points included.
  int64_t quantized_bits() const { return quantized_bits_; }
  // Bytes of the routed experts as stored (linear() calls with copies > 1 and expert_other()): the part
  // of the weights that expert parallelism shards, in their own dtype.
  int64_t expert_bytes() const { return expert_kept_ * 2 + (expert_quantized_bits_ + 7) / 8; }
  struct Part {
    int64_t params = 0, bits = 0;
  };
  const Part& replicated_part() const { return replicated_; }
  const std::map<int, Part>& kv_parts() const { return kv_; }  // by KV heads

 private:
  struct Group {
    const QuantGroup* group;
    std::vector<ModulePattern> named;  // targets other than "Linear"
    bool all_linear;
  };
  const QuantGroup* group_for(const std::string& module) const;  // nullptr: kept unquantised
  const QuantScheme& q_;
  std::vector<ModulePattern> keep_;
  std::vector<Group> groups_;
  int64_t quantized_ = 0;
  int64_t quantized_dense_ = 0;
  int64_t kept_ = 0;
  int64_t quantized_bits_ = 0;
  int64_t expert_kept_ = 0, expert_quantized_bits_ = 0;
  Part replicated_;
  std::map<int, Part> kv_;
  // Adds what `f` tallies (params and bits, 16 per kept parameter) to `part`.
  template <typename F>
  int64_t tally_into(Part& part, F f) {
    const int64_t bits0 = quantized_bits_, kept0 = kept_;
    const int64_t n = f();
    part.params += n;
    part.bits += (quantized_bits_ - bits0) + (kept_ - kept0) * 16;
    return n;
  }
};

}  // namespace kvsim
