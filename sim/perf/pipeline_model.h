#pragma once
// PipelineLatencyModel: one engine step under pipeline parallelism, priced from per-stage models.
//
// vLLM V1 runs PP with a batch queue: EngineCore.step_with_batch_queue (vllm/v1/engine/core.py) keeps up
// to max_concurrent_batches = PP batches in flight (the executor's max_concurrent_batches), schedules a
// new micro-batch whenever the queue has room, and the scheduler never puts a request into a second
// in-flight batch (vllm/v1/core/sched/scheduler.py). Each request therefore gets its next token once per
// trip of its micro-batch around the pipeline. kvsim's engine prices one step for all its running
// requests, so a step here is that trip with the batch split into M = min(PP, requests) micro-batches
// of equal shape (the batch's aggregates divided by M, counts rounded up):
//
//   T = max(sum_s t_s(b / M), M * max_s t_s(b / M)) + sum_boundaries t_send(b / M) + overhead(b)
//
//   t_s     stage s's model (its layers; the LM head on the last stage), without the per-step overhead
//   sum     one micro-batch's way through every stage (the pipeline is not full: M < PP)
//   M * max a full pipeline is paced by its slowest stage: every stage runs all M micro-batches
//   bubble  (PP - M) / PP of the stage slots idle when the batch has fewer than PP requests
//   t_send  2 * m * hidden * 2 bytes (hidden states and residual, BF16) per stage boundary, over NVLink
//           or the NIC (parallel_terms.h)
//   overhead the engine's per-step CPU cost (c0 + c1 * requests), once per step: vLLM schedules the next
//           micro-batch while others run, so it is paid once per trip, not per stage.
// Not modelled: unequal micro-batches (a prefill chunk and decodes land in different micro-batches in
// vLLM), the token budget per micro-batch (kvsim applies max_num_batched_tokens to the whole step).
#include <memory>
#include <string>
#include <vector>

#include "sim/perf/i_latency_model.h"
#include "sim/perf/parallel_terms.h"

namespace kvsim {

// The engine's per-step overhead, paid once per step: roofline `fixed` (the GPU file's step_overhead),
// calibrated fixed_s + per_request_s * requests (overhead.csv c0, c1).
struct StepOverhead {
  Duration fixed;
  double fixed_s = 0;
  double per_request_s = 0;
};

struct PipelineStage {
  std::unique_ptr<ILatencyModel> model;  // the stage's layers, no per-step overhead
};

struct PipelineBreakdown {
  int micro_batches = 0;  // M
  double stage_sum_s = 0;
  double stage_max_s = 0;
  double send_s = 0;
  double overhead_s = 0;
  double bubble = 0;  // (PP - M) / PP
  Duration total;
};

class PipelineLatencyModel final : public ILatencyModel {
 public:
  // `sends`: one LinkCost per stage boundary (PP - 1), the link of one TP rank's slice; `gather`: the
  // receiving TP group's all-gather of the TP slices (tp > 1).
  PipelineLatencyModel(std::vector<PipelineStage> stages, std::vector<LinkCost> sends, double hidden,
                       StepOverhead overhead, std::string base_name, int tp = 1, LinkCost gather = {});

  Duration step_time(const BatchShape& batch) const override { return breakdown(batch).total; }
  std::string name() const override { return name_; }
  PipelineBreakdown breakdown(const BatchShape& batch) const;
  // The shape of one of M equal micro-batches of `b`.
  static BatchShape micro_batch(const BatchShape& b, int m);

 private:
  std::vector<PipelineStage> stages_;
  std::vector<LinkCost> sends_;
  int tp_ = 1;
  LinkCost gather_;
  double hidden_ = 0;
  StepOverhead overhead_;
  std::string name_;
};

}  // namespace kvsim
