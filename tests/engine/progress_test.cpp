// The progress rules (scheduler.h). A request that preempts itself while alone in the KV cache is
// retried once as vLLM does; preempting itself alone again at the same point rejects it
// (RejectReason::kNoProgress) instead of recomputing it forever (issue 15's livelock). The watchdog
// fails loudly once a request is preempted max_preemptions_without_progress times without computing
// a new token.
#include <gtest/gtest.h>

#include <stdexcept>

#include "sim/app/simulation.h"
#include "sim/core/check.h"
#include "sim/core/errors.h"
#include "sim/model/config_reader.h"
#include "sim/scenario/scenario.h"
#include "tests/engine/engine_test_util.h"

namespace kvsim {
namespace {

using testing::config_for;
using testing::full_layout;
using testing::make_request;
using testing::RecordingSink;
using testing::run_engine;
using testing::text;

// Before the rule the run never ended: stop it after this many steps instead of hanging the test.
constexpr size_t kStepGuard = 20000;

void guard(RecordingSink& sink) {
  sink.step_hook = [&sink](const StepRecord&) {
    if (sink.steps.size() > kStepGuard) throw std::runtime_error("livelock: no end after 20000 steps");
  };
}

// Issue 15: block_size 528, 2000-token prompt in 100-token chunks, no full-prompt reservation.
EngineConfig issue15_config(int64_t num_blocks, bool caching) {
  EngineConfig c = config_for(full_layout(528, num_blocks));
  c.long_prefill_token_threshold = 100;
  c.scheduler_reserve_full_isl = false;
  c.enable_prefix_caching = caching;
  return c;
}

TEST(Progress, RequestThatPreemptsItselfAloneIsRejectedNotRecomputedForever) {
  for (bool caching : {false, true}) {
    RecordingSink sink;
    guard(sink);
    run_engine(issue15_config(2, caching), {make_request(0, 0, {text(1, 2000)}, 10)}, sink);
    ASSERT_EQ(sink.requests.size(), 1u);
    const RequestRecord& r = sink.requests.at(0);
    EXPECT_FALSE(r.finished);
    EXPECT_EQ(r.rejected, RejectReason::kNoProgress) << reject_reason_name(r.rejected);
    EXPECT_EQ(r.preemptions, 2);  // retried once, as vLLM would, then rejected
    EXPECT_LT(sink.steps.size(), 30u);
  }
}

TEST(Progress, HybridRequestThatPreemptsItselfAloneIsRejected) {
  // Issue 15's second reproducer below the start-up check (which refuses its scenario): Qwen3-Next
  // TP8 in 10 blocks, threshold 100, prefix caching on, no junction checkpoint, 600 in / 100 out.
  const Scenario s = load_scenario("tests/bad_input/files/livelock-qwen3-next.yaml");
  EngineConfig c = resolve_engine_config(s, read_model_config(s.model));
  ASSERT_EQ(c.layout.num_blocks, 10);
  RecordingSink sink;
  guard(sink);
  run_engine(c, {make_request(0, 0, {text(1, 600)}, 100)}, sink);
  EXPECT_EQ(sink.requests.at(0).rejected, RejectReason::kNoProgress)
      << reject_reason_name(sink.requests.at(0).rejected);
  EXPECT_FALSE(sink.requests.at(0).finished);
}

TEST(Progress, NoProgressLimitProbedOnBothSides) {
  // 2000 prompt + 10 output tokens need 4 blocks of 528: 3 usable blocks never finish, 4 do.
  RecordingSink small;
  guard(small);
  run_engine(issue15_config(4, true), {make_request(0, 0, {text(1, 2000)}, 10)}, small);
  EXPECT_EQ(small.requests.at(0).rejected, RejectReason::kNoProgress);
  RecordingSink enough;
  guard(enough);
  run_engine(issue15_config(5, true), {make_request(0, 0, {text(1, 2000)}, 10)}, enough);
  EXPECT_TRUE(enough.requests.at(0).finished);
  EXPECT_EQ(enough.requests.at(0).rejected, RejectReason::kNone);
  EXPECT_EQ(enough.requests.at(0).preemptions, 0);
}

TEST(Progress, DecodeThatOutgrowsTheCacheIsRejectedWithItsTokens) {
  // The prompt fits but prompt + output does not: stuck in decode. (When the retry's first chunk does
  // not fit it is refused admission instead: kDoesNotFit, as before.)
  EngineConfig c = config_for(full_layout(16, 5));  // 4 usable blocks = 64 tokens
  c.scheduler_reserve_full_isl = false;
  c.long_prefill_token_threshold = 16;  // the retry is admitted chunk by chunk
  c.enable_prefix_caching = false;      // (with caching its hit alone needs every block again)
  RecordingSink sink;
  guard(sink);
  run_engine(c, {make_request(0, 0, {text(1, 40)}, 100), make_request(1, 1000, {text(2, 20)}, 5)}, sink);
  EXPECT_EQ(sink.requests.at(0).rejected, RejectReason::kNoProgress);
  EXPECT_EQ(sink.requests.at(0).output_tokens, 25);  // 25 tokens out when the 65th needed a 5th block
  EXPECT_TRUE(sink.requests.at(1).finished);         // the engine goes on
}

TEST(Progress, ContendedRequestsStillFinish) {
  // Two requests that each need most of the pool: the later one is preempted and retried while the
  // earlier one runs; that is progress, not a livelock.
  EngineConfig c = config_for(full_layout(16, 9));  // 8 usable blocks
  c.scheduler_reserve_full_isl = false;
  RecordingSink sink;
  guard(sink);
  run_engine(c, {make_request(0, 0, {text(1, 60)}, 40), make_request(1, 0, {text(2, 60)}, 40)}, sink);
  EXPECT_TRUE(sink.requests.at(0).finished);
  EXPECT_TRUE(sink.requests.at(1).finished);
  EXPECT_GT(sink.requests.at(1).preemptions, 0);
}

TEST(Progress, WatchdogFailsLoudlyAtTheLimit) {
  EngineConfig c = config_for(full_layout(16, 9));
  c.scheduler_reserve_full_isl = false;
  c.max_preemptions_without_progress = 1;  // the first preemption already counts as stuck
  RecordingSink sink;
  guard(sink);
  try {
    run_engine(c, {make_request(0, 0, {text(1, 60)}, 40), make_request(1, 0, {text(2, 60)}, 40)}, sink);
    FAIL() << "the watchdog did not fire";
  } catch (const InvariantError& e) {
    EXPECT_NE(std::string(e.what()).find("livelock: request 1 preempted 1 times without computing a new token"),
              std::string::npos)
        << e.what();
  }
}

// A step that would run the int64 nanosecond clock past its end is bad input (absurd hardware), not
// a wrapped time.
class CenturyLatency : public ILatencyModel {
 public:
  Duration step_time(const BatchShape&) const override { return Duration::s(100LL * 365 * 86400); }
  std::string name() const override { return "century"; }
};

// Runs one 10-token prompt for `output` tokens, one century per step.
void run_centuries(int64_t output) {
  SimContext ctx(1);
  CenturyLatency lat;
  RecordingSink sink;
  EngineInstance engine(ctx, config_for(full_layout(16, 100)), lat, sink);
  testing::VectorSource src({make_request(0, 0, {text(1, 10)}, output)});
  Cluster sim(ctx, src, engine);
  sim.run();
}

TEST(Progress, ClockOverflowIsAnInputError) {
  EXPECT_NO_THROW(run_centuries(2));  // two steps: 200 years
  try {
    run_centuries(3);  // the third step would end past 292 years
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("would pass 292 years"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvsim
