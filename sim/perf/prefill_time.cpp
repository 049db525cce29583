#include "sim/perf/prefill_time.h"

#include <algorithm>

namespace kvsim {

double prefill_seconds(const ILatencyModel& model, int64_t tokens, int64_t chunk, int64_t start) {
  double t = 0;
  const int64_t end = start + tokens;
  for (int64_t done = start; done < end; done += chunk) {
    const int64_t c = std::min(chunk, end - done);
    BatchShape b;
    b.num_tokens = c;
    b.num_prefill_tokens = c;
    b.num_prefill_requests = 1;
    const double cd = static_cast<double>(c);
    b.prefill_attn_pairs = cd * (static_cast<double>(done) + (cd + 1) / 2);
    b.prefill_attn_pairs_windowed = b.prefill_attn_pairs;
    b.prefill_context_tokens = done + c;
    b.prefill_context_tokens_windowed = done + c;
    t += model.step_time(b).seconds();
  }
  return t;
}

}  // namespace kvsim
