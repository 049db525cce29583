#include "sim/perf/pipeline_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/core/check.h"

namespace kvsim {
namespace {

int64_t ceil_div(int64_t a, int64_t m) { return (a + m - 1) / m; }

}  // namespace

PipelineLatencyModel::PipelineLatencyModel(std::vector<PipelineStage> stages, std::vector<LinkCost> sends,
                                           double hidden, StepOverhead overhead, std::string base_name, int tp,
                                           LinkCost gather)
    : stages_(std::move(stages)),
      sends_(std::move(sends)),
      tp_(std::max(tp, 1)),
      gather_(gather),
      hidden_(hidden),
      overhead_(overhead),
      name_(std::move(base_name)) {
  KVSIM_CHECK(!stages_.empty(), "a pipeline needs at least one stage");
  KVSIM_CHECK(sends_.size() + 1 == stages_.size(), "one send per stage boundary");
}

BatchShape PipelineLatencyModel::micro_batch(const BatchShape& b, int m) {
  if (m <= 1) return b;
  BatchShape s;
  const double d = m;
  s.num_tokens = ceil_div(b.num_tokens, m);
  s.num_prefill_tokens = ceil_div(b.num_prefill_tokens, m);
  s.num_prefill_requests = static_cast<int>(ceil_div(b.num_prefill_requests, m));
  s.num_decode_requests = static_cast<int>(ceil_div(b.num_decode_requests, m));
  s.prefill_attn_pairs = b.prefill_attn_pairs / d;
  s.prefill_attn_pairs_windowed = b.prefill_attn_pairs_windowed / d;
  s.decode_context_tokens = ceil_div(b.decode_context_tokens, m);
  s.decode_context_tokens_windowed = ceil_div(b.decode_context_tokens_windowed, m);
  s.state_copy_bytes = ceil_div(b.state_copy_bytes, m);
  s.state_requests = ceil_div(b.state_requests, m);
  s.prefill_context_tokens = ceil_div(b.prefill_context_tokens, m);
  s.prefill_context_tokens_windowed = ceil_div(b.prefill_context_tokens_windowed, m);
  s.prefill_attn_pairs_sparse = b.prefill_attn_pairs_sparse / d;
  s.decode_context_tokens_sparse = ceil_div(b.decode_context_tokens_sparse, m);
  s.prefill_context_tokens_sparse = ceil_div(b.prefill_context_tokens_sparse, m);
  return s;
}

PipelineBreakdown PipelineLatencyModel::breakdown(const BatchShape& b) const {
  PipelineBreakdown r;
  if (b.num_tokens <= 0) return r;
  const int pp = static_cast<int>(stages_.size());
  const int64_t requests = static_cast<int64_t>(b.num_prefill_requests) + b.num_decode_requests;
  r.micro_batches = static_cast<int>(std::clamp<int64_t>(requests, 1, pp));
  r.bubble = static_cast<double>(pp - r.micro_batches) / pp;
  const BatchShape mb = micro_batch(b, r.micro_batches);
  Duration sum, most;
  for (const PipelineStage& s : stages_) {
    const Duration t = s.model->step_time(mb);
    sum += t;
    most = std::max(most, t);
  }
  const Duration paced = Duration::ns(most.ns() * r.micro_batches);
  // vLLM sends hidden_states and residual (IntermediateTensors), BF16, each TP rank its 1 / TP slice over
  // its own link, and the next stage's TP group all-gathers them (gpu_worker.py: send_tensor_dict(...,
  // all_gather_group=get_tp_group())).
  const double send_bytes = 2.0 * static_cast<double>(mb.num_tokens) * hidden_ * 2.0;
  const double gather_s = tp_ > 1 ? gather_.seconds((tp_ - 1.0) / tp_ * send_bytes) : 0.0;
  for (const LinkCost& l : sends_) r.send_s += l.seconds(send_bytes / tp_) + gather_s;
  r.overhead_s = overhead_.fixed_s + overhead_.per_request_s * static_cast<double>(requests);
  r.stage_sum_s = sum.seconds();
  r.stage_max_s = most.seconds();
  r.total = std::max(sum, paced) + duration_from_seconds(r.send_s + r.overhead_s) + overhead_.fixed;
  return r;
}

}  // namespace kvsim
