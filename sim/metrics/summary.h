#pragma once
// RunSummary: the figures printed at the end of a run and stored in /summary of the run file.
// Names follow vLLM's metrics where one exists (prefix_cache queries / hits in tokens, as vLLM's).
//
// JSON schema (fixed key order; numbers through json_number; NaN, e.g. a percentile of an empty
// distribution, is written as null):
// {
//   "requests": {"count", "finished", "unfinished", "in_flight" (only in an interrupted run with requests
//                still in the cluster: part of unfinished, without a /requests row), "skipped_trace_lines"
//                (only when skip_bad_lines skipped some: lines that never became requests), "rejected":
//                {<reject_reason_name>: n} (only reasons with n > 0; omitted when nothing was rejected)},
//   "ttft_ms" | "tpot_ms" | "itl_ms" | "e2e_ms" | "queue_ms": {"count", "mean", "p50", "p90", "p95", "p99",
//                                                            "p99_9", "stddev"},
//   "throughput": {"duration_s", "requests_per_s", "output_tokens_per_s"},
//   "prefix_cache": {"prompt_tokens", "hit_tokens", "token_hit_rate", "queries", "hits", "hit_rate",
//                    "preempted_queries", "preempted_hits", "preempted_hit_rate", "queries_blocks",
//                    "hits_blocks", "block_hit_rate", "hit_requests",
//                    "lost_tokens_by_cause": {<miss_cause_name>: n} (every cause but the what-if),
//                    "what_if_lost_tokens": {"different_image": n}},
//   "concurrency": {"peak", "mean"},
//   "preemptions": n,
//   "kv_blocks": {"total", "peak_used"},
//   "cluster" (only for a scenario with a cluster: section): {"router", "instances", "pools": [
//       {"name", "role", "gpu", "tensor_parallel_size", "instances", "requests", "finished", "prompt_tokens",
//        "hit_tokens", "token_hit_rate", "ttft_ms" | "tpot_ms" | "e2e_ms": {...}, "peak_kv_usage",
//        "preemptions", "imbalance": {"requests", "busy"},
//        "per_instance": [{"instance", "requests", "busy_s", "token_hit_rate", "peak_kv_usage",
//                          "preemptions"}]}]},
//   "disaggregation" (only for a cluster with prefill and decode pools): {"requests" (prefilled remotely),
//       "flows", "bytes", "transfer_ms": {...} (per request: first flow start to last flow end),
//       "ttft_breakdown_ms": {"router" | "prefill_queue" | "prefill" | "decode_queue" | "transfer" |
//       "first_decode_step": {...}} (disaggregated finished requests; the parts sum to their TTFT),
//       "busiest_links": [{"name", "type", "bytes", "mean_utilisation", "peak_utilisation"}] (up to 5, by
//       bytes; mean over the run's duration, peak the highest rate at any re-solve of the flows)},
//   "kv_offload" (only with engine.kv_offload): {"tier", "size_bytes", "policy", "hit_tokens", "hit_blocks",
//       "hit_requests", "token_hit_rate", "combined_token_hit_rate", "loads", "loaded_bytes", "stored_bytes",
//       "stores_skipped_chunks", "load_ms": {...}},
//   "sim": {"events", "wall_s" (omitted with include_wall_time = false), "fingerprint": "<16 hex>"},
//   "vllm_names": the same figures under vLLM's Prometheus metric names (vllm/v1/metrics/loggers.py,
//       PrometheusStatLogger), summed over instances, times in seconds:
//       {"vllm:time_to_first_token_seconds" | "vllm:inter_token_latency_seconds" |
//        "vllm:request_time_per_output_token_seconds" | "vllm:e2e_request_latency_seconds" |
//        "vllm:request_queue_time_seconds": {"count", "sum", "mean", "p50", "p90", "p95", "p99"},
//        "vllm:prefix_cache_queries", "vllm:prefix_cache_hits", "vllm:num_preemptions",
//        "vllm:prompt_tokens", "vllm:generation_tokens", "vllm:request_success"}
// }
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/metrics/quantiles.h"
#include "sim/metrics/records.h"

namespace kvsim {

// One pool of a cluster as the composition root describes it to the collector.
struct PoolInfo {
  std::string name;
  std::string role;
  std::string gpu;
  int tensor_parallel_size = 1;
  int first_instance = 0;  // its instances are first_instance .. first_instance + instances - 1
  int instances = 0;
  int64_t usable_blocks = 0;  // KV blocks of one instance (the null block excluded)
};

// One directed topology link at the end of a run (disaggregated runs).
struct LinkTotal {
  int id = 0;  // directed link id in the topology (/timeseries/links/link)
  std::string name;
  std::string type;
  double capacity = 0;  // bytes/s
  double bytes = 0;     // carried over the run
  double peak_utilisation = 0;
  double mean_utilisation = 0;
};

struct InstanceSummary {
  int instance = 0;
  int64_t requests = 0;  // requests that left it (finished or rejected)
  double busy_s = 0;     // sum of its step durations
  double token_hit_rate = 0;
  double peak_kv_usage = 0;  // max over its steps of used / usable blocks
  int64_t preemptions = 0;
};

// A pool's block of the summary. The imbalance figures are max over mean across the pool's
// instances (1 = perfectly even; NaN when the mean is 0).
struct PoolSummary {
  PoolInfo info;
  int64_t requests = 0;
  int64_t finished = 0;
  int64_t prompt_tokens = 0;
  int64_t hit_tokens = 0;
  double token_hit_rate = 0;
  Distribution ttft_ms;
  Distribution tpot_ms;
  Distribution e2e_ms;
  double peak_kv_usage = 0;
  int64_t preemptions = 0;
  double requests_imbalance = 0;
  double busy_imbalance = 0;
  std::vector<InstanceSummary> per_instance;
};

// One KV offload tier over a run (summed over instances): hits served from it at first admissions, bytes
// written into it and read out of it (host: to the GPU; lower tiers: promoted to the host), peak use.
struct KvOffloadTier {
  std::string name;
  int64_t size_bytes = 0;  // per instance
  int64_t hit_tokens = 0;
  int64_t hit_blocks = 0;
  int64_t stored_bytes = 0;
  int64_t loaded_bytes = 0;
  int64_t stores_skipped_chunks = 0;
  int64_t peak_used_bytes = 0;  // the largest of the instances' peaks
};

struct RunSummary {
  using KvOffloadTier = kvsim::KvOffloadTier;
  struct Requests {
    int64_t count = 0;  // requests arrived (finished + unfinished)
    int64_t finished = 0;
    int64_t unfinished = 0;
    int64_t in_flight = 0;  // part of unfinished: arrived and still in the cluster when an interrupt stopped the run
    int64_t skipped_trace_lines = 0;  // malformed trace lines skipped (workload.trace.skip_bad_lines): not requests
    std::array<int64_t, kNumRejectReasons> rejected{};  // indexed by RejectReason (part of unfinished)
  } requests;

  // Latencies in milliseconds (see run_collector.h for exact definitions).
  Distribution ttft_ms;
  Distribution tpot_ms;
  Distribution itl_ms;
  Distribution e2e_ms;
  Distribution queue_ms;

  struct Throughput {
    double duration_s = 0;  // first arrival to last finish (simulated)
    double requests_per_s = 0;
    double output_tokens_per_s = 0;  // all generated tokens (unfinished requests' too) / duration_s
  } throughput;

  struct PrefixCache {
    int64_t prompt_tokens = 0;
    int64_t hit_tokens = 0;     // sum of cached_tokens
    double token_hit_rate = 0;  // hit_tokens / prompt_tokens (0 when no prompt tokens)
    // vLLM's counters, in tokens, recorded once per successful admission (RequestRecord): queries /
    // hits of first admissions (vllm:prefix_cache_queries / _hits), and apart the re-admissions after a
    // preemption (PrefixCacheStats.preempted_queries / _hits: a request re-finding its own blocks).
    int64_t queries = 0;
    int64_t hits = 0;
    double hit_rate = 0;  // hits / queries (0 when no queries): vLLM's logged prefix cache hit rate
    int64_t preempted_queries = 0;
    int64_t preempted_hits = 0;
    double preempted_hit_rate = 0;  // preempted_hits / preempted_queries (0 when none)
    int64_t queries_blocks = 0;     // queries in blocks (floor of each request's tokens / block size)
    int64_t hits_blocks = 0;        // hits in blocks
    double block_hit_rate = 0;      // hits_blocks / queries_blocks (0 when none)
    int64_t hit_requests = 0;       // requests with cached_tokens > 0
    std::array<int64_t, kNumMissCauses> lost_tokens_by_cause{};  // indexed by MissCause (what-ifs included)
  } prefix_cache;

  struct Concurrency {
    int64_t peak = 0;
    double mean = 0;  // time-weighted over first arrival .. end of run
  } concurrency;

  int64_t preemptions = 0;
  // vLLM's token counters: vllm:prompt_tokens counts a request's prompt when its first token comes
  // out (IterationStats.update_from_output, is_prefilling); vllm:generation_tokens every generated token.
  int64_t prompt_tokens_prefilled = 0;  // prompts of requests that produced at least one token
  int64_t generated_tokens = 0;         // all generated tokens (unfinished requests' too)

  struct KvBlocks {
    int64_t total = 0;
    int64_t peak_used = 0;
  } kv_blocks;

  // Scenarios with a cluster: section: the router and one block per pool (empty otherwise).
  std::string router;
  std::vector<PoolSummary> pools;

  struct Disaggregation {
    bool present = false;
    int64_t requests = 0;  // prefilled on a prefill instance
    int64_t flows = 0;
    double bytes = 0;
    Distribution transfer_ms;
    Distribution router_ms, prefill_queue_ms, prefill_ms, decode_queue_ms, pull_ms, first_decode_step_ms;
    std::vector<LinkTotal> links;  // every link that carried bytes, by bytes descending then name
  } disaggregation;

  // KV offload (engine.kv_offload): tier hits beyond the GPU hit at first admissions, copies both ways.
  struct KvOffload {
    std::string backend;  // native | lmcache
    bool present = false;
    std::string tier;
    int64_t size_bytes = 0;  // per instance
    std::string policy;
    int64_t hit_tokens = 0;  // sum of tier_cached_tokens
    int64_t hit_blocks = 0;
    int64_t hit_requests = 0;
    double token_hit_rate = 0;           // hit_tokens / prompt tokens
    double combined_token_hit_rate = 0;  // (GPU hit_tokens + tier hit_tokens) / prompt tokens
    int64_t loads = 0;
    int64_t loaded_bytes = 0;  // all TP ranks
    int64_t stored_bytes = 0;
    int64_t stores_skipped_chunks = 0;  // store skipped: the tier was full of chunks it could not evict
    Distribution load_ms;               // per request with a load: admission to load end, queueing included
    int64_t store_wait_steps = 0;       // steps whose forward pass waited on a store (rule 24)
    double store_wait_ms = 0;           // their total wait
    std::vector<KvOffloadTier> tiers;   // per tier, engine.kv_offload.tiers order
    // A colocated run on a topology: the links the tier copies crossed (as disaggregation.links, which
    // holds them with the pulls in a disaggregated run; peaks are not sampled here, so 0).
    std::vector<LinkTotal> links;
  } kv_offload;

  struct Sim {
    uint64_t events = 0;
    double wall_s = 0;  // the one non-deterministic field
    uint64_t fingerprint = 0;
  } sim;
};

struct SummaryJsonOptions {
  // false omits sim.wall_s so that two runs of the same scenario give byte-identical JSON.
  bool include_wall_time = true;
};

// Pretty-printed JSON (2-space indent, trailing newline), byte-identical for identical summaries.
std::string summary_to_json(const RunSummary& s, const SummaryJsonOptions& options = {});
// A short human-readable table for the terminal.
std::string summary_to_text(const RunSummary& s);
// 16 lower-case hex digits.
std::string fingerprint_hex(uint64_t fingerprint);

}  // namespace kvsim
