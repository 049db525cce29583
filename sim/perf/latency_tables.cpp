#include "sim/perf/latency_tables.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <filesystem>

#include "sim/core/errors.h"
#include "sim/perf/csv_file.h"

namespace kvsim {
namespace fs = std::filesystem;

namespace {

// Every table value is range-checked where it is read: a zero latency, size or divisor would
// otherwise reach a fit or an interpolation as a division by zero (an invariant failure or a NaN
// step time) instead of an error naming the file, line and column.
// Sizes and counts: in [1e-6, 1e12]. Beyond, a fit divided by 1e308 printed NaN and a step of 1e308 ms exited
// with no file named.
double bounded(const CsvFile& f, size_t r, int col, double hi, const char* hi_text) {
  const double v = f.number(r, col);
  if (!(v > 0)) throw InputError(f.where(r, col) + ": must be > 0 (got " + f.text(r, col) + ")");
  if (!(v >= 1e-6 && v <= hi))
    throw InputError(f.where(r, col) + ": must be in [1e-6, " + hi_text + "] (got " + f.text(r, col) + ")");
  return v;
}
double positive(const CsvFile& f, size_t r, int col) { return bounded(f, r, col, 1e12, "1e12"); }
// A latency in ms: at most 1e6 (1,000 s for one operator).
double latency_ms(const CsvFile& f, size_t r, int col) { return bounded(f, r, col, 1e6, "1e6"); }

int whole(const CsvFile& f, size_t r, int col, int lo) {
  const double v = f.number(r, col);
  if (v < lo || v > INT_MAX || v != std::floor(v))
    throw InputError(f.where(r, col) + ": must be a whole number >= " + std::to_string(lo) + " (got " + f.text(r, col) +
                     ")");
  return static_cast<int>(v);
}

std::vector<AttentionPoint> read_attention(const std::string& path, const char* length_col) {
  std::vector<AttentionPoint> out;
  if (!fs::exists(path)) return out;
  const CsvFile f = read_csv_file(path);
  const int b = f.column("batch"), l = f.column(length_col), h = f.column("num_heads"), kv = f.column("num_kv_heads"),
            hd = f.column("head_dim"), w = f.column("window"), t = f.column("latency_ms");
  for (size_t r = 0; r < f.rows.size(); ++r) {
    AttentionPoint p;
    p.batch = positive(f, r, b);
    p.length = positive(f, r, l);
    p.num_heads = whole(f, r, h, 1);
    p.num_kv_heads = whole(f, r, kv, 1);
    p.head_dim = whole(f, r, hd, 1);
    p.window = whole(f, r, w, 0);
    p.seconds = latency_ms(f, r, t) * 1e-3;
    out.push_back(p);
  }
  return out;
}

std::vector<GemmPoint> read_gemm(const std::string& path) {
  std::vector<GemmPoint> out;
  if (!fs::exists(path)) return out;
  const CsvFile f = read_csv_file(path);
  const int m = f.column("m"), n = f.column("n"), k = f.column("k"), lat = f.column("latency_ms");
  for (size_t r = 0; r < f.rows.size(); ++r)
    out.push_back({positive(f, r, m), positive(f, r, n), positive(f, r, k), latency_ms(f, r, lat) * 1e-3});
  return out;
}

// `distribution` non-empty: only the rows whose distribution column holds it (power-law files).
std::vector<MoePoint> read_moe(const std::string& path, const std::string& distribution = "") {
  std::vector<MoePoint> out;
  if (!fs::exists(path)) return out;
  const CsvFile f = read_csv_file(path);
  const int nt = f.column("num_tokens"), h = f.column("hidden"), i = f.column("inter"), k = f.column("topk"),
            e = f.column("num_experts"), tp = f.column("moe_tp"), ep = f.column("moe_ep"), lat = f.column("latency_ms");
  const int dist = distribution.empty() ? -1 : f.column("distribution");
  for (size_t r = 0; r < f.rows.size(); ++r) {
    if (dist >= 0 && f.text(r, dist) != distribution) continue;
    MoePoint p;
    p.num_tokens = positive(f, r, nt);
    p.hidden = positive(f, r, h);
    p.inter = positive(f, r, i);
    p.topk = whole(f, r, k, 1);
    p.num_experts = whole(f, r, e, 1);
    p.moe_tp = whole(f, r, tp, 1);
    p.moe_ep = whole(f, r, ep, 1);
    p.seconds = latency_ms(f, r, lat) * 1e-3;
    out.push_back(p);
  }
  return out;
}

// A batch x length grid of one layer's module or kernels (MlaModulePoint): `key_col` names the shape or
// format, `kv_col` the cache dtype ("" for none), `heads_col` the local heads.
std::vector<MlaModulePoint> read_grid(const std::string& path, const char* key_col, const char* kv_col,
                                      const char* heads_col, const char* length_col) {
  std::vector<MlaModulePoint> out;
  if (!fs::exists(path)) return out;
  const CsvFile f = read_csv_file(path);
  const int g = f.column(key_col), kv = *kv_col ? f.column(kv_col) : -1, h = f.column(heads_col), b = f.column("batch"),
            l = f.column(length_col), t = f.column("latency_ms");
  for (size_t r = 0; r < f.rows.size(); ++r) {
    MlaModulePoint p;
    p.gemm = f.text(r, g);
    if (kv >= 0) p.kv_dtype = f.text(r, kv);
    p.num_heads = whole(f, r, h, 1);
    p.batch = positive(f, r, b);
    p.length = positive(f, r, l);
    p.seconds = latency_ms(f, r, t) * 1e-3;
    out.push_back(p);
  }
  return out;
}

std::vector<MlaModulePoint> read_mla(const std::string& path, const char* length_col) {
  return read_grid(path, "gemm", "kv_dtype", "num_heads", length_col);
}

}  // namespace

LatencyTables load_latency_tables(const std::string& root, const std::string& gpu, const std::string& moe_routing) {
  LatencyTables t;
  t.gpu = gpu;
  const fs::path dir = fs::path(root) / gpu;
  if (!fs::is_directory(dir)) return t;
  t.dir = dir.string();
  t.gemm = read_gemm((dir / "gemm.csv").string());
  t.gemm_fp8 = read_gemm((dir / "gemm_fp8.csv").string());
  t.gemm_fp8_block = read_gemm((dir / "gemm_fp8_block.csv").string());
  t.gemm_nvfp4 = read_gemm((dir / "gemm_nvfp4.csv").string());
  t.context_attention = read_attention((dir / "context_attention.csv").string(), "isl");
  t.gdn_context = read_grid((dir / "gdn_context.csv").string(), "shape", "", "num_v_heads", "tokens");
  t.gdn_generation = read_grid((dir / "gdn_generation.csv").string(), "shape", "", "num_v_heads", "tokens");
  t.generation_attention = read_attention((dir / "generation_attention.csv").string(), "context");
  if (const std::string p = (dir / "allreduce.csv").string(); fs::exists(p)) {
    const CsvFile f = read_csv_file(p);
    const int g = f.column("num_gpus"), b = f.column("message_bytes"), lat = f.column("latency_ms");
    for (size_t r = 0; r < f.rows.size(); ++r)
      t.allreduce.push_back({whole(f, r, g, 1), positive(f, r, b), latency_ms(f, r, lat) * 1e-3});
  }
  // Each MoE table under the requested routing: its power-law rows where the GPU has them, else balanced.
  for (auto [rows, name] : {std::pair{&t.moe, "moe"},
                            {&t.moe_fp8, "moe_fp8"},
                            {&t.moe_fp8_block, "moe_fp8_block"},
                            {&t.moe_nvfp4, "moe_nvfp4"},
                            {&t.moe_int4, "moe_int4"},
                            {&t.moe_mxfp4, "moe_mxfp4"}}) {
    if (moe_routing != "balanced")
      *rows = read_moe((dir / (std::string(name) + "_power_law.csv")).string(), moe_routing);
    if (rows->empty()) *rows = read_moe((dir / (std::string(name) + ".csv")).string());
  }
  return t;
}

LatencyTables with_mla_module_rows(LatencyTables t) {
  if (t.dir.empty()) return t;
  t.mla_context = read_mla((fs::path(t.dir) / "mla_context.csv").string(), "isl");
  t.mla_generation = read_mla((fs::path(t.dir) / "mla_generation.csv").string(), "context");
  return with_dsa_module_rows(std::move(t));
}

LatencyTables with_dsa_module_rows(LatencyTables t) {
  if (t.dir.empty()) return t;
  t.dsa_generation = read_mla((fs::path(t.dir) / "dsa_generation.csv").string(), "context");
  return t;
}

LatencyTables with_block_fp8_rows(LatencyTables t) {
  if (!t.gemm_fp8_block.empty()) t.gemm_fp8 = std::move(t.gemm_fp8_block);
  if (!t.moe_fp8_block.empty()) t.moe_fp8 = std::move(t.moe_fp8_block);
  t.gemm_fp8_block.clear();
  t.moe_fp8_block.clear();
  return t;
}

std::string resolve_moe_routing(const std::string& setting, const std::string& architecture, const std::string& key) {
  if (setting == "balanced" || setting == "power_law_1.01" || setting == "power_law_1.2") return setting;
  if (setting != "auto")
    throw InputError(key + ": unknown MoE routing " + quote_for_message(setting) +
                     " (known: auto, balanced, power_law_1.01, power_law_1.2)");
  // aiconfigurator sdk/common.py ARCHITECTURE_TO_MODEL_FAMILY and each family's _power_law_alpha
  // (models/deepseek.py, deepseek_v32.py, deepseek_v4.py, nemotron_h.py, minimax_m3.py, hybrid_moe.py,
  // gemma4.py: 1.01; models/moe.py and qwen35.py: 1.2).
  static const char* const kAlpha101[] = {
      "DeepSeekForCausalLM",    "DeepseekV3ForCausalLM",          "DeepseekV32ForCausalLM",
      "GlmMoeDsaForCausalLM",   "DeepseekV4ForCausalLM",          "KimiK25ForConditionalGeneration",
      "NemotronHForCausalLM",   "MiniMaxM3ForCausalLM",           "MiniMaxM3SparseForConditionalGeneration",
      "MiMoV2FlashForCausalLM", "Llama4ForConditionalGeneration", "Gemma4ForConditionalGeneration"};
  for (const char* a : kAlpha101)
    if (architecture == a) return "power_law_1.01";
  return "power_law_1.2";
}

std::vector<std::string> gpus_with_tables(const std::string& root) {
  std::vector<std::string> out;
  if (!fs::is_directory(root)) return out;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && fs::exists(e.path() / "gemm.csv")) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, EngineOverhead> load_engine_overheads(const std::string& root) {
  std::map<std::string, EngineOverhead> out;
  const std::string path = (fs::path(root) / "overhead.csv").string();
  const CsvFile f = read_csv_file(path);
  const int e = f.column("engine"), c0 = f.column("c0_ms"), c1 = f.column("c1_ms_per_request"),
            src = f.column("source"), eager = f.column("eager_prefill_ms_per_layer"),
            before = f.column("eager_prefill_before");
  for (size_t r = 0; r < f.rows.size(); ++r) {
    EngineOverhead o;
    o.engine = f.text(r, e);
    o.c0_s = f.number(r, c0) * 1e-3;
    o.c1_s = f.number(r, c1) * 1e-3;
    if (!(o.c0_s >= 0 && o.c0_s <= 1e3)) throw InputError(f.where(r, c0) + ": overhead must be in [0, 1e6] ms");
    if (!(o.c1_s >= 0 && o.c1_s <= 1e3)) throw InputError(f.where(r, c1) + ": overhead must be in [0, 1e6] ms");
    o.eager_prefill_per_layer_s = f.number(r, eager) * 1e-3;
    if (!(o.eager_prefill_per_layer_s >= 0 && o.eager_prefill_per_layer_s <= 1e3))
      throw InputError(f.where(r, eager) + ": must be in [0, 1e6] ms");
    o.eager_prefill_before = f.text(r, before);
    if (o.eager_prefill_per_layer_s > 0 && o.eager_prefill_before.empty())
      throw InputError(f.where(r, before) + ": the release the eager-prefill floor ends with is missing");
    o.source = f.text(r, src);
    // One row per engine: a second would silently replace the first.
    if (!out.emplace(o.engine, o).second)
      throw InputError(f.where(r, e) + ": engine '" + o.engine + "' has a row already");
  }
  return out;
}

namespace {
// The leading dotted numbers of a release name: "0.5.10.post1" -> {0, 5, 10}; "nightly-dev" -> {}.
std::vector<int> release_numbers(const std::string& v) {
  std::vector<int> out;
  size_t i = 0;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
    int n = 0;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])) && n < 100000) n = n * 10 + (v[i++] - '0');
    out.push_back(n);
    if (i < v.size() && v[i] == '.' && i + 1 < v.size() && std::isdigit(static_cast<unsigned char>(v[i + 1])))
      ++i;
    else
      break;
  }
  return out;
}
}  // namespace

bool version_before(const std::string& version, const std::string& before) {
  const std::vector<int> a = release_numbers(version), b = release_numbers(before);
  if (a.empty() || b.empty()) return false;
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

EngineOverhead overhead_for_version(EngineOverhead o, const std::string& version) {
  if (!version_before(version, o.eager_prefill_before)) o.eager_prefill_per_layer_s = 0;
  return o;
}

EngineOverhead engine_overhead(const std::string& root, const std::string& engine) {
  const auto all = load_engine_overheads(root);
  auto it = all.find(engine);
  if (it == all.end()) {
    std::string known;
    for (const auto& [k, v] : all) known += (known.empty() ? "" : ", ") + k;
    throw InputError(root + "/overhead.csv: no overhead for engine '" + engine + "' (known: " + known + ")");
  }
  return it->second;
}

}  // namespace kvsim
