#include "sim/metrics/hdf5_writer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <system_error>

#include "sim/core/check.h"
#include "sim/metrics/hdf5_handles.h"

namespace kvsim {
namespace {

using h5::check_id;
using h5::check_rc;
using h5::Handle;

constexpr hsize_t kChunkRows = 65536;

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
  const std::string& path() const { return path_; }

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

// An extendible 1-D dataset: created empty, chunked (and deflated when asked and available), grown
// by each append.
template <typename T>
class Column {
 public:
  Column() = default;
  Column(Writer& w, hid_t group, const char* name, int compression, const char* units = nullptr) : name_(name) {
    const hsize_t zero = 0, unlimited = H5S_UNLIMITED;
    Handle space(check_id(H5Screate_simple(1, &zero, &unlimited), "H5Screate_simple", w.path()), H5Sclose);
    Handle dcpl(check_id(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", w.path()), H5Pclose);
    check_rc(H5Pset_obj_track_times(dcpl.get(), 0), "H5Pset_obj_track_times", w.path());
    const hsize_t chunk = kChunkRows;
    check_rc(H5Pset_chunk(dcpl.get(), 1, &chunk), "H5Pset_chunk", w.path());
    if (compression > 0 && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
      check_rc(H5Pset_shuffle(dcpl.get()), "H5Pset_shuffle", w.path());
      check_rc(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(compression)), "H5Pset_deflate", w.path());
    }
    ds_ = Handle(check_id(H5Dcreate2(group, name, TypeOf<T>::file(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                          std::string("create dataset ") + name, w.path()),
                 H5Dclose);
    if (units != nullptr) w.string_attribute(ds_.get(), "units", units);
  }
  void append(Writer& w, const std::vector<T>& data) {
    if (data.empty()) return;
    const hsize_t n = data.size(), grown = size_ + n;
    check_rc(H5Dset_extent(ds_.get(), &grown), std::string("extend dataset ") + name_, w.path());
    Handle file_space(check_id(H5Dget_space(ds_.get()), "H5Dget_space", w.path()), H5Sclose);
    check_rc(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &size_, nullptr, &n, nullptr), "H5Sselect_hyperslab",
             w.path());
    Handle mem_space(check_id(H5Screate_simple(1, &n, nullptr), "H5Screate_simple", w.path()), H5Sclose);
    check_rc(H5Dwrite(ds_.get(), TypeOf<T>::memory(), mem_space.get(), file_space.get(), H5P_DEFAULT, data.data()),
             std::string("write dataset ") + name_, w.path());
    size_ = grown;
  }
  hid_t id() const { return ds_.get(); }

 private:
  Handle ds_;
  hsize_t size_ = 0;
  std::string name_;
};

void write_summary(Writer& w, hid_t file, const RunSummary& s) {
  Handle g = w.group(file, "summary");
  // Without wall time: the one non-deterministic figure stays out of the file, so two runs of one
  // scenario give byte-identical files (the terminal summary and --summary-json still carry it).
  w.string_attribute(g.get(), "json", summary_to_json(s, {.include_wall_time = false}));
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
  w.scalar_attribute(g.get(), "complete", static_cast<uint8_t>(m.complete ? 1 : 0));
  w.scalar_attribute(g.get(), "sim_time_s", m.sim_time_s);
}

}  // namespace

struct RunFileStream::Impl {
  explicit Impl(const std::string& tmp, const RunFileOptions& o) : w(tmp), capacity(o.usable_blocks) {
    file = w.create_file();
    const int z = o.compression;
    compression = z;
    Handle g = w.group(file.get(), "requests");
    using D = Column<double>;
    using I = Column<int64_t>;
    rq_id = I(w, g.get(), "id", z);
    rq_arrival = D(w, g.get(), "arrival_s", z, "s");
    rq_first_scheduled = D(w, g.get(), "first_scheduled_s", z, "s");
    rq_first_token = D(w, g.get(), "first_token_s", z, "s");
    rq_finish = D(w, g.get(), "finish_s", z, "s");
    rq_prompt = I(w, g.get(), "prompt_tokens", z);
    rq_output = I(w, g.get(), "output_tokens", z);
    rq_requested = I(w, g.get(), "requested_output_tokens", z);
    rq_matched = I(w, g.get(), "matched_tokens", z);
    rq_cached = I(w, g.get(), "cached_tokens", z);
    rq_lost = I(w, g.get(), "lost_tokens", z);
    rq_cause = Column<uint8_t>(w, g.get(), "miss_cause", z);
    std::string names;
    for (int i = 0; i < kNumMissCauses; ++i)
      names += (i > 0 ? "," : "") + std::string(miss_cause_name(static_cast<MissCause>(i)));
    w.string_attribute(rq_cause.id(), "names", names);
    rq_preemptions = I(w, g.get(), "preemptions", z);
    rq_finished = Column<uint8_t>(w, g.get(), "finished", z);
    rq_instance = I(w, g.get(), "instance", z);
    rq_pool = I(w, g.get(), "pool", z);
    rq_queries_tokens = I(w, g.get(), "prefix_queries", z);
    rq_hits_tokens = I(w, g.get(), "prefix_hits", z);
    rq_preempted_queries = I(w, g.get(), "preempted_queries", z);
    rq_preempted_hits = I(w, g.get(), "preempted_hits", z);
    rq_queries = I(w, g.get(), "prefix_queries_blocks", z);
    rq_hits = I(w, g.get(), "prefix_hits_blocks", z);
    rq_positions = I(w, g.get(), "saved_state_positions", z);
    rq_offsets = I(w, g.get(), "saved_state_offsets", z);
    rq_offsets.append(w, std::vector<int64_t>{0});
    rq_prefill_instance = I(w, g.get(), "prefill_instance", z);
    rq_prefill_done = D(w, g.get(), "prefill_done_s", z, "s");
    rq_transfer_start = D(w, g.get(), "transfer_start_s", z, "s");
    rq_transfer_end = D(w, g.get(), "transfer_end_s", z, "s");
    rq_decode_scheduled = D(w, g.get(), "decode_scheduled_s", z, "s");
    rq_transfer_bytes = I(w, g.get(), "transfer_bytes", z);
    offload = o.kv_offload;
    if (offload) {
      rq_tier_cached = I(w, g.get(), "tier_cached_tokens", z);
      rq_tier_load = D(w, g.get(), "tier_load_s", z, "s");
      offload_tiers = std::clamp(o.offload_tiers, 1, kMaxOffloadTiers);
      for (int t = 0; t < offload_tiers; ++t)
        rq_tier_by.push_back(I(w, g.get(), ("tier" + std::to_string(t) + "_cached_tokens").c_str(), z));
    }
    Handle tr = w.group(file.get(), "transfers");
    tr_id = I(w, tr.get(), "request", z);
    tr_src_instance = I(w, tr.get(), "src_instance", z);
    tr_dst_instance = I(w, tr.get(), "dst_instance", z);
    tr_src_rank = I(w, tr.get(), "src_rank", z);
    tr_dst_rank = I(w, tr.get(), "dst_rank", z);
    tr_src_gpu = I(w, tr.get(), "src_gpu", z);
    tr_dst_gpu = I(w, tr.get(), "dst_gpu", z);
    tr_bytes = I(w, tr.get(), "bytes", z);
    tr_hops = I(w, tr.get(), "hops", z);
    tr_path = I(w, tr.get(), "path_links", z);
    tr_start = D(w, tr.get(), "start_s", z, "s");
    tr_end = D(w, tr.get(), "end_s", z, "s");
    Handle st = w.group(file.get(), "steps");
    st_start = D(w, st.get(), "start_s", z, "s");
    st_end = D(w, st.get(), "end_s", z, "s");
    st_prefill_requests = I(w, st.get(), "num_prefill_requests", z);
    st_decode_requests = I(w, st.get(), "num_decode_requests", z);
    st_prefill_tokens = I(w, st.get(), "num_prefill_tokens", z);
    st_decode_tokens = I(w, st.get(), "num_decode_tokens", z);
    st_running = I(w, st.get(), "running", z);
    st_waiting = I(w, st.get(), "waiting", z);
    st_used = I(w, st.get(), "kv_blocks_used", z);
    st_cached = I(w, st.get(), "kv_blocks_cached", z);
    st_preemptions = I(w, st.get(), "preemptions", z);
    st_instance = I(w, st.get(), "instance", z);
    if (offload) st_store_wait = D(w, st.get(), "store_wait_s", z, "s");
    Handle ts = w.group(file.get(), "timeseries");
    ts_time = D(w, ts.get(), "time_s", z, "s");
    ts_running = I(w, ts.get(), "running", z);
    ts_waiting = I(w, ts.get(), "waiting", z);
    ts_used = I(w, ts.get(), "kv_blocks_used", z);
    ts_concurrency = I(w, ts.get(), "concurrency", z);
    if (offload)
      for (int t = 0; t < offload_tiers; ++t)
        ts_tier_used.push_back(I(w, ts.get(), ("tier" + std::to_string(t) + "_used_bytes").c_str(), z));
    Handle pi = w.group(ts.get(), "per_instance");
    pi_time = D(w, pi.get(), "time_s", z, "s");
    pi_instance = I(w, pi.get(), "instance", z);
    pi_running = I(w, pi.get(), "running", z);
    pi_waiting = I(w, pi.get(), "waiting", z);
    pi_used = I(w, pi.get(), "kv_blocks_used", z);
    pi_usage = D(w, pi.get(), "kv_usage", z);
    Handle ln = w.group(ts.get(), "links");
    ln_time = D(w, ln.get(), "time_s", z, "s");
    ln_link = I(w, ln.get(), "link", z);
    ln_rate = D(w, ln.get(), "rate_bytes_per_s", z);
    ln_util = D(w, ln.get(), "utilisation", z);
  }

  Writer w;
  std::vector<int64_t> capacity;
  int compression = 0;
  Handle file;
  Column<int64_t> rq_id, rq_prompt, rq_output, rq_requested, rq_matched, rq_cached, rq_lost, rq_preemptions,
      rq_instance, rq_pool, rq_queries_tokens, rq_hits_tokens, rq_preempted_queries, rq_preempted_hits, rq_queries,
      rq_hits, rq_positions, rq_offsets;
  Column<double> rq_arrival, rq_first_scheduled, rq_first_token, rq_finish;
  Column<uint8_t> rq_cause, rq_finished;
  Column<double> st_start, st_end;
  Column<int64_t> st_prefill_requests, st_decode_requests, st_prefill_tokens, st_decode_tokens, st_running, st_waiting,
      st_used, st_cached, st_preemptions, st_instance;
  Column<double> ts_time, pi_time, pi_usage;
  bool offload = false;
  Column<int64_t> rq_tier_cached;
  Column<double> rq_tier_load;
  int offload_tiers = 0;
  std::vector<Column<int64_t>> rq_tier_by, ts_tier_used;
  Column<double> st_store_wait;
  Column<int64_t> rq_prefill_instance, rq_transfer_bytes, tr_id, tr_src_instance, tr_dst_instance, tr_src_rank,
      tr_dst_rank, tr_src_gpu, tr_dst_gpu, tr_bytes, tr_hops, tr_path, ln_link;
  Column<double> rq_prefill_done, rq_transfer_start, rq_transfer_end, rq_decode_scheduled, tr_start, tr_end, ln_time,
      ln_rate, ln_util;
  Column<int64_t> ts_running, ts_waiting, ts_used, ts_concurrency, pi_instance, pi_running, pi_waiting, pi_used;
};

void make_parent_directories(const std::string& path) {
  const std::filesystem::path p(path);
  if (!p.has_parent_path()) return;
  std::error_code ec;
  std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) throw OutputError(path + ": cannot create directory " + p.parent_path().string() + ": " + ec.message());
}

RunFileStream::RunFileStream(const std::string& path, RunFileOptions options) : path_(path), tmp_(path + ".tmp") {
  namespace fs = std::filesystem;
  if (path.empty()) throw OutputError("run file: empty output path");
  if (options.compression < 0 || options.compression > 9)
    throw OutputError("run file " + path + ": compression level must be 0..9 (got " +
                      std::to_string(options.compression) + ")");
  make_parent_directories(path);
  std::error_code ec;
  h5::QuietErrors quiet;
  try {
    impl_ = std::make_unique<Impl>(tmp_, options);
  } catch (const std::exception& e) {
    impl_.reset();
    fs::remove(tmp_, ec);
    throw OutputError(std::string("cannot write run file ") + path + ": " + e.what());
  }
}

RunFileStream::~RunFileStream() {
  if (committed_) return;
  impl_.reset();  // closes the file
  std::error_code ec;
  std::filesystem::remove(tmp_, ec);
}

template <typename F>
void RunFileStream::guarded(F f) {
  KVSIM_CHECK(impl_ != nullptr, "run file stream already finished");
  h5::QuietErrors quiet;
  try {
    f(*impl_);
  } catch (const std::exception& e) {
    impl_.reset();
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
    throw OutputError(std::string("cannot write run file ") + path_ + ": " + e.what());
  }
}

void RunFileStream::write_requests(const std::vector<RequestRow>& rows, const std::vector<int64_t>& positions,
                                   const std::vector<int64_t>& offsets) {
  guarded([&](Impl& m) {
    using R = RequestRow;
    Writer& w = m.w;
    auto i64 = [](auto v) { return static_cast<int64_t>(v); };
    m.rq_id.append(w, column_of(rows, [](const R& r) { return r.id; }));
    m.rq_arrival.append(w, column_of(rows, [](const R& r) { return r.arrival.seconds(); }));
    m.rq_first_scheduled.append(
        w, column_of(rows, [](const R& r) { return r.first_scheduled ? r.first_scheduled->seconds() : kNaN; }));
    m.rq_first_token.append(
        w, column_of(rows, [](const R& r) { return time_or_nan(r.first_token, r.arrival, r.output_tokens > 0); }));
    m.rq_finish.append(w, column_of(rows, [](const R& r) { return time_or_nan(r.finish, r.arrival, r.finished); }));
    m.rq_prompt.append(w, column_of(rows, [](const R& r) { return r.prompt_tokens; }));
    m.rq_output.append(w, column_of(rows, [](const R& r) { return r.output_tokens; }));
    m.rq_requested.append(w, column_of(rows, [](const R& r) { return r.requested_output_tokens; }));
    m.rq_matched.append(w, column_of(rows, [](const R& r) { return r.matched_tokens; }));
    m.rq_cached.append(w, column_of(rows, [](const R& r) { return r.cached_tokens; }));
    m.rq_lost.append(w, column_of(rows, [](const R& r) { return r.lost_tokens; }));
    m.rq_cause.append(w, column_of(rows, [](const R& r) { return static_cast<uint8_t>(r.cause); }));
    m.rq_preemptions.append(w, column_of(rows, [&](const R& r) { return i64(r.preemptions); }));
    m.rq_finished.append(w, column_of(rows, [](const R& r) { return static_cast<uint8_t>(r.finished ? 1 : 0); }));
    m.rq_instance.append(w, column_of(rows, [&](const R& r) { return i64(r.instance); }));
    m.rq_pool.append(w, column_of(rows, [&](const R& r) { return i64(r.pool); }));
    m.rq_queries_tokens.append(w, column_of(rows, [](const R& r) { return r.prefix_queries; }));
    m.rq_hits_tokens.append(w, column_of(rows, [](const R& r) { return r.prefix_hits; }));
    m.rq_preempted_queries.append(w, column_of(rows, [](const R& r) { return r.preempted_queries; }));
    m.rq_preempted_hits.append(w, column_of(rows, [](const R& r) { return r.preempted_hits; }));
    m.rq_queries.append(w, column_of(rows, [](const R& r) { return r.prefix_queries_blocks; }));
    m.rq_hits.append(w, column_of(rows, [](const R& r) { return r.prefix_hits_blocks; }));
    m.rq_positions.append(w, positions);
    m.rq_offsets.append(w, offsets);
    m.rq_prefill_instance.append(w, column_of(rows, [&](const R& r) { return i64(r.prefill_instance); }));
    const auto remote = [](const R& r, SimTime t) { return r.prefill_instance >= 0 ? t.seconds() : kNaN; };
    m.rq_prefill_done.append(w, column_of(rows, [&](const R& r) { return remote(r, r.prefill_done); }));
    m.rq_transfer_start.append(w, column_of(rows, [&](const R& r) { return remote(r, r.transfer_start); }));
    m.rq_transfer_end.append(w, column_of(rows, [&](const R& r) { return remote(r, r.transfer_end); }));
    m.rq_decode_scheduled.append(w, column_of(rows, [&](const R& r) { return remote(r, r.decode_scheduled); }));
    m.rq_transfer_bytes.append(w, column_of(rows, [](const R& r) { return r.transfer_bytes; }));
    if (m.offload) {
      m.rq_tier_cached.append(w, column_of(rows, [](const R& r) { return r.tier_cached_tokens; }));
      m.rq_tier_load.append(w, column_of(rows, [](const R& r) { return static_cast<double>(r.tier_load_ns) * 1e-9; }));
      for (size_t t = 0; t < m.rq_tier_by.size(); ++t)
        m.rq_tier_by[t].append(w, column_of(rows, [t](const R& r) { return r.tier_cached_tokens_by_tier[t]; }));
    }
  });
}

void RunFileStream::write_transfers(const std::vector<TransferRecord>& rows) {
  guarded([&](Impl& m) {
    using T = TransferRecord;
    Writer& w = m.w;
    auto i64 = [](auto v) { return static_cast<int64_t>(v); };
    m.tr_id.append(w, column_of(rows, [](const T& t) { return t.id.value(); }));
    m.tr_src_instance.append(w, column_of(rows, [&](const T& t) { return i64(t.src_instance); }));
    m.tr_dst_instance.append(w, column_of(rows, [&](const T& t) { return i64(t.dst_instance); }));
    m.tr_src_rank.append(w, column_of(rows, [&](const T& t) { return i64(t.src_rank); }));
    m.tr_dst_rank.append(w, column_of(rows, [&](const T& t) { return i64(t.dst_rank); }));
    m.tr_src_gpu.append(w, column_of(rows, [&](const T& t) { return i64(t.src_gpu); }));
    m.tr_dst_gpu.append(w, column_of(rows, [&](const T& t) { return i64(t.dst_gpu); }));
    m.tr_bytes.append(w, column_of(rows, [](const T& t) { return t.bytes; }));
    m.tr_hops.append(w, column_of(rows, [&](const T& t) { return i64(t.hops); }));
    std::vector<int64_t> path;
    for (const T& t : rows) path.insert(path.end(), t.links.begin(), t.links.end());
    m.tr_path.append(w, path);
    m.tr_start.append(w, column_of(rows, [](const T& t) { return t.start.seconds(); }));
    m.tr_end.append(w, column_of(rows, [](const T& t) { return t.end.seconds(); }));
  });
}

void RunFileStream::write_link_samples(const std::vector<LinkSample>& rows) {
  guarded([&](Impl& m) {
    using L = LinkSample;
    Writer& w = m.w;
    m.ln_time.append(w, column_of(rows, [](const L& l) { return l.at.seconds(); }));
    m.ln_link.append(w, column_of(rows, [](const L& l) { return static_cast<int64_t>(l.link); }));
    m.ln_rate.append(w, column_of(rows, [](const L& l) { return l.rate; }));
    m.ln_util.append(w, column_of(rows, [](const L& l) { return l.utilisation; }));
  });
}

void RunFileStream::write_steps(const std::vector<StepRecord>& rows) {
  guarded([&](Impl& m) {
    using S = StepRecord;
    Writer& w = m.w;
    auto i64 = [](auto v) { return static_cast<int64_t>(v); };
    m.st_start.append(w, column_of(rows, [](const S& s) { return s.start.seconds(); }));
    m.st_end.append(w, column_of(rows, [](const S& s) { return s.end.seconds(); }));
    m.st_prefill_requests.append(w, column_of(rows, [&](const S& s) { return i64(s.num_prefill_requests); }));
    m.st_decode_requests.append(w, column_of(rows, [&](const S& s) { return i64(s.num_decode_requests); }));
    m.st_prefill_tokens.append(w, column_of(rows, [](const S& s) { return s.num_prefill_tokens; }));
    m.st_decode_tokens.append(w, column_of(rows, [](const S& s) { return s.num_decode_tokens; }));
    m.st_running.append(w, column_of(rows, [&](const S& s) { return i64(s.running); }));
    m.st_waiting.append(w, column_of(rows, [&](const S& s) { return i64(s.waiting); }));
    m.st_used.append(w, column_of(rows, [](const S& s) { return s.kv_blocks_used; }));
    m.st_cached.append(w, column_of(rows, [](const S& s) { return s.kv_blocks_cached; }));
    m.st_preemptions.append(w, column_of(rows, [&](const S& s) { return i64(s.preemptions); }));
    m.st_instance.append(w, column_of(rows, [&](const S& s) { return i64(s.instance); }));
    if (m.offload)
      m.st_store_wait.append(w,
                             column_of(rows, [](const S& s) { return static_cast<double>(s.store_wait_ns) * 1e-9; }));
  });
}

void RunFileStream::write_samples(const TimeSeries& ts, const InstanceSeries& is) {
  guarded([&](Impl& m) {
    Writer& w = m.w;
    m.ts_time.append(w, ts.time_s);
    m.ts_running.append(w, ts.running);
    m.ts_waiting.append(w, ts.waiting);
    m.ts_used.append(w, ts.kv_blocks_used);
    m.ts_concurrency.append(w, ts.concurrency);
    for (size_t t = 0; t < m.ts_tier_used.size(); ++t) m.ts_tier_used[t].append(w, ts.tier_used_bytes[t]);
    m.pi_time.append(w, is.time_s);
    m.pi_instance.append(w, is.instance);
    m.pi_running.append(w, is.running);
    m.pi_waiting.append(w, is.waiting);
    m.pi_used.append(w, is.kv_blocks_used);
    std::vector<double> usage;
    usage.reserve(is.size());
    for (size_t k = 0; k < is.size(); ++k) {
      const auto i = static_cast<size_t>(is.instance[k]);
      const int64_t cap = i < m.capacity.size() ? m.capacity[i] : 0;
      usage.push_back(cap > 0 ? static_cast<double>(is.kv_blocks_used[k]) / static_cast<double>(cap) : kNaN);
    }
    m.pi_usage.append(w, usage);
  });
}

void RunFileStream::finish(const RunSummary& summary, const RunMeta& meta, bool commit_now) {
  guarded([&](Impl& m) {
    std::string pools;
    for (const PoolSummary& p : summary.pools) pools += (pools.empty() ? "" : ",") + p.info.name;
    m.w.string_attribute(m.rq_pool.id(), "names", pools.empty() ? "default" : pools);
    write_meta(m.w, m.file.get(), meta);
    write_summary(m.w, m.file.get(), summary);
    // /links: the links that carried bytes (disaggregated runs), by bytes.
    const auto& links = summary.disaggregation.links;
    Handle ln = m.w.group(m.file.get(), "links");
    const int z = m.compression;
    auto id = Column<int64_t>(m.w, ln.get(), "id", z);
    id.append(m.w, column_of(links, [](const LinkTotal& l) { return static_cast<int64_t>(l.id); }));
    std::string names, types;
    for (const LinkTotal& l : links) {
      names += (names.empty() ? "" : ",") + l.name;
      types += (types.empty() ? "" : ",") + l.type;
    }
    m.w.string_attribute(id.id(), "names", names);
    m.w.string_attribute(id.id(), "types", types);
    auto cap = Column<double>(m.w, ln.get(), "capacity_bytes_per_s", z);
    cap.append(m.w, column_of(links, [](const LinkTotal& l) { return l.capacity; }));
    auto bytes = Column<double>(m.w, ln.get(), "bytes", z);
    bytes.append(m.w, column_of(links, [](const LinkTotal& l) { return l.bytes; }));
    auto mean = Column<double>(m.w, ln.get(), "mean_utilisation", z);
    mean.append(m.w, column_of(links, [](const LinkTotal& l) { return l.mean_utilisation; }));
    auto peak = Column<double>(m.w, ln.get(), "peak_utilisation", z);
    peak.append(m.w, column_of(links, [](const LinkTotal& l) { return l.peak_utilisation; }));
    check_rc(H5Fflush(m.file.get(), H5F_SCOPE_GLOBAL), "flush", tmp_);
  });
  impl_.reset();  // closes every dataset, then the file
  if (commit_now) commit();
}

void RunFileStream::commit() {
  KVSIM_CHECK(impl_ == nullptr && !committed_, "commit() before finish() or twice");
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp_, ignored);
    throw OutputError("cannot write run file " + path_ + ": rename from " + tmp_ + " failed: " + ec.message());
  }
  committed_ = true;
}

void write_run_file(const std::string& path, const RunCollector& collector, const RunSummary& summary,
                    const RunMeta& meta, int compression) {
  RunFileOptions o;
  o.compression = compression;
  for (const PoolSummary& p : summary.pools)
    for (int k = 0; k < p.info.instances; ++k) o.usable_blocks.push_back(p.info.usable_blocks);
  if (o.usable_blocks.empty()) o.usable_blocks.push_back(std::max<int64_t>(summary.kv_blocks.total - 1, 0));
  o.kv_offload = summary.kv_offload.present;
  o.offload_tiers = std::max<int>(1, static_cast<int>(summary.kv_offload.tiers.size()));
  RunFileStream stream(path, o);
  std::vector<int64_t> ends(collector.saved_state_offsets().begin() + 1, collector.saved_state_offsets().end());
  stream.write_requests(collector.requests(), collector.saved_state_positions(), ends);
  stream.write_steps(collector.steps());
  stream.write_samples(collector.timeseries(), collector.instance_series());
  stream.write_transfers(collector.transfers());
  stream.write_link_samples(collector.link_samples());
  stream.finish(summary, meta);
}

}  // namespace kvsim
