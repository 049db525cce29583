#pragma once
// `kvsim validate POINTS.csv`: simulates measured end-to-end points as closed loops and reports the
// error of predicted TTFT and TPOT (per row, and median / p90 overall and per model class).
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/app/validate_disagg.h"
#include "sim/app/validate_parallel.h"
#include "sim/metrics/run_collector.h"
#include "sim/scenario/scenario.h"

namespace kvsim {

struct ValidationPoint {
  int line = 0;
  std::string model;  // config.json path
  std::string gpu;
  std::string engine = "vllm";
  std::string engine_version;  // the `engine_version` column: engine.version (version-dependent terms)
  // Weight dtype: the `weight_dtype` column (bf16, fp8, int4, mxfp4, nvfp4, ... or auto), else the
  // `dtype` column (bf16, fp16, fp8, fp4), else "auto" (the checkpoint's quantization_config, else BF16).
  std::string dtype = "auto";
  std::string kv_dtype = "auto";  // the `kv_dtype` column (bf16, fp8, ...); empty or auto: engine default
  // gemm_quant_mode or moe_quant_mode is fp8_block (block-scaled FP8 weights; --fp8-block-columns).
  bool fp8_block = false;
  // The FP4 format a quant-mode column names for `fp4` weights (nvfp4 or mxfp4; "" = none named): what
  // an `fp4` row runs as on a checkpoint not stored in FP4 (validation_scenario).
  std::string fp4_format;
  bool gpu_fp8 = false;          // the GPU has an FP8 peak (fp8_flops > 0: SM >= 89 on NVIDIA)
  std::string checkpoint_quant;  // the model config's quantization_config.quant_method ("" = none)
  int tp = 1;
  int64_t isl = 0, osl = 0;
  int concurrency = 0;
  double ttft_ms = 0, tpot_ms = 0;
  // Scheduler settings of the measured deployment (optional columns of the same names; empty = the
  // engine's default). For TensorRT-LLM rows: max_num_tokens, max_batch_size, enable_chunked_prefill.
  std::optional<int64_t> max_num_batched_tokens;
  std::optional<int> max_num_seqs;
  std::optional<bool> enable_chunked_prefill;
  // SGLang only (optional columns of the same names): --max-prefill-tokens, --enable-mixed-chunk.
  std::optional<int64_t> max_prefill_tokens;
  std::optional<bool> enable_mixed_chunk;
  // The `measured` column's date (YYYY-MM-DD, the first 10 characters of an ISO time); empty = unknown.
  // Picks the aiconfigurator generator rules in force (ValidationProtocol::deployment).
  std::string measured;
  // A disaggregated point (optional columns prefill_workers, prefill_tp, decode_workers, decode_tp,
  // topology; sim/app/validate_disagg.h); nullopt: one colocated instance at `tp`.
  std::optional<DisaggregatedPoint> disagg;
  // DP / PP / EP / nodes (optional columns dp, pp, ep, enable_expert_parallel, nodes, all2all_backend;
  // sim/app/validate_parallel.h); defaults: one engine of `tp` GPUs on one node.
  ParallelColumns parallel;
};

// How a point is measured: a closed loop of `concurrency` clients sending
// (warmup_per_slot + requests_per_slot) x concurrency requests back to back; the first
// warmup_per_slot x concurrency requests (by send order) are excluded from the means, as
// genai-perf's --warmup-request-count excludes them. Defaults: aiconfigurator's genai-perf runner
// (request-count 10 x concurrency, warmup-request-count 2 x concurrency).
struct ValidationProtocol {
  int requests_per_slot = 10;
  int warmup_per_slot = 2;
  bool use_engine_columns = true;  // false: ignore the per-row scheduler columns (engine defaults)
  // Hypothesis H1 (models/latency/README.md), off by default: the client keeps `extra_clients` more
  // requests in flight than the point's concurrency, so with max_num_seqs = concurrency that many wait
  // for a free slot at all times. Request counts stay per point concurrency.
  int extra_clients = 0;
  // --fp8-block-columns: a row marked fp8_block (ValidationPoint::fp8_block) runs weight_dtype fp8_block.
  bool fp8_block_columns = false;
  // --mla-module-rows: every row runs engine.mla_attention module_rows.
  bool mla_module_rows = false;
  // --mla-roofline: every row runs engine.mla_attention roofline (no DSA module rows either).
  bool mla_roofline = false;
  // Where the scheduler settings of a row without scheduler columns come from: the engine's defaults
  // (kEngineDefaults), or the flags aiconfigurator's config generator emitted for an aggregated worker
  // on the row's `measured` date (kAiconfigurator; generator_deployment()). Set by --deployment or the
  // file's '# protocol:' line (deployment=engine-defaults|aiconfigurator).
  enum class Deployment { kEngineDefaults, kAiconfigurator };
  Deployment deployment = Deployment::kEngineDefaults;
  // The KV cache dtype of a row whose kv_dtype column is empty (point_kv_dtype()): kColumn the engine's
  // default ("auto"), kAiconfigurator what aiconfigurator's generator passed on the row's `measured`
  // date, kWeights FP8 whenever the weights are FP8 or NVFP4. Set by --kv-dtype or the file's
  // '# protocol:' line (kv_dtype=column|aiconfigurator|weights).
  enum class KvRule { kColumn, kAiconfigurator, kWeights };
  KvRule kv_rule = KvRule::kColumn;
  // The client's turnaround (workload.synthetic.turnaround): exponential with this mean, ms; 0 = none.
  double turnaround_ms = 0.0;
  // What a client's TTFT holds beyond the engine's (request arrival to first token, what the simulation
  // prices): the HTTP request, the server's request handling and the first SSE chunk's framing, parsing
  // and delivery. Added to every simulated TTFT mean, ms. Set by --client-ttft-ms or the file's
  // '# protocol:' line (client_ttft_ms=X); 0 = none. The committed sets state 11.6 (models/latency/README.md,
  // "Client-side TTFT").
  double client_ttft_ms = 0.0;
};

// The kv_cache_dtype a point runs with under `rule` (ValidationProtocol::KvRule). A kv_dtype column
// always wins. kAiconfigurator (ai-dynamo/aiconfigurator; the generator passes the SDK's
// kvcache_quant_mode as vLLM / SGLang --kv-cache-dtype and TRT-LLM kv_cache_config.dtype since
// 2025-12-04, #144): before that date, or without a date, the engine's default ("auto"); until #338
// (2026-02-11) Task._get_quant_mode's fp8 on every GPU with FP8 (SM >= 89); from then on the
// checkpoint's format (sdk/models/helpers.py): fp8 for FP8 and NVFP4 weights, the model dtype for
// MXFP4 (gpt-oss), INT4 and 16-bit weights. kWeights: fp8 for FP8 and NVFP4 weights on a GPU with FP8,
// whatever the date. Returns "auto" or a dtype name.
std::string point_kv_dtype(const ValidationPoint& p, ValidationProtocol::KvRule rule);

// The scheduler flags aiconfigurator's generator (ai-dynamo/aiconfigurator, generator/rule_plugin/*.rule
// and backend_templates/) gave an aggregated worker serving one point with max_batch_size = concurrency,
// at the point's `measured` date; fields it did not set stay empty (engine default). Only for a
// single-engine row (no dp, pp or disaggregation: the rules' agg branch) with a known date.
struct DeploymentFlags {
  std::optional<int64_t> max_num_batched_tokens;  // vLLM --max-num-batched-tokens, TRT-LLM max_num_tokens
  std::optional<bool> enable_chunked_prefill;     // TRT-LLM enable_chunked_prefill
  std::optional<int64_t> max_prefill_tokens;      // SGLang --max-prefill-tokens
  std::optional<bool> enable_mixed_chunk;         // SGLang --enable-mixed-chunk
  std::optional<int64_t> max_model_len;           // vLLM --max-model-len
};
DeploymentFlags generator_deployment(const ValidationPoint& p);

// Mean TTFT and TPOT (ms) over the finished requests whose id is >= first_id (vLLM / genai-perf
// definitions: TTFT = first token - send; TPOT = (finish - first token) / (output tokens - 1)).
struct PointMeans {
  double ttft_ms = 0, tpot_ms = 0;
  int64_t requests = 0;
};
PointMeans measured_means(const RunCollector& c, int64_t first_id);

// Reads and checks the points: columns model, gpu, tp, isl, osl, concurrency, ttft_ms, tpot_ms
// (optional engine, dtype, weight_dtype, kv_dtype, max_num_batched_tokens, max_num_seqs, enable_chunked_prefill, and
// the disaggregated columns of validate_disagg.h; others ignored). Errors name file, line and column.
std::vector<ValidationPoint> read_validation_points(const std::string& path, const std::string& hardware_dir);

// The closed-loop scenario of one point: (warmup + requests) x concurrency requests of isl unique
// prompt tokens and exactly osl output tokens, `concurrency` in flight, prefix caching off. A
// disaggregated point adds its cluster: section (prefill and decode pools, decider always).
Scenario validation_scenario(const ValidationPoint& p, const ValidationProtocol& protocol,
                             const std::string& hardware_dir, const std::string& latency_model);

// The measurement protocol (validate_protocol.cpp).
inline constexpr int kMaxPerSlot = 100000;                            // warmup_per_slot / requests_per_slot at most
inline constexpr double kMaxClientTtftMs = 10000;                     // client_ttft_ms at most
inline constexpr double kMinMeasuredMs = 1e-3, kMaxMeasuredMs = 1e7;  // ttft_ms and tpot_ms bounds
// "engine-defaults" | "aiconfigurator" (ValidationProtocol::Deployment); an error naming `where` otherwise.
ValidationProtocol::Deployment parse_deployment(const std::string& value, const std::string& where);
// "column" | "aiconfigurator" | "weights" (ValidationProtocol::KvRule); an error naming `where` otherwise.
ValidationProtocol::KvRule parse_kv_rule(const std::string& value, const std::string& where);
// A client TTFT overhead in ms: a plain decimal number (digits, at most one inner '.', at most 12
// characters) in [0, kMaxClientTtftMs]; an error naming `where` otherwise.
double parse_client_ttft_ms(const std::string& value, const std::string& where);
std::string format_client_ttft_ms(double ms);  // "%.6g"
// Reads the points file's '# protocol:' line into `protocol`, keeping the values the command line gave
// (the *_given flags); returns the client named, or "" when the file has no protocol line.
std::string read_protocol_directive(const std::string& path, ValidationProtocol& protocol, bool warmup_given,
                                    bool requests_given, bool deployment_given, bool kv_given, bool client_ttft_given);

int run_validate_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace kvsim
