// PipelineLatencyModel (sim/perf/pipeline_model.h): the step of a PP engine as one trip of its
// micro-batches around the pipeline. Stage models are stand-ins with a hand-set cost (a + b x tokens), so
// the expected step times, bubbles and sends are worked out here from the formula
//   T = max(sum_s t_s(b/M), M x max_s t_s(b/M)) + sends + overhead,  M = min(PP, requests).
#include "sim/perf/pipeline_model.h"

#include <gtest/gtest.h>

#include <limits>

namespace kvsim {
namespace {

class LinearStage final : public ILatencyModel {
 public:
  LinearStage(double a_s, double b_s) : a_(a_s), b_(b_s) {}
  Duration step_time(const BatchShape& b) const override {
    return duration_from_seconds(a_ + b_ * static_cast<double>(b.num_tokens));
  }
  std::string name() const override { return "linear"; }

 private:
  double a_, b_;
};

PipelineLatencyModel pipeline(int pp, double a, double b, double last_extra, LinkCost send, StepOverhead o) {
  std::vector<PipelineStage> stages;
  for (int i = 0; i < pp; ++i)
    stages.push_back({std::make_unique<LinearStage>(a + (i + 1 == pp ? last_extra : 0.0), b)});
  return PipelineLatencyModel(std::move(stages), std::vector<LinkCost>(static_cast<size_t>(pp - 1), send), 1024, o,
                              "linear");
}

// A link that costs nothing: no latency, unbounded bandwidth.
const LinkCost kFree{std::numeric_limits<double>::infinity(), 0};

BatchShape decodes(int n) {
  BatchShape s;
  s.num_tokens = n;
  s.num_decode_requests = n;
  s.decode_context_tokens = 100LL * n;
  return s;
}

TEST(PipelineBubble, FewerRequestsThanStagesLeaveStagesIdle) {
  // PP 4, stages 1 ms + 0.01 ms per token, no sends, no overhead.
  const auto m = pipeline(4, 1e-3, 1e-5, 0, kFree, {});
  // 1 request: M = 1, bubble 3/4; the token goes through all 4 stages: 4 x 1.01 ms.
  const auto one = m.breakdown(decodes(1));
  EXPECT_EQ(one.micro_batches, 1);
  EXPECT_DOUBLE_EQ(one.bubble, 0.75);
  EXPECT_EQ(one.total, Duration::ns(4 * 1010000));
  // 2 requests: M = 2 of 1 token, bubble 1/2: still one trip of 4 x 1.01 ms (sum > 2 x max).
  const auto two = m.breakdown(decodes(2));
  EXPECT_EQ(two.micro_batches, 2);
  EXPECT_DOUBLE_EQ(two.bubble, 0.5);
  EXPECT_EQ(two.total, Duration::ns(4 * 1010000));
  // 8 requests: M = 4 micro-batches of 2 tokens, no bubble: 4 x 1.02 ms.
  const auto eight = m.breakdown(decodes(8));
  EXPECT_EQ(eight.micro_batches, 4);
  EXPECT_DOUBLE_EQ(eight.bubble, 0.0);
  EXPECT_EQ(eight.total, Duration::ns(4 * 1020000));
}

TEST(PipelineBubble, AFullPipelineIsPacedByItsSlowestStage) {
  // PP 2, the last stage 2 ms slower (the LM head): stages 1.04 and 3.04 ms for micro-batches of 4 tokens.
  // 8 requests, M = 2: sum 4.08 ms < 2 x 3.04 = 6.08 ms, so the slow stage paces the trip.
  const auto m = pipeline(2, 1e-3, 1e-5, 2e-3, kFree, {});
  EXPECT_EQ(m.breakdown(decodes(8)).total, Duration::ns(2 * 3040000));
  // 1 request: one micro-batch, no pacing: 1.01 + 3.01 ms.
  EXPECT_EQ(m.breakdown(decodes(1)).total, Duration::ns(1010000 + 3010000));
}

TEST(PipelineBubble, SendsAndOverheadAreAddedOnce) {
  // PP 3 stages of 1 ms + 0.01 ms/token; 12 decodes, M = 3 micro-batches of 4 tokens: 3 x 1.04 ms. Two boundaries each
  // send 2 x 4 tokens x 1024 x 2 B = 16,384 B over a 10 us + 100 GB/s link; overhead 2 ms + 0.1 ms per request x 12.
  const auto m = pipeline(3, 1e-3, 1e-5, 0, {100e9, 10e-6}, {Duration::ms(2), 0, 1e-4});
  const double send = 2 * (10e-6 + 16384 / 100e9);
  const auto r = m.breakdown(decodes(12));
  EXPECT_EQ(r.micro_batches, 3);
  EXPECT_NEAR(r.send_s, send, 1e-15);
  EXPECT_EQ(r.total, Duration::ns(3 * 1040000) + duration_from_seconds(send + 12 * 1e-4) + Duration::ms(2));
}

TEST(PipelineBubble, EachTpRankSendsItsSliceAndTheNextStageGathersThem) {
  // TP 8: vLLM sends IntermediateTensors with all_gather_group = the TP group, so each rank sends 1/8 of
  // the 16,384 B of the test above over its own link and the next stage all-gathers the slices over a
  // 5 us + 360 GB/s link: per boundary 10 us + 2,048 B / 100 GB/s + 5 us + 7/8 x 16,384 B / 360 GB/s.
  std::vector<PipelineStage> stages;
  for (int i = 0; i < 3; ++i) stages.push_back({std::make_unique<LinearStage>(1e-3, 1e-5)});
  const PipelineLatencyModel m(std::move(stages), std::vector<LinkCost>(2, LinkCost{100e9, 10e-6}), 1024,
                               StepOverhead{}, "linear", 8, LinkCost{360e9, 5e-6});
  const double per = 10e-6 + 2048 / 100e9 + 5e-6 + 7.0 / 8 * 16384 / 360e9;
  EXPECT_NEAR(m.breakdown(decodes(12)).send_s, 2 * per, 1e-15);
}

TEST(PipelineBubble, MicroBatchSplitsTheAggregatesEvenly) {
  BatchShape b = decodes(10);
  b.prefill_attn_pairs = 900;
  const BatchShape mb = PipelineLatencyModel::micro_batch(b, 4);
  EXPECT_EQ(mb.num_tokens, 3);  // ceil(10 / 4)
  EXPECT_EQ(mb.num_decode_requests, 3);
  EXPECT_EQ(mb.decode_context_tokens, 250);  // 1000 / 4
  EXPECT_DOUBLE_EQ(mb.prefill_attn_pairs, 225);
  EXPECT_EQ(PipelineLatencyModel::micro_batch(b, 1).num_tokens, 10);
}

}  // namespace
}  // namespace kvsim
