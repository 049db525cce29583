#include "sim/app/step_report.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "sim/perf/batch_shape.h"
#include "sim/perf/calibrated_model.h"
#include "sim/perf/pipeline_model.h"

namespace kvsim {
namespace {

// The step's shape as the engine builds it (EngineInstance::batch_shape): the same window and top-k, and
// every request of a model with recurrent state reads and writes it (no checkpoint copies).
BatchShape shape_of(const StepRequest& q, const EngineConfig& engine) {
  const int64_t window = engine.layout.first_window();
  const bool state = std::any_of(engine.layout.groups.begin(), engine.layout.groups.end(),
                                 [](const KvCacheGroup& g) { return g.kind == KvGroupKind::kState; });
  BatchShape b;
  for (int64_t i = 0; i < q.decodes; ++i) add_decode(b, q.context, window, engine.sparse_topk);
  for (int64_t i = 0; i < q.prefills; ++i)
    add_prefill_chunk(b, q.prefill_cached, q.prefill_tokens, window, engine.sparse_topk);
  if (state) b.state_requests = q.decodes + q.prefills;
  return b;
}

std::string ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", seconds * 1e3);
  return buf;
}

// One table line: the batch, then each column's milliseconds.
void print_line(std::ostream& out, const StepRequest& q, const BatchShape& b, int64_t padded, Duration total,
                const std::vector<double>& parts) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%8lld %8lld %8lld %8lld %9lld %7lld %11s", static_cast<long long>(q.decodes),
                static_cast<long long>(q.context), static_cast<long long>(q.prefills * q.prefill_tokens),
                static_cast<long long>(q.prefill_cached), static_cast<long long>(b.num_tokens),
                static_cast<long long>(padded), ms(total.seconds()).c_str());
  out << buf;
  for (double p : parts) {
    std::snprintf(buf, sizeof buf, " %11s", ms(p).c_str());
    out << buf;
  }
  out << "\n";
}

void print_header(std::ostream& out, const std::vector<std::string>& parts) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%8s %8s %8s %8s %9s %7s %11s", "decodes", "context", "prefill", "cached", "tokens",
                "padded", "total_ms");
  out << buf;
  for (const std::string& p : parts) {
    std::snprintf(buf, sizeof buf, " %11s", p.c_str());
    out << buf;
  }
  out << "\n";
}

}  // namespace

void print_step_table(const PoolModel& m, const std::vector<StepRequest>& lines, std::ostream& out) {
  const auto* cal = dynamic_cast<const CalibratedLatencyModel*>(m.latency.get());
  const auto* pipe = dynamic_cast<const PipelineLatencyModel*>(m.latency.get());
  if (cal) {
    print_header(out, {"linear", "lm_head", "moe", "attn_pre", "attn_dec", "state", "allreduce", "dp_ep_comm", "block",
                       "eager_floor", "overhead"});
  } else if (pipe) {
    print_header(out, {"stage_sum", "stage_max", "send", "overhead"});
  } else {
    print_header(out, {});
  }
  for (const StepRequest& q : lines) {
    const BatchShape b = shape_of(q, m.engine);
    if (cal) {
      const CalibratedBreakdown r = cal->breakdown(b);
      print_line(out, q, b, r.padded_tokens, r.total,
                 {r.linear_s, r.lm_head_s, r.moe_s, r.prefill_attention_s, r.decode_attention_s, r.state_s,
                  r.allreduce_s, r.parallel_s, r.block_s, r.eager_floor_s, r.overhead_s});
    } else if (pipe) {
      const PipelineBreakdown r = pipe->breakdown(b);
      // The overhead as the total holds it: the calibrated stages' c0 + c1 x requests, or the roofline's fixed
      // step overhead (StepOverhead::fixed, outside overhead_s).
      const double paced = std::max(r.stage_sum_s, r.micro_batches * r.stage_max_s);
      print_line(out, q, b, b.num_tokens, r.total,
                 {r.stage_sum_s, r.stage_max_s, r.send_s, r.total.seconds() - paced - r.send_s});
    } else {
      print_line(out, q, b, b.num_tokens, m.latency->step_time(b), {});
    }
  }
  if (cal)
    out << "columns (ms): linear = GEMMs, norms, rope and embedding at the padded token count; moe = fused experts; "
           "attn_pre / attn_dec = prefill / decode attention; allreduce = TP; dp_ep_comm = MoE all-gather or "
           "all-to-all; block = paged block size against the tables' 64; overhead = c0 + c1 x requests "
           "(sim/perf/calibrated_model.h)\n";
  if (pipe)
    out << "pipeline: step = max(stage_sum, M x stage_max) + send + overhead over M micro-batches "
           "(sim/perf/pipeline_model.h)\n";
}

}  // namespace kvsim
