#include "sim/perf/latency_tables.h"

#include <algorithm>
#include <filesystem>

#include "sim/core/errors.h"
#include "sim/perf/csv_file.h"

namespace kvsim {
namespace fs = std::filesystem;

namespace {

std::vector<AttentionPoint> read_attention(const std::string& path, const char* length_col) {
  std::vector<AttentionPoint> out;
  if (!fs::exists(path)) return out;
  const CsvFile f = read_csv_file(path);
  const int b = f.column("batch"), l = f.column(length_col), h = f.column("num_heads"), kv = f.column("num_kv_heads"),
            hd = f.column("head_dim"), w = f.column("window"), t = f.column("latency_ms");
  for (size_t r = 0; r < f.rows.size(); ++r) {
    AttentionPoint p;
    p.batch = f.number(r, b);
    p.length = f.number(r, l);
    p.num_heads = static_cast<int>(f.number(r, h));
    p.num_kv_heads = static_cast<int>(f.number(r, kv));
    p.head_dim = static_cast<int>(f.number(r, hd));
    p.window = static_cast<int>(f.number(r, w));
    p.seconds = f.number(r, t) * 1e-3;
    out.push_back(p);
  }
  return out;
}

}  // namespace

LatencyTables load_latency_tables(const std::string& root, const std::string& gpu) {
  LatencyTables t;
  t.gpu = gpu;
  const fs::path dir = fs::path(root) / gpu;
  if (!fs::is_directory(dir)) return t;
  t.dir = dir.string();
  if (const std::string p = (dir / "gemm.csv").string(); fs::exists(p)) {
    const CsvFile f = read_csv_file(p);
    const int m = f.column("m"), n = f.column("n"), k = f.column("k"), lat = f.column("latency_ms");
    for (size_t r = 0; r < f.rows.size(); ++r)
      t.gemm.push_back({f.number(r, m), f.number(r, n), f.number(r, k), f.number(r, lat) * 1e-3});
  }
  t.context_attention = read_attention((dir / "context_attention.csv").string(), "isl");
  t.generation_attention = read_attention((dir / "generation_attention.csv").string(), "context");
  if (const std::string p = (dir / "allreduce.csv").string(); fs::exists(p)) {
    const CsvFile f = read_csv_file(p);
    const int g = f.column("num_gpus"), b = f.column("message_bytes"), lat = f.column("latency_ms");
    for (size_t r = 0; r < f.rows.size(); ++r)
      t.allreduce.push_back({static_cast<int>(f.number(r, g)), f.number(r, b), f.number(r, lat) * 1e-3});
  }
  if (const std::string p = (dir / "moe.csv").string(); fs::exists(p)) {
    const CsvFile f = read_csv_file(p);
    const int nt = f.column("num_tokens"), h = f.column("hidden"), i = f.column("inter"), k = f.column("topk"),
              e = f.column("num_experts"), tp = f.column("moe_tp"), ep = f.column("moe_ep"),
              lat = f.column("latency_ms");
    for (size_t r = 0; r < f.rows.size(); ++r) {
      MoePoint p2;
      p2.num_tokens = f.number(r, nt);
      p2.hidden = f.number(r, h);
      p2.inter = f.number(r, i);
      p2.topk = static_cast<int>(f.number(r, k));
      p2.num_experts = static_cast<int>(f.number(r, e));
      p2.moe_tp = static_cast<int>(f.number(r, tp));
      p2.moe_ep = static_cast<int>(f.number(r, ep));
      p2.seconds = f.number(r, lat) * 1e-3;
      t.moe.push_back(p2);
    }
  }
  return t;
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
            src = f.column("source");
  for (size_t r = 0; r < f.rows.size(); ++r) {
    EngineOverhead o;
    o.engine = f.text(r, e);
    o.c0_s = f.number(r, c0) * 1e-3;
    o.c1_s = f.number(r, c1) * 1e-3;
    if (o.c0_s < 0 || o.c1_s < 0) throw InputError(f.where(r, c0) + ": overhead must be >= 0");
    o.source = f.text(r, src);
    out[o.engine] = o;
  }
  return out;
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
