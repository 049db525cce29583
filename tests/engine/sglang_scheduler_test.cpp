// SGLang's scheduler (EngineConfig::step_policy kSglang, sim/engine/sglang_schedule.cpp): prefill first,
// never mixed with decode by default; max_prefill_tokens caps a prefill batch. Times are hand-computed
// with the fixed latency model (1 ms + 1 us per scheduled token).
#include <gtest/gtest.h>

#include "sim/engine/engine_config.h"
#include "tests/engine/engine_test_util.h"
#include "tests/engine/hybrid_test_util.h"

namespace kvsim {
namespace {
using testing::config_for;
using testing::full_layout;
using testing::make_request;
using testing::RecordingSink;
using testing::text;

EngineConfig sglang_config() {
  EngineConfig c = config_for(full_layout(1, 100000));
  c.step_policy = StepPolicy::kSglang;
  c.enable_prefix_caching = false;
  return c;
}

TEST(SglangScheduler, APrefillStepNeverCarriesDecodeTokens) {
  // A: 100-token prompt, 5 outputs, at 0; B: 50-token prompt, 3 outputs, at 2 ms.
  // Step 1 [0, 1.100]: prefill A. Step 2 [1.100, 2.101]: decode A (B not there yet).
  // Step 3 [2.101, 3.151]: B has arrived: prefill B alone, A waits (vLLM would decode A in it).
  // Step 4 [3.151, 4.153]: A + B. Step 5 [4.153, 5.155]: A + B, B done. Step 6 [5.155, 6.156]: A done.
  RecordingSink sink;
  testing::run_engine(sglang_config(), {make_request(1, 0, {text(1, 100)}, 5), make_request(2, 2, {text(2, 50)}, 3)},
                      sink);
  for (const StepRecord& s : sink.steps)
    EXPECT_FALSE(s.num_prefill_tokens > 0 && s.num_decode_requests > 0) << "mixed step at " << s.start.ns();
  ASSERT_GE(sink.steps.size(), 3u);
  EXPECT_EQ(sink.steps[2].num_prefill_tokens, 50);
  EXPECT_EQ(sink.steps[2].num_decode_requests, 0);
  EXPECT_EQ(sink.requests[2].first_token.ns(), 3151000);
  EXPECT_EQ(sink.requests[2].finish.ns(), 5155000);
  EXPECT_EQ(sink.requests[1].finish.ns(), 6156000);
}

TEST(SglangScheduler, MixedChunkLetsDecodeJoinThePrefillStep) {
  // Same requests with enable_mixed_chunk: step 3 carries B's 50 prompt tokens and A's decode token.
  EngineConfig c = sglang_config();
  c.enable_mixed_chunk = true;
  RecordingSink sink;
  testing::run_engine(c, {make_request(1, 0, {text(1, 100)}, 5), make_request(2, 2, {text(2, 50)}, 3)}, sink);
  ASSERT_GE(sink.steps.size(), 3u);
  EXPECT_EQ(sink.steps[2].num_prefill_tokens, 50);
  EXPECT_EQ(sink.steps[2].num_decode_requests, 1);
}

TEST(SglangScheduler, MaxPrefillTokensEndsTheBatch) {
  // max_prefill_tokens 100, three 40-token prompts at 0: A (40 < 100) and B (40 < 60) join, C (40 >= 20
  // with a non-empty batch) is refused (PrefillAdder OTHER). Step 2 prefills C while A and B wait.
  EngineConfig c = sglang_config();
  c.max_prefill_tokens = 100;
  RecordingSink sink;
  testing::run_engine(c,
                      {make_request(1, 0, {text(1, 40)}, 2), make_request(2, 0, {text(2, 40)}, 2),
                       make_request(3, 0, {text(3, 40)}, 2)},
                      sink);
  ASSERT_GE(sink.steps.size(), 2u);
  EXPECT_EQ(sink.steps[0].num_prefill_tokens, 80);
  EXPECT_EQ(sink.steps[0].num_prefill_requests, 2);
  EXPECT_EQ(sink.steps[1].num_prefill_tokens, 40);
  EXPECT_EQ(sink.steps[1].num_decode_requests, 0);
}

TEST(SglangScheduler, APromptLongerThanTheChunkIsTheOneChunkedRequest) {
  // chunked_prefill_size 64: A (150) is cut to 64, 64, then its last 22 with B (40) in 42 left.
  EngineConfig c = sglang_config();
  c.max_num_batched_tokens = 64;
  RecordingSink sink;
  testing::run_engine(c, {make_request(1, 0, {text(1, 150)}, 2), make_request(2, 0, {text(2, 40)}, 2)}, sink);
  ASSERT_GE(sink.steps.size(), 3u);
  EXPECT_EQ(sink.steps[0].num_prefill_tokens, 64);
  EXPECT_EQ(sink.steps[1].num_prefill_tokens, 64);
  EXPECT_EQ(sink.steps[2].num_prefill_tokens, 62);
  EXPECT_EQ(sink.steps[2].num_prefill_requests, 2);
}

TEST(SglangScheduler, AHybridPromptCutAtItsLastBlockBoundaryIsTheOneChunkedRequest) {
  // A hybrid with prefix caching aligns its chunks (block 528, budget 2048): a 1000-token prompt is cut
  // at its last full boundary, 528, and that makes it the batch's one chunked request. Step 1: A's 528.
  // Step 2: A's last 472 (it leaves chunking), then B, cut to 528 in turn: 1000 tokens. Step 3: B's 472.
  // Both then decode together. (Before, B was admitted in step 1 too and took A's chunked place, which
  // left A mid-prompt and never scheduled again.)
  EngineConfig c = testing::issue45238_config(true);
  c.step_policy = StepPolicy::kSglang;
  testing::HybridOutcome r;
  testing::simulate_hybrid(c, {make_request(1, 0, {text(1, 1000)}, 3), make_request(2, 0, {text(2, 1000)}, 3)}, r, 0,
                           true);
  EXPECT_EQ(r.prefill_chunks, (std::vector<int64_t>{528, 472 + 528, 472}));
  ASSERT_EQ(r.sink.requests.size(), 2u);
  for (const auto& [id, rec] : r.sink.requests) {
    EXPECT_EQ(rec.output_tokens, 3) << id;
    EXPECT_EQ(rec.saved_state_positions, (std::vector<int64_t>{528})) << id;
  }
}

}  // namespace
}  // namespace kvsim
