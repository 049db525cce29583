#pragma once
// Prefill time of a span of one request's prompt on its own, chunked as vLLM's chunked prefill runs it:
// chunks of `chunk` tokens over (start, start + tokens], each attending to everything before it. Shared
// by `kvsim size --recompute` (start 0) and the offload cost policy (sim/tier/kv_offload.h).
#include <cstdint>

#include "sim/perf/i_latency_model.h"

namespace kvsim {

double prefill_seconds(const ILatencyModel& model, int64_t tokens, int64_t chunk, int64_t start = 0);

}  // namespace kvsim
