#pragma once
// `kvsim size ... --recompute`: per context length, the time to reload one request's cache from a
// storage tier against the time to prefill it again, and the crossover length per tier.
//   reload(L)    = tier latency + request_bytes(L) / tier read bandwidth   (whole request, all TP ranks)
//   recompute(L) = sum of calibrated step times of the prefill of L tokens in chunks of
//                  `chunk` tokens (vLLM chunked prefill), each chunk attending to everything before it
// The crossover is where the two curves meet; reload wins on the side where it is smaller.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "sim/model/hardware.h"
#include "sim/model/model_spec.h"
#include "sim/model/sizing.h"
#include "sim/perf/i_latency_model.h"
#include "sim/perf/prefill_time.h"  // prefill_seconds

namespace kvsim {

struct RecomputeRow {
  int64_t context = 0;
  int64_t bytes = 0;
  double recompute_s = 0;
  std::vector<double> reload_s;  // one per tier
};

struct RecomputeCrossover {
  std::string tier;
  // Context where reload and recompute meet (first sign change between 16 tokens and max_context), or
  // -1 when they never meet; `reload_wins_above` tells which side reload is faster on.
  int64_t context = -1;
  bool reload_wins_above = true;
  bool reload_always_faster = false;
};

struct RecomputeReport {
  std::vector<TierSpec> tiers;
  std::vector<RecomputeRow> rows;
  std::vector<RecomputeCrossover> crossovers;
  int64_t chunk = 0;
};

// The most prefill steps (context / chunk) a report prices. check_recompute_chunks throws InputError
// "--recompute: <what> <tokens> in chunks of ..." beyond it.
inline constexpr int64_t kMaxRecomputeChunks = int64_t{1} << 20;
void check_recompute_chunks(int64_t tokens, int64_t chunk, const std::string& what);
RecomputeReport build_recompute_report(const ModelSpec& spec, const ILatencyModel& model, DType kv,
                                       const StateDtypes& dt, const Parallel& par, const std::vector<TierSpec>& tiers,
                                       const std::vector<int64_t>& contexts, int64_t max_context, int64_t chunk);

void print_recompute_report(const RecomputeReport& r, const std::string& model_name, const std::string& gpu,
                            const std::string& latency_model, std::ostream& out);

}  // namespace kvsim
