#pragma once
// Measured operator tables for one GPU, as committed under models/latency/<gpu>/ (provenance in
// models/latency/PROVENANCE.md). Latencies are stored in seconds here (the files hold milliseconds).
// Shapes are per GPU: head counts after the tensor-parallel split, GEMM n/k after sharding.
#include <map>
#include <string>
#include <vector>

namespace kvsim {

inline constexpr const char* kDefaultLatencyDir = "models/latency";

struct GemmPoint {  // C[m x n] = A[m x k] B[k x n], BF16
  double m = 0, n = 0, k = 0, seconds = 0;
};

struct AttentionPoint {
  double batch = 0;
  double length = 0;  // context attention: new tokens per sequence (isl); generation: cached tokens
  int num_heads = 0, num_kv_heads = 0, head_dim = 0, window = 0;
  double seconds = 0;
};

struct AllReducePoint {
  int num_gpus = 0;
  double bytes = 0, seconds = 0;
};

struct MoePoint {  // fused MoE kernel of one layer's local shard (routing: load_latency_tables' moe_routing)
  double num_tokens = 0, hidden = 0, inter = 0;
  int topk = 0, num_experts = 0, moe_tp = 1, moe_ep = 1;
  double seconds = 0;
};

// One layer's whole MLA attention module (DeepSeek-V3 shape: projections, absorbed attention, o_proj) at
// `num_heads` local heads, mla_{context,generation}.csv. gemm: the projections' format ("bf16",
// "fp8_block", "nvfp4"); kv_dtype: the cache's ("bf16", "fp8"); length: new tokens per sequence
// (context) or cached tokens (generation).
struct MlaModulePoint {
  std::string gemm, kv_dtype;
  int num_heads = 0;
  double batch = 0, length = 0, seconds = 0;
};

struct LatencyTables {
  std::string gpu;
  std::string dir;                  // the folder read, "" when none
  std::vector<GemmPoint> gemm;      // BF16 x BF16
  std::vector<GemmPoint> gemm_fp8;  // FP8 x FP8 (per-tensor scaled), gemm_fp8.csv; empty when not measured
  // Block-scaled FP8 (128 x 128 weight blocks, per-token-group activation scales), gemm_fp8_block.csv
  std::vector<GemmPoint> gemm_fp8_block;
  std::vector<GemmPoint> gemm_nvfp4;  // NVFP4 x NVFP4 (E4M3 scale per 16 on both operands), gemm_nvfp4.csv
  std::vector<AttentionPoint> context_attention;
  std::vector<AttentionPoint> generation_attention;
  std::vector<AllReducePoint> allreduce;
  std::vector<MoePoint> moe;                   // BF16 experts
  std::vector<MoePoint> moe_fp8;               // FP8 experts, moe_fp8.csv; empty when not measured
  std::vector<MoePoint> moe_fp8_block;         // block-scaled FP8 experts, moe_fp8_block.csv
  std::vector<MoePoint> moe_nvfp4;             // NVFP4 experts (FP4 tensor cores), moe_nvfp4.csv
  std::vector<MoePoint> moe_int4;              // INT4 weight-only experts (W4A16, Marlin), moe_int4.csv
  std::vector<MoePoint> moe_mxfp4;             // MXFP4 weight-only experts (W4A16, gpt-oss), moe_mxfp4.csv
  std::vector<MlaModulePoint> mla_context;     // mla_context.csv (with_mla_module_rows)
  std::vector<MlaModulePoint> mla_generation;  // mla_generation.csv (with_mla_module_rows)
  // Gated DeltaNet state kernels (conv1d + delta rule) per local shape "k<heads>x<dim>_v<heads>x<dim>"
  // (gemm), local value heads (num_heads), batch and new tokens per sequence (length; 1 in generation).
  std::vector<MlaModulePoint> gdn_context;     // gdn_context.csv
  std::vector<MlaModulePoint> gdn_generation;  // gdn_generation.csv
  std::vector<MlaModulePoint> dsa_generation;  // dsa_generation.csv (with_mla_module_rows; GLM-5's DSA module)
  bool has_gemm() const { return !gemm.empty(); }
};

// Reads <root>/<gpu>/{gemm,gemm_fp8,gemm_fp8_block,gemm_nvfp4,context_attention,generation_attention,allreduce,moe,
// moe_fp8,moe_fp8_block,moe_nvfp4,moe_int4,moe_mxfp4}.csv (the MLA module rows: with_mla_module_rows). A missing folder
// or file leaves that table empty (the model then falls back to the roofline); a malformed file is an InputError naming
// file, line and column. `moe_routing`: the routing the fused-MoE rows were measured under. "balanced" (every expert n
// x k / E tokens: the <table>.csv files) or one of aiconfigurator's power-law loads, "power_law_1.01" / "power_law_1.2"
// (expert loads drawn from a power law of that exponent, the most-loaded EP rank measured: collector/helper.py
// power_law_logits_v3; the rows of <table>_power_law.csv whose distribution column holds it); a table without such rows
// is read balanced.
LatencyTables load_latency_tables(const std::string& root, const std::string& gpu,
                                  const std::string& moe_routing = "balanced");
// The tables plus the MLA module rows of their folder (mla_context.csv, mla_generation.csv, and GLM-5's DSA decode
// module, dsa_generation.csv), read only for
// engine.mla_attention module_rows (off by default), so that a default run does not parse them.
LatencyTables with_mla_module_rows(LatencyTables t);
// The tables plus the DSA decode-module rows only (dsa_generation.csv): engine.mla_attention auto, read for a
// model with DSA layers.
LatencyTables with_dsa_module_rows(LatencyTables t);
// The tables an FP8 model with block-scaled weights runs on: the block-scaled rows stand in for the
// per-tensor FP8 ones (gemm_fp8, moe_fp8), each where the GPU has them (else the per-tensor rows stay).
LatencyTables with_block_fp8_rows(LatencyTables t);

// engine.moe_routing: "auto" is aiconfigurator's SDK default (sdk/config.py workload_distribution =
// "power_law") with the exponent its model class uses for the config's architecture (1.01 for the
// DeepSeek family, Kimi-K2.5, GLM-5, MiniMax-M3, Nemotron-H, Llama 4 / MiMo, Gemma 4; 1.2 otherwise,
// models/moe.py); "balanced", "power_law_1.01" and "power_law_1.2" as given. Throws InputError naming
// `key` for another value.
std::string resolve_moe_routing(const std::string& setting, const std::string& architecture, const std::string& key);
// The GPUs that have a table folder under root, sorted.
std::vector<std::string> gpus_with_tables(const std::string& root);

// Per-step serving overhead (CPU scheduling, sampling, launch gaps) of one engine:
// t = c0 + c1 * requests in the step. From <root>/overhead.csv (engine,c0_ms,c1_ms_per_request,source).
struct EngineOverhead {
  std::string engine;
  double c0_s = 0;
  double c1_s = 0;
  std::string source;
  // A step with prefill tokens whose forward pass runs eagerly (no CUDA graph: SGLang before piecewise
  // graphs became its default) takes at least layers x this, in a model with MoE layers (the launches of
  // its kernels bound it, not the GPU). 0 = none. Holds for releases before `eager_prefill_before`.
  double eager_prefill_per_layer_s = 0;
  std::string eager_prefill_before;
};
// Whether `version` ("0.5.9", "0.5.10.post1", ...) is an older release than `before` ("0.5.10"): their
// leading dotted numbers compared in order. A version without one ("nightly-dev", "", a custom image
// name) is taken as current: not older.
bool version_before(const std::string& version, const std::string& before);
// The engine's overhead as it holds for `version`: the eager-prefill floor zeroed from eager_prefill_before on.
EngineOverhead overhead_for_version(EngineOverhead o, const std::string& version);
std::map<std::string, EngineOverhead> load_engine_overheads(const std::string& root);
// The engine's row, or InputError listing the known engines.
EngineOverhead engine_overhead(const std::string& root, const std::string& engine);

}  // namespace kvsim
