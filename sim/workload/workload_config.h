#pragma once
// Workload configuration: plain structs that the scenario loader fills from YAML, and the factory
// that turns them into an IRequestSource. Name-valued fields are strings exactly as written in the
// scenario; validate_workload_config() checks them and every number, and its errors name the key
// path ("workload.synthetic.rate: must be > 0 (got 0)").
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sim/core/random.h"
#include "sim/workload/request.h"

namespace kvsim {

// Bounds that keep a synthetic workload finite in memory and time: requests (num_requests, the
// shared-prefix slots, sessions, turns), and the slots of a shared-prefix `order: random`, whose
// permutation is drawn up front.
constexpr int64_t kMaxSyntheticRequests = 1'000'000'000;
constexpr int64_t kMaxTurns = 10'000;                       // multi_turn: turns per conversation
constexpr int64_t kMaxRandomOrderSlots = int64_t{1} << 27;  // 1 GiB of permutation

// Replay of a recorded trace. Arrival i is time_scale * (t_i - t_0), where t_0 is 0 for formats
// whose timestamps already start at the trace start (mooncake, native) and the first row's time for
// wall-clock formats (azure). Request ids follow file order.
struct TraceConfig {
  std::string format;               // "mooncake" | "azure" | "native" (see traces/README.md)
  std::string path;                 // file to read, line by line; never loaded whole
  int block_size = 512;             // mooncake: tokens per hash id (512 in the FAST'25 traces)
  int64_t limit = 0;                // stop after this many requests; 0 = read to the end
  double time_scale = 1.0;          // multiplies every inter-arrival gap (> 0; 0.5 = twice the rate)
  bool skip_bad_lines = false;      // count malformed lines (skipped_lines()) instead of failing
  int64_t max_tokens = 10'000'000;  // any prompt, segment or output longer than this is an error
};

// A token-count (or seconds) distribution. Samples are clamped to [min, max] (max 0 = no upper
// bound); token counts are rounded to the nearest integer and are at least 1.
struct DistSpec {
  std::string kind = "fixed";  // "fixed" | "uniform" | "normal" | "lognormal" | "exponential"
  double value = 0.0;          // fixed: the value
  double mean = 0.0;           // normal, lognormal, exponential: mean of the resulting values
  double stddev = 0.0;         // normal, lognormal: standard deviation of the resulting values
  double min = 0.0;            // uniform: lower bound (inclusive); all kinds: clamp floor
  double max = 0.0;            // uniform: upper bound (inclusive); all kinds: clamp ceiling (0 = none)

  static DistSpec fixed(double v) {
    DistSpec d;
    d.value = v;
    return d;
  }
};

// Synthetic requests, drawn from named random streams ("workload/arrivals", "workload/input_tokens",
// "workload/output_tokens", "workload/order", "workload/think_time", "workload/user_tokens"), so the
// same seed gives the same requests. Every prompt token not explicitly shared is unique content.
struct SyntheticConfig {
  // "poisson": exponential inter-arrivals at `rate`.
  // "gamma": gamma inter-arrivals with mean 1/rate and coefficient of variation `cv`.
  // "shared_prefix": groups x requests_per_group prompts, each a group prefix + a unique suffix.
  // "multi_turn": conversations whose turns re-send the whole history.
  std::string kind = "poisson";
  double rate = 0.0;         // requests/s (poisson, gamma, shared_prefix open loop); sessions/s (multi_turn)
  double cv = 1.0;           // gamma: coefficient of variation of inter-arrival times (> 0; 1 = Poisson)
  int64_t num_requests = 0;  // stop after this many requests; 0 = no count limit
  double duration = 0.0;     // s; no arrival (multi_turn: no session start) after this; 0 = no limit
  DistSpec input_tokens = DistSpec::fixed(512);   // poisson, gamma: prompt length (tokens)
  DistSpec output_tokens = DistSpec::fixed(128);  // every kind: output length (tokens)

  // shared_prefix
  int64_t groups = 1;                 // number of distinct prefixes
  int64_t requests_per_group = 1;     // requests sharing each prefix
  int64_t prefix_tokens = 0;          // tokens of each group's shared prefix (>= 0)
  int64_t suffix_tokens = 0;          // tokens of each request's unique suffix (>= 0; prefix+suffix >= 1)
  int concurrency = 0;                // > 0: closed loop, this many in flight (then rate must be 0)
  std::string order = "interleaved";  // "interleaved" (g0r0, g1r0, ..., g0r1, ...) | "grouped" | "random"
  // Closed loop only: seconds the client takes to send each request once its slot is free (after the
  // slot's previous request finished, or at the start), drawn per request from "workload/turnaround".
  // Each slot turns around on its own. Not part of TTFT (the request arrives after it). Default 0:
  // every free slot is refilled at once.
  DistSpec turnaround = DistSpec::fixed(0.0);

  // multi_turn
  int64_t sessions = 1;  // conversations to start (0 = until duration)
  int64_t turns = 1;     // requests per conversation (>= 1)
  // s the user thinks before the next turn: from the previous turn's answer (think_from: answer, the
  // default: the next turn is sent think_time after the previous one finished, as a chat client does),
  // or from its arrival (think_from: arrival: an open loop that may send a turn before the answer it
  // re-sends exists).
  DistSpec think_time = DistSpec::fixed(10.0);
  bool think_from_answer = true;
  DistSpec user_tokens = DistSpec::fixed(256);  // new user tokens per turn
  int64_t system_prompt_tokens = 0;             // shared by every session's first segment (0 = none)
};

// Exactly one of trace and synthetic is set.
struct WorkloadConfig {
  std::optional<TraceConfig> trace;
  std::optional<SyntheticConfig> synthetic;
};

// Throws InputError "<where>.<key>: <problem>" for the first invalid field.
void validate_workload_config(const WorkloadConfig& config, const std::string& where = "workload");

// Validates `config` and builds its source. The source keeps references to streams inside `rng`,
// which must outlive it. A missing trace file is an InputError naming the path.
std::unique_ptr<IRequestSource> make_request_source(const WorkloadConfig& config, RandomStreams& rng);

}  // namespace kvsim
