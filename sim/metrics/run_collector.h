#pragma once
// RunCollector: the sink of one run. Records are folded into aggregates as they arrive, so the summary
// costs O(1) memory per request beyond the bounded quantile buffers (quantile_sketch.h); the rows of
// /requests, /steps and /timeseries go to an optional IRunStream in fixed-size chunks as the run goes,
// and are kept in memory only with CollectorOptions::keep_records (tests, write_run_file).
//
// Definitions (vLLM's, computed over *finished* requests only, as vLLM records them at finish):
//   TTFT  = first_token - arrival                       (requests with output_tokens >= 1)
//   TPOT  = (finish - first_token) / (output_tokens - 1) (requests with output_tokens > 1)
//   E2E   = finish - arrival
//   queue = first_scheduled - arrival
// ITL comes from on_tokens(): for each request, the gap between consecutive token deliveries.
// When n > 1 tokens arrive at once (speculative decoding, multi-token steps), the first of them
// gets the gap since the previous delivery and the other n - 1 get a gap of 0, so a request
// contributes exactly output_tokens - 1 gaps. The first delivery is TTFT, not an ITL gap. Gaps are
// float milliseconds. Quantiles are exact (numpy's linear interpolation) up to 2^20 samples of a request
// metric and 2^23 ITL gaps, then come from a DDSketch within 0.4 % of the exact order statistic; means
// are always exact. Per-request ITL bookkeeping (the last delivery time) lives only while a request is
// in flight; tokens reported after on_request_done() start a new sequence.
//
// Concurrency is the number of requests between arrival (on_arrival) and leaving the instance (finish,
// or the rejection time of a rejected request). Records come in time order (the simulation emits them
// as they happen; an out-of-order record counts at the latest instant seen); at equal times leaves count before
// arrivals, so a request leaving as another arrives does not raise the peak. Its mean is time-weighted over [first
// arrival, end of run], where the end of the run is the latest finish, step end, token delivery or arrival seen.
//
// Time series are sampled at step ends (every step, or the first step end at or after each multiple of
// CollectorOptions::timeseries_interval_s), with the running / waiting / KV-blocks-used values the step
// record carries (the state as the step was planned). With several instances every sample is the sum
// over instances of each one's latest step record; the per-instance series has one row per sampled
// step (interval 0) or one per instance per sample. Concurrency in a sample is the level at that instant.
//
// Rows of /requests are in on_request_done() order (deterministic for a deterministic simulation).
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/flat_map.h"
#include "sim/metrics/quantile_sketch.h"
#include "sim/metrics/records.h"
#include "sim/metrics/summary.h"

namespace kvsim {

// One request, without the variable-length saved-state list (kept flattened in the collector).
struct RequestRow {
  int64_t id = 0;
  SimTime arrival;
  std::optional<SimTime> first_scheduled;  // unset: never scheduled
  SimTime first_token;
  SimTime finish;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t requested_output_tokens = 0;
  int64_t matched_tokens = 0;
  int64_t cached_tokens = 0;
  int64_t lost_tokens = 0;
  int64_t prefix_queries = 0;  // tokens (RequestRecord)
  int64_t prefix_hits = 0;
  int64_t preempted_queries = 0;
  int64_t preempted_hits = 0;
  int64_t prefix_queries_blocks = 0;
  int64_t prefix_hits_blocks = 0;
  MissCause cause = MissCause::kNone;
  bool finished = false;
  RejectReason rejected = RejectReason::kNone;
  int32_t preemptions = 0;
  int32_t instance = 0;
  int32_t pool = 0;
  // Disaggregated requests (RequestRecord): prefill instance (-1: none) and the pull.
  int32_t prefill_instance = -1;
  SimTime prefill_done, transfer_start, transfer_end, decode_scheduled;
  int64_t transfer_bytes = 0;
  // KV offload (RequestRecord): tokens loaded from the tier at the first admission, load time of all loads.
  int64_t tier_cached_tokens = 0;
  int64_t tier_load_ns = 0;
  std::array<int64_t, kMaxOffloadTiers> tier_cached_tokens_by_tier{};
};

struct TimeSeries {
  std::vector<double> time_s;
  std::vector<int64_t> running;
  std::vector<int64_t> waiting;
  std::vector<int64_t> kv_blocks_used;
  std::vector<int64_t> concurrency;
  // KV offload runs (CollectorOptions::offload_tiers): bytes in use in each tier, summed over instances.
  std::array<std::vector<int64_t>, kMaxOffloadTiers> tier_used_bytes;
  void clear() { *this = {}; }
  size_t size() const { return time_s.size(); }
};

// /timeseries/per_instance rows (kv usage is derived by the writer from each instance's capacity).
struct InstanceSeries {
  std::vector<double> time_s;
  std::vector<int64_t> instance;
  std::vector<int64_t> running;
  std::vector<int64_t> waiting;
  std::vector<int64_t> kv_blocks_used;
  void clear() { *this = {}; }
  size_t size() const { return time_s.size(); }
};

// Receives the rows of a run in chunks, in order, as the run goes (the HDF5 run file stream).
class IRunStream {
 public:
  virtual ~IRunStream() = default;
  // Rows and their saved-state positions; offsets[i] is where row i's positions end, counted over all
  // positions of the run (the run file's saved_state_offsets without its leading 0).
  virtual void write_requests(const std::vector<RequestRow>& rows, const std::vector<int64_t>& positions,
                              const std::vector<int64_t>& offsets) = 0;
  virtual void write_steps(const std::vector<StepRecord>& steps) = 0;
  virtual void write_samples(const TimeSeries& series, const InstanceSeries& per_instance) = 0;
  // Disaggregated runs: transfer flows and link utilisation samples (sinks that do not store them ignore).
  virtual void write_transfers(const std::vector<TransferRecord>& /*rows*/) {}
  virtual void write_link_samples(const std::vector<LinkSample>& /*rows*/) {}
};

// Which step records reach /steps.
struct StepsOutput {
  enum class Mode : uint8_t { kAll, kNone, kEvery };
  Mode mode = Mode::kAll;
  int64_t every = 1;  // kEvery: records 0, N, 2N, ... (in emission order)
};

struct CollectorOptions {
  bool keep_records = true;      // rows, steps and samples also kept in memory (requests(), steps(), ...)
  IRunStream* stream = nullptr;  // not owned
  StepsOutput steps;
  double timeseries_interval_s = 0;  // 0: a sample at every step end
  int64_t exact_request_samples = int64_t{1} << 20;
  int64_t exact_itl_samples = int64_t{1} << 23;
  size_t chunk_rows = 65536;  // rows buffered before a stream write
  int offload_tiers = 0;      // KV offload runs: tiers per instance (TimeSeries::tier_used_bytes)
};

// What the collector cannot see in records; the composition root supplies it at the end.
struct RunInfo {
  uint64_t events = 0;
  double wall_s = 0;
  uint64_t fingerprint = 0;
  int64_t kv_blocks_total = 0;  // summed over instances
  int64_t skipped_trace_lines = 0;
  // A scenario with a cluster: section: its router and pools (the summary then has a block per pool).
  std::string router;
  std::vector<PoolInfo> pools;
  // Disaggregated runs: every directed link's name, type, capacity and bytes carried (peak and mean
  // utilisation are filled by the collector).
  bool disaggregated = false;
  std::vector<LinkTotal> links;
  // KV offload (engine.kv_offload of the first pool; the summary then has a kv_offload block).
  bool kv_offload = false;
  std::string offload_tier;
  int64_t offload_size_bytes = 0;  // per instance
  std::string offload_policy;
  std::string offload_backend;
  // Per tier (engine.kv_offload.tiers order), summed over instances: name, size and the tier's totals.
  std::vector<RunSummary::KvOffloadTier> offload_tiers;
};

class RunCollector final : public IRecordSink {
 public:
  explicit RunCollector(CollectorOptions options = {});
  void on_arrival(RequestId id, SimTime at) override;
  void on_request_done(const RequestRecord& r) override;
  void on_step(const StepRecord& s) override;
  void on_tokens(RequestId id, SimTime at, int64_t n) override;
  void on_transfer(const TransferRecord& t) override;
  void on_link_sample(const LinkSample& s) override;
  const std::vector<TransferRecord>& transfers() const { return transfers_; }
  const std::vector<LinkSample>& link_samples() const { return link_samples_; }

  // Kept records (empty unless keep_records).
  const std::vector<RequestRow>& requests() const { return requests_; }
  // Saved-state positions of request i are positions[offsets[i] .. offsets[i + 1]).
  const std::vector<int64_t>& saved_state_positions() const { return state_positions_; }
  const std::vector<int64_t>& saved_state_offsets() const { return state_offsets_; }
  const std::vector<StepRecord>& steps() const { return steps_; }
  const TimeSeries& timeseries() const { return series_; }
  const InstanceSeries& instance_series() const { return instance_series_; }
  int64_t num_steps() const { return num_steps_; }  // step records received, kept or not

  // Writes what is still buffered to the stream (call once, at the end of the run or on interrupt).
  void flush();
  // The figures of the run so far; requests still in flight (an interrupted run) count in the
  // concurrency only.
  RunSummary summarize(const RunInfo& info) const;

 private:
  // The links that carried bytes, with their mean (and sampled peak) use, by bytes.
  std::vector<LinkTotal> link_totals(const std::vector<LinkTotal>& links) const;
  // Per instance and per pool, for the pool blocks of a cluster summary.
  struct InstanceAgg {
    int64_t requests = 0, prompt = 0, hit = 0, preemptions = 0, busy_ns = 0, peak_used = 0;
  };
  struct PoolAgg {
    explicit PoolAgg(int64_t exact) : ttft(exact), tpot(exact), e2e(exact) {}
    int64_t requests = 0, finished = 0, prompt = 0, hit = 0, preemptions = 0;
    StreamingDistribution<double> ttft, tpot, e2e;
  };
  struct Latest {
    int64_t running = 0, waiting = 0, used = 0;
    bool seen = false;
    std::array<int64_t, kMaxOffloadTiers> tier_used{};
  };
  void advance(int64_t t);  // applies arrivals pending at an earlier instant
  void sample(SimTime at, const StepRecord* only);
  std::vector<PoolSummary> summarize_pools(const std::vector<PoolInfo>& pools) const;
  SimTime end_of_run() const;

  CollectorOptions opt_;
  // Request aggregates.
  int64_t count_ = 0, finished_ = 0, output_tokens_ = 0, preemptions_ = 0, prompt_tokens_prefilled_ = 0;
  decltype(RunSummary::Requests::rejected) rejected_{};  // unfinished requests by RejectReason
  RunSummary::PrefixCache prefix_;
  bool any_arrival_ = false, any_finish_ = false;
  SimTime first_arrival_, last_finish_, last_seen_;
  StreamingDistribution<double> ttft_, tpot_, e2e_, queue_;
  StreamingDistribution<float> itl_;
  // Last token delivery of each request in flight: request id -> slot of last_delivery_ (lookup only).
  FlatMap delivery_slot_;
  std::vector<SimTime> last_delivery_;
  std::vector<int32_t> free_delivery_slots_;
  std::vector<InstanceAgg> instances_;
  std::vector<PoolAgg> pools_;
  // Disaggregation: requests prefilled remotely, flows, bytes, per-request transfer time, the TTFT parts,
  // and the peak utilisation sampled on each link (by link id).
  int64_t disagg_requests_ = 0, flows_ = 0;
  double flow_bytes_ = 0;
  StreamingDistribution<double> transfer_{int64_t{1} << 20}, ttft_router_{int64_t{1} << 20},
      ttft_prefill_queue_{int64_t{1} << 20}, ttft_prefill_{int64_t{1} << 20}, ttft_decode_queue_{int64_t{1} << 20},
      ttft_pull_{int64_t{1} << 20}, ttft_first_step_{int64_t{1} << 20};
  std::vector<double> link_peak_;
  // KV offload totals (RequestRecord tier_* fields) and the per-request load time.
  RunSummary::KvOffload offload_;
  StreamingDistribution<double> tier_load_{int64_t{1} << 20};
  std::vector<TransferRecord> transfers_, chunk_transfers_;
  std::vector<LinkSample> link_samples_, chunk_link_samples_;
  // Concurrency: level = arrived - left, arrivals at the current instant held in pending_.
  int64_t level_ = 0, pending_ = 0, peak_ = 0, now_ns_ = INT64_MIN;
  __int128 arrival_ns_in_flight_ = 0;  // sum of arrival times of requests in flight (pending included)
  __int128 area_left_ = 0;             // sum of (leave - arrival) of requests that left
  // Time series.
  std::vector<Latest> latest_;
  int64_t sum_running_ = 0, sum_waiting_ = 0, sum_used_ = 0, peak_used_ = 0;
  std::array<int64_t, kMaxOffloadTiers> sum_tier_used_{};
  // KV offload: hits per tier (RequestRecord), steps that waited on a store and their wait (rule 24).
  std::array<int64_t, kMaxOffloadTiers> tier_hit_tokens_{}, tier_hit_blocks_{};
  int64_t store_wait_steps_ = 0, store_wait_ns_ = 0;
  int64_t next_sample_ns_ = INT64_MIN;
  int64_t sample_interval_ns_ = 1;  // timeseries_interval_s in ns (when > 0)
  int64_t num_steps_ = 0;
  // Kept records (keep_records) and chunk buffers (stream).
  std::vector<RequestRow> requests_;
  std::vector<int64_t> state_positions_;
  std::vector<int64_t> state_offsets_{0};
  std::vector<StepRecord> steps_;
  TimeSeries series_;
  InstanceSeries instance_series_;
  std::vector<RequestRow> chunk_requests_;
  std::vector<int64_t> chunk_positions_, chunk_offsets_;
  int64_t positions_written_ = 0;
  std::vector<StepRecord> chunk_steps_;
  TimeSeries chunk_series_;
  InstanceSeries chunk_instance_series_;
};

}  // namespace kvsim
