#pragma once
// RunCollector: the in-memory sink of one run. It keeps one compact row per request (for
// /requests), every step record (for /steps) and the inter-token gaps (for ITL), and derives the
// time series and the RunSummary at the end of the run.
//
// Definitions (vLLM's, computed over *finished* requests only, as vLLM records them at finish):
//   TTFT  = first_token - arrival                       (requests with output_tokens >= 1)
//   TPOT  = (finish - first_token) / (output_tokens - 1) (requests with output_tokens > 1)
//   E2E   = finish - arrival
//   queue = first_scheduled - arrival
// ITL comes from on_tokens(): for each request, the gap between consecutive token deliveries.
// When n > 1 tokens arrive at once (speculative decoding, multi-token steps), the first of them
// gets the gap since the previous delivery and the other n - 1 get a gap of 0, so a request
// contributes exactly output_tokens - 1 gaps. The first delivery is TTFT, not an ITL gap.
// Gaps are stored as float milliseconds (4 bytes per generated token; float keeps ~7 significant
// digits, i.e. better than 1 ns for gaps below 10 ms); no other per-token data is kept. summarize()
// sorts a copy, so memory peaks at 8 bytes per generated token then (1M requests x 100 tokens: ~0.8 GB;
// measured ~1 GB RSS in total with the request rows). Per-request
// bookkeeping for ITL (the last delivery time) lives only while a request is in flight and is
// dropped by on_request_done(); tokens reported after on_request_done() start a new sequence.
//
// Concurrency is the number of requests between arrival and leaving the instance (finish, or the
// rejection time of a rejected request). Its mean is time-weighted over [first arrival, end of run], where the end of
// the run is the latest finish, step end or token delivery seen. At equal times finishes are applied
// before arrivals, so a request leaving as another arrives does not raise the peak.
//
// Time series are sampled once per step record, at the step's end, with the running / waiting /
// KV-blocks-used values the step record carries (the state as the step was planned). With several
// instances every sample is the sum over instances of each one's latest step record. Samples are
// ordered by time, ties by arrival order of the records.
//
// Rows of /requests are in on_request_done() order (deterministic for a deterministic simulation).
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

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
  int64_t prefix_queries_blocks = 0;
  int64_t prefix_hits_blocks = 0;
  MissCause cause = MissCause::kNone;
  bool finished = false;
  RejectReason rejected = RejectReason::kNone;
  int32_t preemptions = 0;
  int32_t instance = 0;
};

struct TimeSeries {
  std::vector<double> time_s;
  std::vector<int64_t> running;
  std::vector<int64_t> waiting;
  std::vector<int64_t> kv_blocks_used;
  std::vector<int64_t> concurrency;
};

// What the collector cannot see in records; the composition root supplies it at the end.
struct RunInfo {
  uint64_t events = 0;
  double wall_s = 0;
  uint64_t fingerprint = 0;
  int64_t kv_blocks_total = 0;  // summed over instances
};

class RunCollector final : public IRecordSink {
 public:
  void on_request_done(const RequestRecord& r) override;
  void on_step(const StepRecord& s) override;
  void on_tokens(RequestId id, SimTime at, int64_t n) override;

  const std::vector<RequestRow>& requests() const { return requests_; }
  // Saved-state positions of request i are positions[offsets[i] .. offsets[i + 1]).
  const std::vector<int64_t>& saved_state_positions() const { return state_positions_; }
  const std::vector<int64_t>& saved_state_offsets() const { return state_offsets_; }
  const std::vector<StepRecord>& steps() const { return steps_; }
  const std::vector<float>& itl_gaps_ms() const { return itl_ms_; }

  // Derived on demand (O(S log S + R log R)); call after the run.
  TimeSeries timeseries() const;
  RunSummary summarize(const RunInfo& info) const;

 private:
  SimTime end_of_run() const;

  std::vector<RequestRow> requests_;
  std::vector<int64_t> state_positions_;
  std::vector<int64_t> state_offsets_{0};
  std::vector<StepRecord> steps_;
  std::vector<float> itl_ms_;
  std::unordered_map<int64_t, SimTime> last_delivery_;  // lookup only; never iterated
  SimTime last_seen_;
};

}  // namespace kvsim
