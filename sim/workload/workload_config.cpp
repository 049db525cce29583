#include "sim/workload/workload_config.h"

#include <algorithm>
#include <cmath>

#include "sim/core/errors.h"
#include "sim/model/json.h"
#include "sim/workload/impl/dist_sampling.h"
#include "sim/workload/impl/synthetic_sources.h"
#include "sim/workload/impl/trace_readers.h"

namespace kvsim {
namespace {

[[noreturn]] void fail(const std::string& where, const std::string& key, const std::string& msg) {
  throw InputError(where + "." + key + ": " + msg);
}

std::string got(double v) {
  return " (got " + (std::isfinite(v) ? json_number(v) : std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf") + ")";
}
std::string got(int64_t v) { return " (got " + std::to_string(v) + ")"; }

void validate_trace(const TraceConfig& t, const std::string& w) {
  if (t.format != "mooncake" && t.format != "azure" && t.format != "native") {
    fail(w, "format", "unknown '" + t.format + "' (valid: mooncake, azure, native)");
  }
  if (t.path.empty()) fail(w, "path", "must name a trace file");
  if (t.block_size <= 0) fail(w, "block_size", "must be > 0" + got(int64_t{t.block_size}));
  if (t.limit < 0) fail(w, "limit", "must be >= 0 (0 = all)" + got(t.limit));
  if (!(t.time_scale > 0.0) || !std::isfinite(t.time_scale)) fail(w, "time_scale", "must be > 0" + got(t.time_scale));
  if (t.max_tokens <= 0) fail(w, "max_tokens", "must be > 0" + got(t.max_tokens));
}

void validate_synthetic(const SyntheticConfig& s, const std::string& w) {
  const bool open_rate = s.kind == "poisson" || s.kind == "gamma" || s.kind == "multi_turn";
  if (!open_rate && s.kind != "shared_prefix") {
    fail(w, "kind", "unknown '" + s.kind + "' (valid: poisson, gamma, shared_prefix, multi_turn)");
  }
  if (s.num_requests < 0) fail(w, "num_requests", "must be >= 0 (0 = no limit)" + got(s.num_requests));
  if (s.num_requests > kMaxSyntheticRequests)
    fail(w, "num_requests", "must be <= " + std::to_string(kMaxSyntheticRequests) + got(s.num_requests));
  if (!(s.duration >= 0.0) || !std::isfinite(s.duration)) fail(w, "duration", "must be >= 0 s" + got(s.duration));
  if (!(s.rate >= 0.0) || !std::isfinite(s.rate)) fail(w, "rate", "must be >= 0" + got(s.rate));
  validate_dist(s.output_tokens, w + ".output_tokens");
  if (open_rate && !(s.rate > 0.0)) fail(w, "rate", "must be > 0" + got(s.rate));
  if (s.kind == "poisson" || s.kind == "gamma") {
    // 1/cv^2 is the gamma shape: below 1e-6 it overflows the sampler, above 1e6 every gap is 0 or past the clock.
    if (s.kind == "gamma" && !(s.cv >= 1e-6 && s.cv <= 1e6)) fail(w, "cv", "must be in [1e-6, 1e6]" + got(s.cv));
    validate_dist(s.input_tokens, w + ".input_tokens");
    if (s.num_requests == 0 && s.duration == 0.0) fail(w, "num_requests", "set num_requests or duration (or both)");
  } else if (s.kind == "shared_prefix") {
    if (s.groups < 1) fail(w, "groups", "must be >= 1" + got(s.groups));
    if (s.requests_per_group < 1) fail(w, "requests_per_group", "must be >= 1" + got(s.requests_per_group));
    if (s.groups > (int64_t{1} << 40) / s.requests_per_group)
      fail(w, "groups", "groups x requests_per_group too large");
    const int64_t slots = s.groups * s.requests_per_group;
    const int64_t total = s.num_requests > 0 ? std::min(slots, s.num_requests) : slots;
    if (total > kMaxSyntheticRequests)
      fail(w, "groups",
           "groups x requests_per_group (capped by num_requests) must be <= " + std::to_string(kMaxSyntheticRequests) +
               got(total));
    // order random draws the whole permutation up front (8 bytes a slot).
    if (s.order == "random" && slots > kMaxRandomOrderSlots)
      fail(w, "order",
           "random needs groups x requests_per_group <= " + std::to_string(kMaxRandomOrderSlots) + got(slots) +
               "; use interleaved or grouped");
    if (s.prefix_tokens < 0) fail(w, "prefix_tokens", "must be >= 0" + got(s.prefix_tokens));
    if (s.suffix_tokens < 0) fail(w, "suffix_tokens", "must be >= 0" + got(s.suffix_tokens));
    if (s.prefix_tokens + s.suffix_tokens < 1) fail(w, "suffix_tokens", "prefix_tokens + suffix_tokens must be >= 1");
    if (s.concurrency < 0) fail(w, "concurrency", "must be >= 0" + got(int64_t{s.concurrency}));
    if ((s.concurrency > 0) == (s.rate > 0.0)) {
      fail(w, "concurrency", "set exactly one of concurrency (closed loop) and rate (open loop)");
    }
    // A closed loop sends each request when a slot frees, not at a drawn time: a duration would be read
    // and silently ignored (all groups x requests_per_group still ran).
    if (s.concurrency > 0 && s.duration > 0.0)
      fail(w, "duration",
           "bounds open-loop arrivals only; a closed loop (concurrency) sends groups x "
           "requests_per_group requests, capped by num_requests");
    validate_dist(s.turnaround, w + ".turnaround");
    if (s.concurrency == 0 && (s.turnaround.kind != "fixed" || s.turnaround.value != 0.0))
      fail(w, "turnaround", "applies to a closed loop only (set concurrency)");
    if (s.order != "interleaved" && s.order != "grouped" && s.order != "random") {
      fail(w, "order", "unknown '" + s.order + "' (valid: interleaved, grouped, random)");
    }
  } else {  // multi_turn
    if (s.sessions < 0) fail(w, "sessions", "must be >= 0 (0 = until duration)" + got(s.sessions));
    if (s.sessions > kMaxSyntheticRequests)
      fail(w, "sessions", "must be <= " + std::to_string(kMaxSyntheticRequests) + got(s.sessions));
    // think_from answer draws a session's turns when it starts (24 bytes each): bounded so that a session
    // in progress stays small (1e9 turns needed 24 GB); each turn re-sends the whole history, so a
    // conversation of thousands of turns outgrows every context anyway.
    if (s.turns > kMaxTurns) fail(w, "turns", "must be <= " + std::to_string(kMaxTurns) + got(s.turns));
    if (s.sessions == 0 && s.duration == 0.0) fail(w, "sessions", "set sessions or duration (or both)");
    if (s.turns < 1) fail(w, "turns", "must be >= 1" + got(s.turns));
    if (s.system_prompt_tokens < 0) fail(w, "system_prompt_tokens", "must be >= 0" + got(s.system_prompt_tokens));
    validate_dist(s.think_time, w + ".think_time");
    validate_dist(s.user_tokens, w + ".user_tokens");
    // Sessions pace themselves with think_time; a turnaround would be read and silently ignored.
    if (s.turnaround.kind != "fixed" || s.turnaround.value != 0.0)
      fail(w, "turnaround", "applies to kind shared_prefix with concurrency only (multi_turn paces with think_time)");
  }
}

}  // namespace

void validate_workload_config(const WorkloadConfig& config, const std::string& where) {
  if (config.trace.has_value() == config.synthetic.has_value()) {
    throw InputError(where + ": set exactly one of 'trace' and 'synthetic'");
  }
  if (config.trace) validate_trace(*config.trace, where + ".trace");
  if (config.synthetic) validate_synthetic(*config.synthetic, where + ".synthetic");
}

std::unique_ptr<IRequestSource> make_request_source(const WorkloadConfig& config, RandomStreams& rng) {
  validate_workload_config(config);
  if (config.trace) {
    const TraceConfig& t = *config.trace;
    if (t.format == "mooncake") return make_mooncake_reader(t);
    if (t.format == "azure") return make_azure_reader(t);
    return make_native_reader(t);
  }
  const SyntheticConfig& s = *config.synthetic;
  if (s.kind == "shared_prefix") return make_shared_prefix_source(s, rng);
  if (s.kind == "multi_turn") return make_multi_turn_source(s, rng);
  return make_open_loop_source(s, rng);
}

}  // namespace kvsim
