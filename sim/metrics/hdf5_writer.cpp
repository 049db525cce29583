#include "sim/metrics/hdf5_writer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <system_error>

#include "sim/metrics/hdf5_handles.h"

namespace kvsim {
namespace {

using h5::check_id;
using h5::check_rc;
using h5::Handle;

constexpr hsize_t kChunkRows = 65536;
constexpr unsigned kDeflateLevel = 4;

template <typename T>
struct TypeOf;
template <>
struct TypeOf<double> {
  static hid_t memory() { return H5T_NATIVE_DOUBLE; }
  static hid_t file() { return H5T_IEEE_F64LE; }
};
template <>
struct TypeOf<int64_t> {
  static hid_t memory() { return H5T_NATIVE_INT64; }
  static hid_t file() { return H5T_STD_I64LE; }
};
template <>
struct TypeOf<uint8_t> {
  static hid_t memory() { return H5T_NATIVE_UINT8; }
  static hid_t file() { return H5T_STD_U8LE; }
};
template <>
struct TypeOf<uint64_t> {
  static hid_t memory() { return H5T_NATIVE_UINT64; }
  static hid_t file() { return H5T_STD_U64LE; }
};

class Writer {
 public:
  explicit Writer(std::string path) : path_(std::move(path)) {}

  Handle create_file() {
    Handle fcpl(check_id(H5Pcreate(H5P_FILE_CREATE), "H5Pcreate", path_), H5Pclose);
    return Handle(check_id(H5Fcreate(path_.c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT), "create file", path_),
                  H5Fclose);
  }

  Handle group(hid_t parent, const char* name) {
    Handle gcpl(check_id(H5Pcreate(H5P_GROUP_CREATE), "H5Pcreate", path_), H5Pclose);
    check_rc(H5Pset_obj_track_times(gcpl.get(), 0), "H5Pset_obj_track_times", path_);
    return Handle(check_id(H5Gcreate2(parent, name, H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), name, path_), H5Gclose);
  }

  // A 1-D dataset, chunked and deflated when it has rows and deflate is available.
  template <typename T>
  Handle column(hid_t group, const char* name, const std::vector<T>& data, const char* units = nullptr) {
    const hsize_t n = data.size();
    Handle space(check_id(H5Screate_simple(1, &n, nullptr), "H5Screate_simple", path_), H5Sclose);
    Handle dcpl(check_id(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", path_), H5Pclose);
    check_rc(H5Pset_obj_track_times(dcpl.get(), 0), "H5Pset_obj_track_times", path_);
    if (n > 0 && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
      const hsize_t chunk = std::min(n, kChunkRows);
      check_rc(H5Pset_chunk(dcpl.get(), 1, &chunk), "H5Pset_chunk", path_);
      check_rc(H5Pset_shuffle(dcpl.get()), "H5Pset_shuffle", path_);
      check_rc(H5Pset_deflate(dcpl.get(), kDeflateLevel), "H5Pset_deflate", path_);
    }
    Handle ds(check_id(H5Dcreate2(group, name, TypeOf<T>::file(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                       std::string("create dataset ") + name, path_),
              H5Dclose);
    if (n > 0) {
      check_rc(H5Dwrite(ds.get(), TypeOf<T>::memory(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()),
               std::string("write dataset ") + name, path_);
    }
    if (units != nullptr) string_attribute(ds.get(), "units", units);
    return ds;
  }

  void string_attribute(hid_t obj, const char* name, const std::string& value) {
    Handle type = h5::vlen_string_type(path_);
    Handle space(check_id(H5Screate(H5S_SCALAR), "H5Screate", path_), H5Sclose);
    Handle attr(check_id(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                         std::string("create attribute ") + name, path_),
                H5Aclose);
    const char* p = value.c_str();
    check_rc(H5Awrite(attr.get(), type.get(), &p), std::string("write attribute ") + name, path_);
  }

  template <typename T>
  void scalar_attribute(hid_t obj, const char* name, T value) {
    Handle space(check_id(H5Screate(H5S_SCALAR), "H5Screate", path_), H5Sclose);
    Handle attr(check_id(H5Acreate2(obj, name, TypeOf<T>::file(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                         std::string("create attribute ") + name, path_),
                H5Aclose);
    check_rc(H5Awrite(attr.get(), TypeOf<T>::memory(), &value), std::string("write attribute ") + name, path_);
  }

 private:
  std::string path_;
};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double time_or_nan(SimTime t, SimTime arrival, bool reached) { return reached && t >= arrival ? t.seconds() : kNaN; }

template <typename Row, typename F>
auto column_of(const std::vector<Row>& rows, F f) {
  std::vector<decltype(f(rows.front()))> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(f(r));
  return out;
}

void write_requests(Writer& w, hid_t file, const RunCollector& c, const RunSummary& summary) {
  Handle g = w.group(file, "requests");
  const auto& rows = c.requests();
  using R = RequestRow;
  auto i64 = [](auto v) { return static_cast<int64_t>(v); };
  w.column(g.get(), "id", column_of(rows, [](const R& r) { return r.id; }));
  w.column(g.get(), "arrival_s", column_of(rows, [](const R& r) { return r.arrival.seconds(); }), "s");
  w.column(g.get(), "first_scheduled_s",
           column_of(rows, [](const R& r) { return r.first_scheduled ? r.first_scheduled->seconds() : kNaN; }), "s");
  w.column(g.get(), "first_token_s",
           column_of(rows, [](const R& r) { return time_or_nan(r.first_token, r.arrival, r.output_tokens > 0); }), "s");
  w.column(g.get(), "finish_s",
           column_of(rows, [](const R& r) { return time_or_nan(r.finish, r.arrival, r.finished); }), "s");
  w.column(g.get(), "prompt_tokens", column_of(rows, [](const R& r) { return r.prompt_tokens; }));
  w.column(g.get(), "output_tokens", column_of(rows, [](const R& r) { return r.output_tokens; }));
  w.column(g.get(), "requested_output_tokens", column_of(rows, [](const R& r) { return r.requested_output_tokens; }));
  w.column(g.get(), "matched_tokens", column_of(rows, [](const R& r) { return r.matched_tokens; }));
  w.column(g.get(), "cached_tokens", column_of(rows, [](const R& r) { return r.cached_tokens; }));
  w.column(g.get(), "lost_tokens", column_of(rows, [](const R& r) { return r.lost_tokens; }));
  Handle cause =
      w.column(g.get(), "miss_cause", column_of(rows, [](const R& r) { return static_cast<uint8_t>(r.cause); }));
  std::string names;
  for (int i = 0; i < kNumMissCauses; ++i) {
    if (i > 0) names += ",";
    names += miss_cause_name(static_cast<MissCause>(i));
  }
  w.string_attribute(cause.get(), "names", names);
  w.column(g.get(), "preemptions", column_of(rows, [&](const R& r) { return i64(r.preemptions); }));
  w.column(g.get(), "finished", column_of(rows, [](const R& r) { return static_cast<uint8_t>(r.finished ? 1 : 0); }));
  w.column(g.get(), "instance", column_of(rows, [&](const R& r) { return i64(r.instance); }));
  Handle pool = w.column(g.get(), "pool", column_of(rows, [&](const R& r) { return i64(r.pool); }));
  std::string pools;
  for (const PoolSummary& p : summary.pools) pools += (pools.empty() ? "" : ",") + p.info.name;
  w.string_attribute(pool.get(), "names", pools.empty() ? "default" : pools);
  w.column(g.get(), "prefix_queries_blocks", column_of(rows, [](const R& r) { return r.prefix_queries_blocks; }));
  w.column(g.get(), "prefix_hits_blocks", column_of(rows, [](const R& r) { return r.prefix_hits_blocks; }));
  w.column(g.get(), "saved_state_positions", c.saved_state_positions());
  w.column(g.get(), "saved_state_offsets", c.saved_state_offsets());
}

void write_steps(Writer& w, hid_t file, const RunCollector& c) {
  Handle g = w.group(file, "steps");
  const auto& rows = c.steps();
  using S = StepRecord;
  auto i64 = [](auto v) { return static_cast<int64_t>(v); };
  w.column(g.get(), "start_s", column_of(rows, [](const S& s) { return s.start.seconds(); }), "s");
  w.column(g.get(), "end_s", column_of(rows, [](const S& s) { return s.end.seconds(); }), "s");
  w.column(g.get(), "num_prefill_requests", column_of(rows, [&](const S& s) { return i64(s.num_prefill_requests); }));
  w.column(g.get(), "num_decode_requests", column_of(rows, [&](const S& s) { return i64(s.num_decode_requests); }));
  w.column(g.get(), "num_prefill_tokens", column_of(rows, [](const S& s) { return s.num_prefill_tokens; }));
  w.column(g.get(), "num_decode_tokens", column_of(rows, [](const S& s) { return s.num_decode_tokens; }));
  w.column(g.get(), "running", column_of(rows, [&](const S& s) { return i64(s.running); }));
  w.column(g.get(), "waiting", column_of(rows, [&](const S& s) { return i64(s.waiting); }));
  w.column(g.get(), "kv_blocks_used", column_of(rows, [](const S& s) { return s.kv_blocks_used; }));
  w.column(g.get(), "kv_blocks_cached", column_of(rows, [](const S& s) { return s.kv_blocks_cached; }));
  w.column(g.get(), "preemptions", column_of(rows, [&](const S& s) { return i64(s.preemptions); }));
  w.column(g.get(), "instance", column_of(rows, [&](const S& s) { return i64(s.instance); }));
}

void write_timeseries(Writer& w, hid_t file, const RunCollector& c, const RunSummary& summary) {
  Handle g = w.group(file, "timeseries");
  const TimeSeries ts = c.timeseries();
  w.column(g.get(), "time_s", ts.time_s, "s");
  w.column(g.get(), "running", ts.running);
  w.column(g.get(), "waiting", ts.waiting);
  w.column(g.get(), "kv_blocks_used", ts.kv_blocks_used);
  w.column(g.get(), "concurrency", ts.concurrency);
  // Per instance: one row per step record, in step-end order (ties: record order).
  const auto& steps = c.steps();
  std::vector<size_t> order(steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return steps[a].end < steps[b].end; });
  std::vector<int64_t> usable;  // per instance
  for (const PoolSummary& p : summary.pools)
    for (int k = 0; k < p.info.instances; ++k) usable.push_back(p.info.usable_blocks);
  if (usable.empty()) usable.push_back(std::max<int64_t>(summary.kv_blocks.total - 1, 0));
  std::vector<double> time_s, kv_usage;
  std::vector<int64_t> instance, running, waiting, used;
  for (size_t i : order) {
    const StepRecord& st = steps[i];
    const auto inst = static_cast<size_t>(st.instance);
    const int64_t cap = inst < usable.size() ? usable[inst] : 0;
    time_s.push_back(st.end.seconds());
    instance.push_back(st.instance);
    running.push_back(st.running);
    waiting.push_back(st.waiting);
    used.push_back(st.kv_blocks_used);
    kv_usage.push_back(cap > 0 ? static_cast<double>(st.kv_blocks_used) / static_cast<double>(cap) : kNaN);
  }
  Handle per = w.group(g.get(), "per_instance");
  w.column(per.get(), "time_s", time_s, "s");
  w.column(per.get(), "instance", instance);
  w.column(per.get(), "running", running);
  w.column(per.get(), "waiting", waiting);
  w.column(per.get(), "kv_blocks_used", used);
  w.column(per.get(), "kv_usage", kv_usage);
}

void write_summary(Writer& w, hid_t file, const RunSummary& s) {
  Handle g = w.group(file, "summary");
  w.string_attribute(g.get(), "json", summary_to_json(s));
  w.scalar_attribute(g.get(), "requests_finished", s.requests.finished);
  w.scalar_attribute(g.get(), "ttft_p50_ms", s.ttft_ms.p50);
  w.scalar_attribute(g.get(), "ttft_p99_ms", s.ttft_ms.p99);
  w.scalar_attribute(g.get(), "tpot_p50_ms", s.tpot_ms.p50);
  w.scalar_attribute(g.get(), "tpot_p99_ms", s.tpot_ms.p99);
  w.scalar_attribute(g.get(), "itl_p50_ms", s.itl_ms.p50);
  w.scalar_attribute(g.get(), "e2e_p50_ms", s.e2e_ms.p50);
  w.scalar_attribute(g.get(), "e2e_p99_ms", s.e2e_ms.p99);
  w.scalar_attribute(g.get(), "requests_per_s", s.throughput.requests_per_s);
  w.scalar_attribute(g.get(), "output_tokens_per_s", s.throughput.output_tokens_per_s);
  w.scalar_attribute(g.get(), "token_hit_rate", s.prefix_cache.token_hit_rate);
  w.scalar_attribute(g.get(), "peak_concurrency", s.concurrency.peak);
  w.scalar_attribute(g.get(), "mean_concurrency", s.concurrency.mean);
}

void write_meta(Writer& w, hid_t file, const RunMeta& m) {
  Handle g = w.group(file, "meta");
  w.string_attribute(g.get(), "scenario", m.scenario_yaml);
  w.scalar_attribute(g.get(), "seed", m.seed);
  w.string_attribute(g.get(), "version", m.version);
  w.scalar_attribute(g.get(), "events", m.events);
  w.string_attribute(g.get(), "fingerprint", fingerprint_hex(m.fingerprint));
}

}  // namespace

void write_run_file(const std::string& path, const RunCollector& collector, const RunSummary& summary,
                    const RunMeta& meta) {
  namespace fs = std::filesystem;
  if (path.empty()) throw OutputError("run file: empty output path");
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec) {
      throw OutputError("cannot write run file " + path + ": cannot create directory " + target.parent_path().string() +
                        ": " + ec.message());
    }
  }
  const std::string tmp = path + ".tmp";
  h5::QuietErrors quiet;
  try {
    Writer w(tmp);
    Handle file = w.create_file();
    write_meta(w, file.get(), meta);
    write_summary(w, file.get(), summary);
    write_requests(w, file.get(), collector, summary);
    write_steps(w, file.get(), collector);
    write_timeseries(w, file.get(), collector, summary);
    if (!file.close()) throw OutputError("HDF5: closing (flushing) failed for " + tmp);
  } catch (const std::exception& e) {
    fs::remove(tmp, ec);
    throw OutputError(std::string("cannot write run file ") + path + ": " + e.what());
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw OutputError("cannot write run file " + path + ": rename from " + tmp + " failed: " + ec.message());
  }
}

}  // namespace kvsim
