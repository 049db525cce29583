#include <gtest/gtest.h>

#include <map>

#include "sim/cluster/cluster.h"
#include "sim/core/random.h"
#include "sim/engine/engine_instance.h"
#include "sim/workload/content_ids.h"
#include "tests/engine/engine_test_util.h"
#include "tests/workload/workload_test_util.h"

namespace kvsim {
namespace {

using test::drain;
using test::tokens_of;

SyntheticConfig conversation() {
  SyntheticConfig s;
  s.kind = "multi_turn";
  s.rate = 1.0;
  s.sessions = 1;
  s.turns = 3;
  s.think_time = DistSpec::fixed(5.0);
  s.user_tokens = DistSpec::fixed(100);
  s.output_tokens = DistSpec::fixed(20);
  s.system_prompt_tokens = 50;
  s.think_from_answer = false;  // the open loop: next() alone gives every turn
  return s;
}

std::vector<RequestSpec> run(const SyntheticConfig& s, uint64_t seed = 1) {
  WorkloadConfig w;
  w.synthetic = s;
  RandomStreams rng(seed);
  auto src = make_request_source(w, rng);
  return drain(*src);
}

TEST(MultiTurn, EachTurnExtendsThePreviousPromptWithItsAnswer) {
  const auto reqs = run(conversation());
  ASSERT_EQ(reqs.size(), 3u);
  // Turn 0: system 50 + user 100.
  EXPECT_EQ(tokens_of(reqs[0]), (std::vector<int64_t>{50, 100}));
  // Turn 1: turn 0's prompt + its answer (20) + user 100 = 270.
  EXPECT_EQ(tokens_of(reqs[1]), (std::vector<int64_t>{50, 100, 20, 100}));
  EXPECT_EQ(reqs[1].prompt_tokens, 270);
  // Turn 2: 270 + 20 + 100 = 390.
  EXPECT_EQ(tokens_of(reqs[2]), (std::vector<int64_t>{50, 100, 20, 100, 20, 100}));
  EXPECT_EQ(reqs[2].prompt_tokens, 390);
  for (size_t t = 1; t < 3; ++t) {
    for (size_t i = 0; i < reqs[t - 1].prompt.size(); ++i) {
      EXPECT_EQ(reqs[t].prompt[i].content_id, reqs[t - 1].prompt[i].content_id);
    }
    const Segment& answer = reqs[t].prompt[reqs[t - 1].prompt.size()];
    EXPECT_EQ(answer.content_id, reqs[t - 1].output_content_id);
    EXPECT_EQ(answer.tokens, reqs[t - 1].output_tokens);
    EXPECT_EQ(content_namespace(reqs[t].prompt.back().content_id), ContentNamespace::kUnique);
  }
  EXPECT_EQ(reqs[0].prompt[0].content_id, make_content_id(ContentNamespace::kSystemPrompt, 0));
}

TEST(MultiTurn, TurnsArriveAfterThinkTime) {
  const auto reqs = run(conversation());
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ((reqs[1].arrival - reqs[0].arrival).ns(), 5'000'000'000);
  EXPECT_EQ((reqs[2].arrival - reqs[1].arrival).ns(), 5'000'000'000);
  EXPECT_EQ(reqs[0].session, reqs[2].session);
}

TEST(MultiTurn, InterleavedSessionsStayInArrivalOrderWithSequentialIds) {
  auto s = conversation();
  s.sessions = 50;
  s.turns = 4;
  s.rate = 2.0;
  s.think_time.kind = "exponential";
  s.think_time.mean = 3.0;
  const auto reqs = run(s);
  ASSERT_EQ(reqs.size(), 200u);  // 50 sessions x 4 turns
  std::map<std::string, const RequestSpec*> last;
  std::map<std::string, int> turns;
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(reqs[i].id.value(), static_cast<int64_t>(i));
    if (i > 0) {
      EXPECT_GE(reqs[i].arrival, reqs[i - 1].arrival);
    }
    const RequestSpec*& prev = last[reqs[i].session];
    if (prev != nullptr) {
      // Previous prompt + answer + user tokens.
      EXPECT_EQ(reqs[i].prompt_tokens, prev->prompt_tokens + prev->output_tokens + 100);
      EXPECT_EQ(reqs[i].prompt[prev->prompt.size()].content_id, prev->output_content_id);
    }
    prev = &reqs[i];
    ++turns[reqs[i].session];
  }
  EXPECT_EQ(turns.size(), 50u);
  for (const auto& [session, n] : turns) EXPECT_EQ(n, 4) << session;
}

TEST(MultiTurn, SameSeedSameConversations) {
  auto s = conversation();
  s.sessions = 20;
  s.think_time.kind = "exponential";
  s.think_time.mean = 2.0;
  s.user_tokens.kind = "uniform";
  s.user_tokens.min = 10;
  s.user_tokens.max = 500;
  const auto a = run(s, 9), b = run(s, 9);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival, b[i].arrival);
    EXPECT_EQ(a[i].session, b[i].session);
    EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
  }
}

// The conversation() session with think_from answer through one engine (step = 1 ms + 1 us a token,
// B = 16, 1,000 blocks, max_model_len as given); the records by request id.
ServingResult run_answered(int64_t max_model_len, testing::RecordingSink& sink) {
  auto s = conversation();
  s.think_from_answer = true;
  WorkloadConfig w;
  w.synthetic = s;
  RandomStreams rng(1);
  auto src = make_request_source(w, rng);
  SimContext ctx(1);
  testing::FixedLatency lat;
  EngineConfig c = testing::config_for(testing::full_layout(16, 1000));
  c.max_model_len = max_model_len;
  EngineInstance engine(ctx, c, lat, sink);
  Cluster cluster(ctx, *src, engine);
  return cluster.run();
}

TEST(MultiTurn, ThinkFromAnswerSendsTheNextTurnAfterTheAnswerArrived) {
  // The default: turn k + 1 is sent think_time after turn k ended. One session, 3 turns, through one
  // engine (step = 1 ms + 1 us a token; B = 16; budget 8192):
  //   turn 0 at its session's start a: prompt 150 (system 50 + user 100), one prefill step of 150 tokens
  //     = 1.150 ms gives the first token, 19 decode steps of 1.001 ms the other 19: ends at a + 20.169 ms.
  //   turn 1 at that end + 5,000 ms; prompt 270 = 150 + answer 20 + user 100. Its hit: the cached
  //     blocks of turn 0's 169 computed tokens (prompt + 19 answer tokens fed back), 10 whole blocks
  //     = 160 tokens; prefill 110 tokens (1.110 ms) + 19.019 ms.
  //   turn 2 at turn 1's end + 5 s, prompt 390; hit floor(289 / 16) x 16 = 288.
  testing::RecordingSink sink;
  run_answered(1 << 20, sink);
  ASSERT_EQ(sink.requests.size(), 3u);
  const RequestRecord &t0 = sink.requests.at(0), &t1 = sink.requests.at(1), &t2 = sink.requests.at(2);
  EXPECT_EQ(t0.finish.ns(), t0.arrival.ns() + 1'150'000 + 19 * 1'001'000);  // it starts at its (Poisson) arrival
  EXPECT_EQ(t1.arrival.ns(), t0.finish.ns() + 5'000'000'000);
  EXPECT_EQ(t1.prompt_tokens, 270);
  EXPECT_EQ(t1.cached_tokens, 160);
  EXPECT_EQ(t1.finish.ns(), t1.arrival.ns() + 1'110'000 + 19 * 1'001'000);
  EXPECT_EQ(t2.arrival.ns(), t1.finish.ns() + 5'000'000'000);
  EXPECT_EQ(t2.prompt_tokens, 390);
  EXPECT_EQ(t2.cached_tokens, 288);
}

TEST(MultiTurn, ARejectedTurnEndsItsConversation) {
  // Turn 0 (150 tokens) fits max_model_len 200 with its 20-token answer; turn 1 (270) does not: it is
  // rejected, and no turn 2 follows (the client has no answer to continue from).
  testing::RecordingSink sink;
  const ServingResult r = run_answered(200, sink);
  EXPECT_EQ(sink.requests.size(), 2u);
  EXPECT_TRUE(sink.requests.at(0).finished);
  EXPECT_FALSE(sink.requests.at(1).finished);
  EXPECT_EQ(r.submitted, 2);
}

}  // namespace
}  // namespace kvsim
