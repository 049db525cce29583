#pragma once
// The step table of `kvsim step` and `kvsim validate --explain`: one line per batch, its time and, for the
// calibrated model, its operators (or, under PP, the pipeline's terms), from the pool's own latency model.
#include <cstdint>
#include <ostream>
#include <vector>

#include "sim/app/simulation.h"

namespace kvsim {

struct StepRequest {
  int64_t decodes = 0;
  int64_t context = 0;         // tokens in each decode request's cache before the step
  int64_t prefills = 0;        // prefill chunks
  int64_t prefill_tokens = 0;  // tokens of each chunk
  int64_t prefill_cached = 0;  // tokens computed before each chunk
};

// A header, one line per request, and a line naming the columns.
void print_step_table(const PoolModel& m, const std::vector<StepRequest>& lines, std::ostream& out);

}  // namespace kvsim
