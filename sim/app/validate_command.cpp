#include "sim/app/validate_command.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "sim/app/commands.h"
#include "sim/app/simulation.h"
#include "sim/app/step_report.h"
#include "sim/core/errors.h"
#include "sim/core/input_file.h"
#include "sim/core/time.h"
#include "sim/metrics/quantiles.h"
#include "sim/model/config_reader.h"
#include "sim/model/dtype.h"
#include "sim/model/model_spec.h"
#include "sim/model/sizing.h"
#include "sim/perf/csv_file.h"
#include "sim/scenario/hardware_catalog.h"

namespace po = boost::program_options;

namespace kvsim {
namespace {

// Model class for the error summary: the features that change how a step is priced.
std::string model_class(const ModelSpec& m) {
  std::string c;
  auto add = [&](const char* t) { c += (c.empty() ? "" : "+") + std::string(t); };
  if (m.num_experts > 0) add("moe");
  if (m.count(LayerKind::kMla) + m.count(LayerKind::kSparseMla) > 0) add("mla");
  if (m.count(LayerKind::kSlidingWindow) > 0) add("sliding");
  if (m.has_state()) add("hybrid");
  return c.empty() ? "dense" : c;
}

// Column bounds: far above any measured point, and low enough that a point's requests
// ((warm-up + requests per slot) x concurrency) and tokens stay countable.
constexpr int64_t kMaxTp = 4096;
constexpr int64_t kMaxConcurrency = 1000000;
constexpr int64_t kMaxTokens = 1'000'000'000'000'000;  // 1e15: a rejected point is still reported
constexpr int64_t kMaxOutputTokens = 1'000'000'000;    // the synthetic workload's bound on a length

struct Row {
  ValidationPoint p;
  std::string cls;
  double ttft = 0, tpot = 0;
};

void print_summary(const std::string& label, const std::vector<const Row*>& rows, std::ostream& out) {
  std::vector<double> et, ep;
  for (const Row* r : rows) {
    et.push_back(std::abs(r->ttft - r->p.ttft_ms) / r->p.ttft_ms * 100);
    ep.push_back(std::abs(r->tpot - r->p.tpot_ms) / r->p.tpot_ms * 100);
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-18s %6zu %12.1f %10.1f %12.1f %10.1f\n", label.c_str(), rows.size(),
                quantile(et, 0.5), quantile(et, 0.9), quantile(ep, 0.5), quantile(ep, 0.9));
  out << buf;
}

// After a disaggregated row: its sides, topology and the mean pull (first flow start to last flow end)
// over the measured requests prefilled remotely.
std::string disaggregated_suffix(const DisaggregatedPoint& d, const RunCollector& c, int64_t first_id) {
  double pull_ms = 0;
  int64_t n = 0;
  for (const RequestRow& r : c.requests()) {
    if (r.id < first_id || !r.finished || r.prefill_instance < 0) continue;
    pull_ms += static_cast<double>((r.transfer_end - r.transfer_start).ns()) * 1e-6;
    ++n;
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "  P/D %dxTP%d -> %dxTP%d on %s, %lld remote prefill(s), mean pull %.2f ms",
                d.prefill_workers, d.prefill_tp, d.decode_workers, d.decode_tp, d.topology.c_str(),
                static_cast<long long>(n), n > 0 ? pull_ms / static_cast<double>(n) : 0.0);
  return buf;
}

// --explain: the step table (step_report.h) of the point's steady decode step, its concurrency spread over
// the decode pool's engines (DP ranks, decode workers) at isl + osl / 2 cached, and of one whole prompt's
// prefill step, each from the pool that runs it.
void explain_point(const Scenario& s, const ValidationPoint& p, std::ostream& out) {
  const size_t decode_pool = s.cluster.pools.size() - 1;  // a disaggregated point's decode pool, else the only one
  const PoolSettings& d = s.cluster.pools[decode_pool];
  const int64_t engines = d.instances;  // DP ranks are instances of their own (scenario.cpp)
  StepRequest decode;
  decode.decodes = (p.concurrency + engines - 1) / engines;
  decode.context = p.isl + p.osl / 2;
  StepRequest prefill;
  prefill.prefills = 1;
  prefill.prefill_tokens = p.isl;
  if (decode_pool == 0) {
    print_step_table(build_pool_model(s, 0), {decode, prefill}, out);
  } else {
    out << "prefill pool:\n";
    print_step_table(build_pool_model(s, 0), {prefill}, out);
    out << "decode pool:\n";
    print_step_table(build_pool_model(s, decode_pool), {decode}, out);
  }
  out << "\n";
}

}  // namespace

std::vector<ValidationPoint> read_validation_points(const std::string& path, const std::string& hardware_dir) {
  const CsvFile f = read_csv_file(path);
  const HardwareCatalog hw = load_hardware_catalog(hardware_dir);
  const int c_model = f.column("model"), c_gpu = f.column("gpu"), c_tp = f.column("tp"), c_isl = f.column("isl"),
            c_osl = f.column("osl"), c_conc = f.column("concurrency"), c_ttft = f.column("ttft_ms"),
            c_tpot = f.column("tpot_ms");
  const auto c_engine = f.find_column("engine");
  const auto c_engine_version = f.find_column("engine_version");
  const auto c_dtype = f.find_column("dtype");
  const auto c_weight_dtype = f.find_column("weight_dtype");
  const auto c_kv_dtype = f.find_column("kv_dtype");
  const auto c_gemm_quant = f.find_column("gemm_quant_mode");
  const auto c_moe_quant = f.find_column("moe_quant_mode");
  const auto c_mnbt = f.find_column("max_num_batched_tokens");
  const auto c_mns = f.find_column("max_num_seqs");
  const auto c_chunk = f.find_column("enable_chunked_prefill");
  const auto c_mpt = f.find_column("max_prefill_tokens");
  const auto c_mixed = f.find_column("enable_mixed_chunk");
  const auto c_measured = f.find_column("measured");
  std::vector<ValidationPoint> out;
  for (size_t r = 0; r < f.rows.size(); ++r) {
    ValidationPoint p;
    p.line = f.lines[r];
    // The bound is checked before the cast: 3e9 concurrency wrapped negative and 1e30 became 0.
    auto positive_int = [&](int col, int64_t max = kMaxTokens) {
      const double v = f.number(r, col);
      if (v < 1 || v != std::floor(v))
        throw InputError(f.where(r, col) + ": must be a whole number >= 1 (got " + f.text(r, col) + ")");
      if (!(v <= static_cast<double>(max)))
        throw InputError(f.where(r, col) + ": must be <= " + std::to_string(max) + " (got " + f.text(r, col) + ")");
      return static_cast<int64_t>(v);
    };
    auto positive = [&](int col) {
      const double v = f.number(r, col);
      if (v <= 0) throw InputError(f.where(r, col) + ": must be > 0 (got " + f.text(r, col) + ")");
      return v;
    };
    p.model = f.text(r, c_model);
    if (p.model.empty()) throw InputError(f.where(r, c_model) + ": empty, expected a config.json path");
    if (std::any_of(p.model.begin(), p.model.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
      throw InputError(f.where(r, c_model) + ": a control character in the path");
    p.gpu = f.text(r, c_gpu);
    if (!hw.gpus.count(p.gpu)) {
      std::string known;
      for (const auto& [k, v] : hw.gpus) known += (known.empty() ? "" : ", ") + k;
      throw InputError(f.where(r, c_gpu) + ": unknown GPU '" + p.gpu + "' (known: " + known + ")");
    }
    p.gpu_fp8 = hw.gpus.at(p.gpu).fp8_flops > 0;
    p.tp = static_cast<int>(positive_int(c_tp, kMaxTp));
    p.isl = positive_int(c_isl);
    p.osl = positive_int(c_osl, kMaxOutputTokens);
    if (p.osl < 2)  // TPOT is the mean gap between output tokens: one token has none
      throw InputError(f.where(r, c_osl) + ": must be >= 2 (got 1): a point with one output token has no TPOT to " +
                       "compare with its tpot_ms");
    p.concurrency = static_cast<int>(positive_int(c_conc, kMaxConcurrency));
    // A measured time outside [1 us, 10,000 s] is a unit slip or a broken row (1e-300 ms gave an error of
    // 1e304 %).
    auto measured_ms = [&](int col) {
      const double v = positive(col);
      if (v < kMinMeasuredMs || v > kMaxMeasuredMs)
        throw InputError(f.where(r, col) + ": must be in [0.001, 1e7] ms (got " + f.text(r, col) + ")");
      return v;
    };
    p.ttft_ms = measured_ms(c_ttft);
    p.tpot_ms = measured_ms(c_tpot);
    if (c_engine && !f.text(r, *c_engine).empty()) {
      p.engine = f.text(r, *c_engine);
      if (p.engine != "vllm" && p.engine != "sglang" && p.engine != "trtllm")
        throw InputError(f.where(r, *c_engine) + ": unknown engine '" + p.engine + "' (known: sglang, trtllm, vllm)");
    }
    if (c_engine_version) {
      p.engine_version = f.text(r, *c_engine_version);
      for (const char ch : p.engine_version)
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != '_' && ch != '+')
          throw InputError(f.where(r, *c_engine_version) + ": engine_version " + quote_for_message(p.engine_version) +
                           " holds a character other than letters, digits and . - _ +");
    }
    const bool weight_column = c_weight_dtype && !f.text(r, *c_weight_dtype).empty();
    if (c_dtype && !f.text(r, *c_dtype).empty() && !weight_column) {  // weight_dtype, when given, rules
      p.dtype = f.text(r, *c_dtype);  // the older column: the same values as weight_dtype (int4 rows carry it)
      if (p.dtype != "auto") parse_weight_dtype(p.dtype, f.where(r, *c_dtype));
    }
    // weight_dtype and kv_dtype: empty = the model's default ("auto": the checkpoint's
    // quantization_config, else BF16; the engine's default cache dtype). weight_dtype overrides dtype.
    if (weight_column) {
      p.dtype = f.text(r, *c_weight_dtype);
      if (p.dtype != "auto") parse_weight_dtype(p.dtype, f.where(r, *c_weight_dtype));
    }
    // aiconfigurator's quant-mode columns, read only to tell block-scaled FP8 apart (the other modes
    // follow from the weight dtype): fp8_block in either marks the row's FP8 weights block-scaled, which
    // --fp8-block-columns runs as weight_dtype fp8_block (validation_scenario).
    for (const auto& col : {c_gemm_quant, c_moe_quant}) {
      // An FP4 row's format: its scales (NVFP4 one FP8 per 16 weights, MXFP4 one E8M0 per 32) are bytes the
      // experts read; plain "fp4" is 4.0 bits, which read the measured NVFP4 expert rows 11 % fast.
      if (col && (f.text(r, *col) == "nvfp4" || f.text(r, *col) == "mxfp4") && p.dtype == "fp4") {
        if (!p.fp4_format.empty() && p.fp4_format != f.text(r, *col))
          throw InputError(f.where(r, *col) + ": " + f.text(r, *col) + " contradicts the other quant-mode column's " +
                           p.fp4_format);
        p.fp4_format = f.text(r, *col);
      }
      if (!col || f.text(r, *col) != "fp8_block") continue;
      if (p.dtype != "fp8" && p.dtype != "fp8_block" && p.dtype != "auto")
        throw InputError(f.where(r, *col) + ": fp8_block contradicts the row's weight dtype '" + p.dtype +
                         "' (fp8_block needs fp8 or auto weights)");
      p.fp8_block = true;
    }
    if (c_kv_dtype && !f.text(r, *c_kv_dtype).empty()) {
      p.kv_dtype = f.text(r, *c_kv_dtype);
      if (p.kv_dtype != "auto") parse_dtype(p.kv_dtype, f.where(r, *c_kv_dtype));
    }
    auto present = [&](const std::optional<int>& col) { return col && !f.text(r, *col).empty(); };
    if (present(c_mnbt)) p.max_num_batched_tokens = positive_int(*c_mnbt, INT32_MAX);
    if (present(c_mns)) p.max_num_seqs = static_cast<int>(positive_int(*c_mns, kMaxConcurrency));
    auto boolean = [&](int col) {
      const std::string v = f.text(r, col);
      if (v == "true" || v == "1") return true;
      if (v == "false" || v == "0") return false;
      throw InputError(f.where(r, col) + ": expected true or false (got '" + v + "')");
    };
    if (present(c_chunk)) p.enable_chunked_prefill = boolean(*c_chunk);
    if (present(c_mpt)) p.max_prefill_tokens = positive_int(*c_mpt, INT32_MAX);
    if (present(c_mixed)) p.enable_mixed_chunk = boolean(*c_mixed);
    if ((p.max_prefill_tokens || p.enable_mixed_chunk) && p.engine != "sglang")
      throw InputError(f.where(r, p.max_prefill_tokens ? *c_mpt : *c_mixed) + ": an SGLang option on a " + p.engine +
                       " row (max_prefill_tokens and enable_mixed_chunk are SGLang's)");
    if (present(c_measured)) {
      const std::string v = f.text(r, *c_measured);
      const bool iso = v.size() >= 10 && v[4] == '-' && v[7] == '-' &&
                       std::all_of(v.begin(), v.begin() + 10, [](char ch) { return std::isdigit(ch) || ch == '-'; }) &&
                       std::count(v.begin(), v.begin() + 10, '-') == 2;
      if (!iso || !valid_civil_date(std::stoi(v.substr(0, 4)), std::stoi(v.substr(5, 2)), std::stoi(v.substr(8, 2))))
        throw InputError(f.where(r, *c_measured) + ": expected a date YYYY-MM-DD[...] (got " + quote_for_message(v) +
                         ")");
      p.measured = v.substr(0, 10);
    }
    p.disagg = read_disaggregated_columns(f, r, p.gpu, p.tp, hw, hardware_dir);
    p.parallel = read_parallel_columns(f, r, p.tp, parse_engine(p.engine, f.where(r, c_tp)));
    if (p.disagg && p.parallel.any())
      throw InputError(f.where(r, c_tp) + ": a disaggregated point with dp / pp / ep / nodes columns is not modelled");
    out.push_back(p);
  }
  if (out.empty()) throw InputError(path + ": no points (a header and no data rows)");
  return out;
}

PointMeans measured_means(const RunCollector& c, int64_t first_id) {
  PointMeans m;
  double ttft = 0, tpot = 0;
  int64_t n_tpot = 0;
  for (const RequestRow& r : c.requests()) {
    if (r.id < first_id || !r.finished || r.output_tokens < 1) continue;
    ++m.requests;
    ttft += static_cast<double>((r.first_token - r.arrival).ns()) * 1e-6;
    if (r.output_tokens > 1) {
      tpot += static_cast<double>((r.finish - r.first_token).ns()) * 1e-6 / static_cast<double>(r.output_tokens - 1);
      ++n_tpot;
    }
  }
  if (m.requests > 0) m.ttft_ms = ttft / static_cast<double>(m.requests);
  if (n_tpot > 0) m.tpot_ms = tpot / static_cast<double>(n_tpot);
  return m;
}

Scenario validation_scenario(const ValidationPoint& p, const ValidationProtocol& protocol,
                             const std::string& hardware_dir, const std::string& latency_model) {
  const int64_t n = (static_cast<int64_t>(protocol.requests_per_slot) + protocol.warmup_per_slot) * p.concurrency;
  std::string y;
  y += "name: validate-line-" + std::to_string(p.line) + "\n";
  y += "model: " + yaml_quoted(p.model) + "\n";
  y += "gpu: " + p.gpu + "\n";
  y += "hardware_dir: " + yaml_quoted(hardware_dir) + "\n";
  y += "seed: 1\n";
  y += "engine:\n";
  y += "  kind: " + p.engine + "\n";
  if (!p.engine_version.empty()) y += "  version: " + yaml_quoted(p.engine_version) + "\n";
  y += "  tensor_parallel_size: " + std::to_string(p.tp) + "\n";
  std::string weight = p.fp8_block && protocol.fp8_block_columns ? std::string("fp8_block") : p.dtype;
  // `fp4` on a checkpoint stored in FP4 is that checkpoint as stored (weight_override); on any other, the
  // format the row's quant-mode column names.
  if (weight == "fp4" && !p.fp4_format.empty() && weight_override(read_model_config(p.model), DType::kFp4))
    weight = p.fp4_format;
  y += "  weight_dtype: " + weight + "\n";
  ValidationPoint q = p;  // the checkpoint's quant_method, needed only by a KV rule
  if (protocol.kv_rule != ValidationProtocol::KvRule::kColumn && p.kv_dtype == "auto")
    q.checkpoint_quant = read_model_config(p.model).quant.method;
  y += "  kv_cache_dtype: " + point_kv_dtype(q, protocol.kv_rule) + "\n";
  y += "  latency_model: " + latency_model + "\n";
  if (protocol.mla_module_rows) y += "  mla_attention: module_rows\n";
  if (protocol.mla_roofline) y += "  mla_attention: roofline\n";
  y += "  enable_prefix_caching: false\n";
  y += parallel_engine_yaml(p.parallel);
  const bool cols = protocol.use_engine_columns;
  const int max_seqs = cols && p.max_num_seqs ? *p.max_num_seqs : std::max(p.concurrency, 256);
  y += "  max_num_seqs: " + std::to_string(max_seqs) + "\n";
  if (cols) {
    // The row's columns first; where one is empty, the generator's flag (--deployment aiconfigurator).
    DeploymentFlags d{p.max_num_batched_tokens, p.enable_chunked_prefill, p.max_prefill_tokens, p.enable_mixed_chunk,
                      std::nullopt};
    if (protocol.deployment == ValidationProtocol::Deployment::kAiconfigurator) {
      const DeploymentFlags g = generator_deployment(p);
      if (!d.max_num_batched_tokens) d.max_num_batched_tokens = g.max_num_batched_tokens;
      if (!d.enable_chunked_prefill) d.enable_chunked_prefill = g.enable_chunked_prefill;
      if (!d.max_prefill_tokens) d.max_prefill_tokens = g.max_prefill_tokens;
      if (!d.enable_mixed_chunk) d.enable_mixed_chunk = g.enable_mixed_chunk;
      d.max_model_len = g.max_model_len;
    }
    const auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
    if (d.max_num_batched_tokens) y += "  max_num_batched_tokens: " + std::to_string(*d.max_num_batched_tokens) + "\n";
    if (d.enable_chunked_prefill) y += "  enable_chunked_prefill: " + flag(*d.enable_chunked_prefill) + "\n";
    if (d.max_prefill_tokens) y += "  max_prefill_tokens: " + std::to_string(*d.max_prefill_tokens) + "\n";
    if (d.enable_mixed_chunk) y += "  enable_mixed_chunk: " + flag(*d.enable_mixed_chunk) + "\n";
    if (d.max_model_len) y += "  max_model_len: " + std::to_string(*d.max_model_len) + "\n";
  }
  if (p.disagg) y += "cluster:\n" + disaggregated_cluster_yaml(*p.disagg);
  y += "workload:\n  synthetic:\n";
  y += "    kind: shared_prefix\n";
  y += "    groups: " + std::to_string(n) + "\n";
  y += "    requests_per_group: 1\n";
  y += "    prefix_tokens: 0\n";
  y += "    suffix_tokens: " + std::to_string(p.isl) + "\n";
  y += "    output_tokens: " + std::to_string(p.osl) + "\n";
  y += "    concurrency: " + std::to_string(p.concurrency + protocol.extra_clients) + "\n";
  if (protocol.turnaround_ms > 0) {
    char mean[64];
    std::snprintf(mean, sizeof mean, "%.9g", protocol.turnaround_ms * 1e-3);
    y += "    turnaround: {kind: exponential, mean: " + std::string(mean) + "}\n";
  }
  return parse_scenario(y, "validation point line " + std::to_string(p.line));
}

int run_validate_command(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "kvsim validate POINTS.csv [options]\n\nSimulate measured end-to-end points (closed loop at each point's "
      "concurrency) and report TTFT / TPOT error. Rows with prefill_workers and decode_workers (optional prefill_tp, "
      "decode_tp, topology) run as a prefill pool and a decode pool (models/latency/README.md)",
      kHelpLineLength, kHelpLineLength / 2);
  // clang-format off
  desc.add_options()
    ("help,h", "show this help")
    ("requests-per-slot", po::value<int>()->default_value(10),
     "measured requests per point = this x concurrency (genai-perf --request-count 10 x concurrency in "
     "aiconfigurator's runner); overrides the file's '# protocol:' line")
    ("warmup-per-slot", po::value<int>()->default_value(2),
     "requests sent first and excluded from the means = this x concurrency (genai-perf "
     "--warmup-request-count 2 x concurrency, overlapping the measured ones); 0 = the start-up burst is measured "
     "(the client drains its warm-up first, as aiperf and genai-perf do, and as every committed points file "
     "states in its '# protocol:' line); overrides that line; the default applies to files without one")
    ("extra-clients", po::value<int>()->default_value(0),
     "hypothesis H1 (not a measured protocol): this many clients beyond the point's concurrency, so that "
     "with max_num_seqs = concurrency they queue for a slot (see models/latency/README.md)")
    ("fp8-block-columns", po::bool_switch(),
     "run rows whose gemm_quant_mode or moe_quant_mode is fp8_block with weight_dtype fp8_block (vLLM's "
     "block-scaled FP8 rows); off by default: tested, not adopted (models/latency/README.md)")
    ("mla-module-rows", po::bool_switch(),
     "price MLA layers of the DeepSeek-V3 shape (DeepSeek-V3 / R1, Kimi-K2.5) from the measured attention-module "
     "rows (engine.mla_attention module_rows); off by default: tested, not adopted (models/latency/README.md)")
    ("mla-roofline", po::bool_switch(),
     "price every MLA and DSA layer by the roofline (engine.mla_attention roofline); by default (auto) GLM-5's DSA "
     "layers decode from their measured module rows (models/latency/README.md, \"DSA decode-module rows for GLM-5\")")
    ("engine-defaults", po::bool_switch(),
     "ignore the per-row scheduler columns (max_num_batched_tokens, max_num_seqs, enable_chunked_prefill, "
     "max_prefill_tokens, enable_mixed_chunk) and --deployment")
    ("deployment", po::value<std::string>(),
     "scheduler settings of a row whose scheduler columns are empty: engine-defaults, or aiconfigurator (the flags "
     "aiconfigurator's config generator emitted on the row's `measured` date: TRT-LLM max_num_tokens = c + isl + "
     "1500 without chunking, vLLM max_num_batched_tokens = c + isl + 1500 and max_model_len = isl + osl + 1500 "
     "from 2026-01-08, SGLang "
     "max_prefill_tokens = isl + 1500 and enable_mixed_chunk from 2026-01-19); overrides the file's "
     "'# protocol:' line (deployment=...); default engine-defaults")
    ("kv-dtype", po::value<std::string>(),
     "KV cache dtype of a row whose kv_dtype column is empty: column (the engine's default, the checkpoint's "
     "dtype), aiconfigurator (what aiconfigurator's generator passed on the row's `measured` date: none before "
     "2025-12-04, fp8 on FP8 GPUs until 2026-02-11, then fp8 for FP8 / NVFP4 weights only) or weights (fp8 for "
     "FP8 / NVFP4 weights on FP8 GPUs); overrides the file's '# protocol:' line (kv_dtype=...); default column")
    ("turnaround-ms", po::value<double>()->default_value(0.0),
     "the client's turnaround: each request reaches the engine this long on average (exponential) after its slot "
     "is free, each slot on its own (workload.synthetic.turnaround); 0 = every free slot refilled at once; "
     "tested, not adopted (models/latency/README.md)")
    ("client-ttft-ms", po::value<std::string>(),
     "added to every simulated TTFT: what the client's TTFT holds beyond the engine's (HTTP request, request "
     "handling, first SSE chunk), ms; overrides the file's '# protocol:' line (client_ttft_ms=...), whose "
     "committed sets state 11.6 (vLLM PR #54628's client - server TTFT, openai-chat; models/latency/README.md, "
     "\"Client-side TTFT\"); default 0")
    ("latency-model", po::value<std::string>()->default_value("calibrated"), "calibrated | roofline")
    ("explain", "after each point, the step table of `kvsim step` for its steady decode step (its concurrency over "
     "the engines that decode it, each request at isl + osl / 2 cached) and one whole-prompt prefill step: what "
     "the predicted TPOT and TTFT are made of, operator by operator")
    ("hardware-dir", po::value<std::string>()->default_value(kDefaultHardwareDir), "hardware catalog directory")
    ("points", po::value<std::string>(), "the CSV of measured points (positional)");
  // clang-format on
  po::positional_options_description pos;
  pos.add("points", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string("validate: ") + e.what());
  }
  if (vm.count("help")) {
    out << desc << "\n";
    return 0;
  }
  if (!vm.count("points"))
    throw InputError("validate: no points file given (try: kvsim validate models/latency/validation.csv)");
  ValidationProtocol protocol;
  protocol.requests_per_slot = vm["requests-per-slot"].as<int>();
  protocol.warmup_per_slot = vm["warmup-per-slot"].as<int>();
  protocol.use_engine_columns = !vm["engine-defaults"].as<bool>();
  if (protocol.requests_per_slot < 1 || protocol.requests_per_slot > kMaxPerSlot)
    throw InputError("--requests-per-slot must be in [1, " + std::to_string(kMaxPerSlot) + "]");
  if (protocol.warmup_per_slot < 0 || protocol.warmup_per_slot > kMaxPerSlot)
    throw InputError("--warmup-per-slot must be in [0, " + std::to_string(kMaxPerSlot) + "]");
  protocol.extra_clients = vm["extra-clients"].as<int>();
  protocol.fp8_block_columns = vm["fp8-block-columns"].as<bool>();
  protocol.mla_module_rows = vm["mla-module-rows"].as<bool>();
  protocol.mla_roofline = vm["mla-roofline"].as<bool>();
  if (protocol.mla_module_rows && protocol.mla_roofline)
    throw InputError("--mla-module-rows and --mla-roofline: choose one");
  protocol.turnaround_ms = vm["turnaround-ms"].as<double>();
  if (!(protocol.turnaround_ms >= 0 && protocol.turnaround_ms <= 1e6))
    throw InputError("--turnaround-ms must be in [0, 1e6]");
  if (protocol.extra_clients < 0 || protocol.extra_clients > kMaxConcurrency)
    throw InputError("--extra-clients must be in [0, " + std::to_string(kMaxConcurrency) + "]");
  if (vm.count("deployment"))
    protocol.deployment = parse_deployment(vm["deployment"].as<std::string>(), "--deployment");
  if (vm.count("kv-dtype")) protocol.kv_rule = parse_kv_rule(vm["kv-dtype"].as<std::string>(), "--kv-dtype");
  if (vm.count("client-ttft-ms"))
    protocol.client_ttft_ms = parse_client_ttft_ms(vm["client-ttft-ms"].as<std::string>(), "--client-ttft-ms");
  const std::string lm = vm["latency-model"].as<std::string>();
  const bool explain = vm.count("explain") > 0;
  if (lm != "calibrated" && lm != "roofline")
    throw InputError("--latency-model: unknown model '" + lm + "' (known: calibrated, roofline)");
  const std::string hw = vm["hardware-dir"].as<std::string>();
  const std::string path = vm["points"].as<std::string>();
  const auto points = read_validation_points(path, hw);
  const std::string client =
      read_protocol_directive(path, protocol, !vm["warmup-per-slot"].defaulted(), !vm["requests-per-slot"].defaulted(),
                              vm.count("deployment") > 0, vm.count("kv-dtype") > 0, vm.count("client-ttft-ms") > 0);

  std::vector<Row> rows;
  std::vector<int> excluded;  // lines of points with no finished request
  std::vector<int> capped;    // lines of points whose isl + osl exceed max_model_len (not run)
  char buf[320];
  std::snprintf(buf, sizeof buf, "%-5s %-28s %-10s %-6s %2s %5s %5s %4s %9s %9s %7s %8s %8s %7s\n", "line", "model",
                "gpu", "engine", "tp", "isl", "osl", "conc", "ttft_ms", "pred", "err%", "tpot_ms", "pred", "err%");
  out << buf;
  for (const auto& p : points) {
    Scenario s;
    SimulationResult r;
    int64_t max_len = 0;
    try {
      s = validation_scenario(p, protocol, hw, lm);
      max_len = resolve_engine_config(s, read_model_config(s.model)).max_model_len;
      // A prompt that fits but an output beyond the context: the engine caps the output (vLLM's max_tokens
      // clamp), so its TPOT would be of fewer than osl tokens. Excluded below without running. (A prompt
      // of max_model_len or more is rejected by the engine: excluded as no request finished.)
      if (p.isl >= max_len || p.isl + p.osl <= max_len) r = run_simulation(s);
    } catch (const InputError& e) {
      throw InputError(path + ":" + std::to_string(p.line) + ": " + e.what());
    }
    std::string name = p.model.substr(p.model.find_last_of('/') + 1);
    if (name.size() > 5 && name.substr(name.size() - 5) == ".json") name.resize(name.size() - 5);
    if (p.isl < max_len && p.isl + p.osl > max_len) {
      std::snprintf(buf, sizeof buf,
                    "%-5d %-28s %-10s %-6s %2d %5lld %5lld %4d %9.1f excluded: isl + osl exceed max_model_len %lld "
                    "(the output would be capped)\n",
                    p.line, name.c_str(), p.gpu.c_str(), p.engine.c_str(), p.tp, static_cast<long long>(p.isl),
                    static_cast<long long>(p.osl), p.concurrency, p.ttft_ms, static_cast<long long>(max_len));
      out << buf;
      capped.push_back(p.line);
      continue;
    }
    Row row;
    row.p = p;
    row.cls = model_class(r.model);
    const int64_t first_id = static_cast<int64_t>(protocol.warmup_per_slot) * p.concurrency;
    const PointMeans m = measured_means(*r.collector, first_id);
    row.ttft = m.ttft_ms + protocol.client_ttft_ms;
    row.tpot = m.tpot_ms;
    if (m.requests == 0) {
      // Nothing measured (every request rejected): no prediction, so no error in the medians.
      std::string why;
      for (int k = 1; k < kNumRejectReasons; ++k)
        if (r.summary.requests.rejected[static_cast<size_t>(k)] > 0)
          why += (why.empty() ? "" : ", ") + std::string(reject_reason_name(static_cast<RejectReason>(k)));
      std::snprintf(buf, sizeof buf,
                    "%-5d %-28s %-10s %-6s %2d %5lld %5lld %4d %9.1f excluded: no request finished%s\n", p.line,
                    name.c_str(), p.gpu.c_str(), p.engine.c_str(), p.tp, static_cast<long long>(p.isl),
                    static_cast<long long>(p.osl), p.concurrency, p.ttft_ms,
                    why.empty() ? "" : (" (rejected: " + why + ")").c_str());
      out << buf;
      excluded.push_back(p.line);
      continue;
    }
    std::snprintf(buf, sizeof buf, "%-5d %-28s %-10s %-6s %2d %5lld %5lld %4d %9.1f %9.1f %+7.1f %8.2f %8.2f %+7.1f",
                  p.line, name.c_str(), p.gpu.c_str(), p.engine.c_str(), p.tp, static_cast<long long>(p.isl),
                  static_cast<long long>(p.osl), p.concurrency, p.ttft_ms, row.ttft,
                  (row.ttft - p.ttft_ms) / p.ttft_ms * 100, p.tpot_ms, row.tpot,
                  (row.tpot - p.tpot_ms) / p.tpot_ms * 100);
    out << buf << (p.disagg ? disaggregated_suffix(*p.disagg, *r.collector, first_id) : "")
        << parallel_suffix(p.parallel, p.tp) << "\n";
    if (explain) explain_point(s, p, out);
    rows.push_back(row);
  }
  out << "\nabsolute relative error (%), " << protocol.warmup_per_slot << " + " << protocol.requests_per_slot
      << " x concurrency requests per point (warm-up excluded"
      << (client.empty() ? "; command-line / default protocol" : "; protocol of the file: " + client) << "), "
      << (!protocol.use_engine_columns ? "engine default scheduler settings"
          : protocol.deployment == ValidationProtocol::Deployment::kAiconfigurator
              ? "per-row scheduler settings, else aiconfigurator's generator flags at the measured date"
              : "per-row scheduler settings")
      << (protocol.kv_rule == ValidationProtocol::KvRule::kAiconfigurator ? ", KV dtype of empty kv_dtype cells "
                                                                            "from aiconfigurator's generator"
          : protocol.kv_rule == ValidationProtocol::KvRule::kWeights      ? ", FP8 KV cache for FP8 / NVFP4 weights"
                                                                          : "")
      << (protocol.extra_clients > 0 ? ", " + std::to_string(protocol.extra_clients) + " extra client(s) (H1)" : "")
      << (protocol.client_ttft_ms > 0
              ? ", client TTFT overhead " + format_client_ttft_ms(protocol.client_ttft_ms) + " ms"
              : "")
      << ", latency model " << lm << "\n";
  std::snprintf(buf, sizeof buf, "%-18s %6s %12s %10s %12s %10s\n", "class", "points", "TTFT median", "TTFT p90",
                "TPOT median", "TPOT p90");
  out << buf;
  std::map<std::string, std::vector<const Row*>> by_class;
  std::vector<const Row*> all;
  for (const Row& r : rows) {
    by_class[r.cls].push_back(&r);
    all.push_back(&r);
  }
  for (const auto& [cls, v] : by_class) print_summary(cls, v, out);
  if (!all.empty()) print_summary("all", all, out);
  if (!excluded.empty()) {
    out << "excluded " << excluded.size() << " point(s) with no finished request, lines";
    for (int line : excluded) out << " " << line;
    out << "\n";
  }
  if (!capped.empty()) {
    out << "excluded " << capped.size() << " point(s) whose isl + osl exceed max_model_len, lines";
    for (int line : capped) out << " " << line;
    out << "\n";
  }
  return 0;
}

}  // namespace kvsim
