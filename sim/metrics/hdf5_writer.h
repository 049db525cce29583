#pragma once
// The run file: one HDF5 file per run. HDF5 is used only inside sim/metrics/ (hdf5.h never appears
// in a header); tests and tools read files back through RunFileReader below or h5py.
//
// Layout (every column a 1-D dataset; times in seconds as float64, counts as int64):
//   /requests   id, arrival_s, first_scheduled_s, first_token_s, finish_s, prompt_tokens,
//               output_tokens, requested_output_tokens, matched_tokens, cached_tokens, lost_tokens,
//               miss_cause (uint8; attribute "names": comma-separated miss_cause_name by value),
//               preemptions, finished (uint8 0/1), instance, pool (attribute "names": the pool
//               names by index, "default" without a cluster: section), prefix_queries, prefix_hits,
//               preempted_queries, preempted_hits (tokens, vLLM's PrefixCacheStats; see records.h),
//               prefix_queries_blocks, prefix_hits_blocks, saved_state_positions (flattened), saved_state_offsets
//               (n + 1 entries: request i owns positions[offsets[i]:offsets[i+1]]), and for
//               disaggregated requests prefill_instance (-1 otherwise), prefill_done_s,
//               transfer_start_s, transfer_end_s, decode_scheduled_s (NaN otherwise), transfer_bytes, and
//               with engine.kv_offload tier_cached_tokens (loaded from the tier at the first admission)
//               and tier_load_s (time of its tier loads, 0 without one).
//   /transfers  one row per flow of a disaggregated pull: request, src_instance, dst_instance, src_rank,
//               dst_rank, src_gpu, dst_gpu (topology GPU indices), bytes, hops, start_s, end_s, and
//               path_links: every flow's directed link ids (/links ids), flattened in row order (row i
//               owns the hops[i] entries after those of the rows before it)
//   /links      links that carried bytes: id, capacity_bytes_per_s, bytes, mean_utilisation,
//               peak_utilisation (attributes "names", "types" on id: comma-separated)
//               A time that was never reached is NaN: finish_s of unfinished requests,
//               first_token_s of requests without output, first_scheduled_s of requests never
//               scheduled (rejected ones included).
//   /steps      start_s, end_s, num_prefill_requests, num_decode_requests, num_prefill_tokens,
//               num_decode_tokens, running, waiting, kv_blocks_used, kv_blocks_cached, preemptions,
//               instance
//   /timeseries time_s, running, waiting, kv_blocks_used, concurrency (see run_collector.h), and
//               per_instance/{time_s, instance, running, waiting, kv_blocks_used, kv_usage}: one row per
//               step record in step-end order, kv_usage = used / usable blocks of that instance;
//               links/{time_s, link, rate_bytes_per_s, utilisation}: per utilisation sample, the
//               links with traffic
//   KV offload runs only: /requests tier_cached_tokens, tier_load_s and tier<i>_cached_tokens per tier i
//               (engine.kv_offload.tiers order); /steps store_wait_s (rule 24); /timeseries
//               tier<i>_used_bytes (summed over instances, beside time_s)
//   /summary    attribute "json" (summary_to_json without wall_s) and scalar attributes
//               requests_finished, ttft_p50_ms, ttft_p99_ms, tpot_p50_ms, tpot_p99_ms, itl_p50_ms,
//               e2e_p50_ms, e2e_p99_ms, requests_per_s, output_tokens_per_s, token_hit_rate,
//               peak_concurrency, mean_concurrency
//   /meta       attributes scenario (resolved YAML text), seed (uint64), version, events (uint64),
//               fingerprint (16 hex digits, as in the summary JSON)
// Time columns carry a "units" attribute ("s"). Strings are variable-length UTF-8. Object
// modification times and wall time are not recorded, so identical runs give byte-identical files.
//
//   /meta also has complete (uint8: 0 for an interrupted run) and sim_time_s (simulated time reached).
// Atomicity: the file is written to "<path>.tmp" and renamed to <path> only after it has been
// closed successfully; on any failure the temporary file is removed and an OutputError naming the
// path is thrown, so a failed write leaves neither file behind. Missing parent directories are
// created.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/metrics/run_collector.h"
#include "sim/metrics/summary.h"

namespace kvsim {

// A result file could not be written (or read back).
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Creates the directories above `path` (an output file) if missing; OutputError "<path>: cannot create
// directory <dir>: <reason>" otherwise. Every output (run file, summary, CSV, trace) goes through it.
void make_parent_directories(const std::string& path);

struct RunMeta {
  std::string scenario_yaml;  // the resolved scenario, as text
  uint64_t seed = 0;
  std::string version = KVSIM_VERSION;
  uint64_t events = 0;
  uint64_t fingerprint = 0;
  bool complete = true;   // false: the run was interrupted (SIGINT / SIGTERM) and stopped early
  double sim_time_s = 0;  // simulated time reached
};

struct RunFileOptions {
  // Deflate level of every column (0: none; 1..9 with the shuffle filter). The default comes from the
  // size / time table in the README (speed section).
  int compression = kDefaultCompression;
  std::vector<int64_t> usable_blocks;  // per instance: /timeseries/per_instance/kv_usage = used / this
  bool kv_offload = false;             // the tier columns (runs with engine.kv_offload only)
  int offload_tiers = 1;               // with kv_offload: tiers per instance
  static constexpr int kDefaultCompression = 1;
};

// The run file written as the run goes: every dataset is created empty and extendible (chunks of 65,536
// rows) in "<path>.tmp", rows are appended as IRunStream chunks arrive, finish() adds /summary and /meta
// and renames the file to <path>. A stream destroyed before finish() (an error, an exception) removes its
// temporary file, so no file under <path> is ever half written. Write failures are OutputErrors naming
// the path. An interrupted run calls finish() with meta.complete = false.
class RunFileStream final : public IRunStream {
 public:
  RunFileStream(const std::string& path, RunFileOptions options = {});
  ~RunFileStream() override;
  RunFileStream(const RunFileStream&) = delete;
  RunFileStream& operator=(const RunFileStream&) = delete;

  void write_requests(const std::vector<RequestRow>& rows, const std::vector<int64_t>& positions,
                      const std::vector<int64_t>& offsets) override;
  void write_steps(const std::vector<StepRecord>& steps) override;
  void write_samples(const TimeSeries& series, const InstanceSeries& per_instance) override;
  void write_transfers(const std::vector<TransferRecord>& rows) override;
  void write_link_samples(const std::vector<LinkSample>& rows) override;
  // Writes /summary and /meta and closes the temporary file; renames it too unless commit_now is false
  // (a caller that renames a companion file in the same breath calls commit() itself).
  void finish(const RunSummary& summary, const RunMeta& meta, bool commit_now = true);
  void commit();

 private:
  struct Impl;
  template <typename F>
  void guarded(F f);
  std::string path_;
  std::string tmp_;
  std::unique_ptr<Impl> impl_;
  bool committed_ = false;
};

// The whole file at once from a collector that kept its records (tests, small runs): the same layout
// as a stream.
void write_run_file(const std::string& path, const RunCollector& collector, const RunSummary& summary,
                    const RunMeta& meta, int compression = RunFileOptions::kDefaultCompression);

// A small reader for run files (tests, tools). Throws OutputError when the file, a dataset or an
// attribute is missing.
class RunFileReader {
 public:
  explicit RunFileReader(const std::string& path);
  ~RunFileReader();
  RunFileReader(const RunFileReader&) = delete;
  RunFileReader& operator=(const RunFileReader&) = delete;

  bool exists(const std::string& object_path) const;  // "/requests/id", "/meta"
  std::vector<double> read_doubles(const std::string& dataset) const;
  std::vector<int64_t> read_ints(const std::string& dataset) const;
  std::string read_string_attribute(const std::string& object_path, const std::string& name) const;
  int64_t read_int_attribute(const std::string& object_path, const std::string& name) const;
  double read_double_attribute(const std::string& object_path, const std::string& name) const;

 private:
  std::string path_;
  int64_t file_ = -1;  // hid_t
};

}  // namespace kvsim
