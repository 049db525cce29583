// The priority policy (vLLM SchedulingPolicy.PRIORITY): waiting requests run lowest priority value
// first, ties by arrival; FCFS runs them in arrival order.
#include <gtest/gtest.h>

#include "sim/app/simulation.h"
#include "sim/cluster/cluster.h"
#include "sim/engine/engine_instance.h"
#include "sim/engine/scheduler.h"
#include "sim/scenario/scenario.h"
#include "tests/engine/engine_test_util.h"

namespace kvsim {
namespace {
using testing::config_for;
using testing::full_layout;
using testing::make_request;
using testing::RecordingSink;
using testing::text;

std::vector<int64_t> finish_order(const std::string& policy) {
  // One request at a time (max_num_seqs 1); all three arrive at t = 0 and are waiting when the
  // first step is planned (arrivals come before scheduling at one instant).
  auto cfg = config_for(full_layout(16, 1000));
  cfg.max_num_seqs = 1;
  cfg.policy = policy;
  std::vector<RequestSpec> reqs = {make_request(1, 0, {text(1, 32)}, 2), make_request(2, 0, {text(2, 32)}, 2),
                                   make_request(3, 0, {text(3, 32)}, 2)};
  reqs[0].priority = 5;
  reqs[1].priority = 1;
  reqs[2].priority = 3;
  RecordingSink sink;
  testing::run_engine(cfg, reqs, sink);
  std::vector<std::pair<SimTime, int64_t>> done;
  for (const auto& [id, r] : sink.requests) done.emplace_back(r.finish, id);
  std::sort(done.begin(), done.end());
  std::vector<int64_t> ids;
  for (const auto& d : done) ids.push_back(d.second);
  return ids;
}

TEST(EnginePriority, LowestPriorityValueRunsFirst) {
  EXPECT_EQ(finish_order("priority"), (std::vector<int64_t>{2, 3, 1}));
}

TEST(EnginePriority, FcfsIgnoresPriority) { EXPECT_EQ(finish_order("fcfs"), (std::vector<int64_t>{1, 2, 3})); }

TEST(EnginePriority, PreemptionTakesTheLeastImportantRunningRequest) {
  // 8 usable blocks, B = 16: as in the FCFS preemption test two 48-token prompts decode in lockstep
  // until one needs a 5th block. Under FCFS the last running request (2) is preempted; under the
  // priority policy the victim is max(priority, arrival): request 1 with priority 9.
  auto cfg = config_for(full_layout(16, 9));
  cfg.policy = "priority";
  std::vector<RequestSpec> reqs = {make_request(1, 0, {text(1, 48)}, 60), make_request(2, 0, {text(2, 48)}, 60)};
  reqs[0].priority = 9;
  reqs[1].priority = 0;
  RecordingSink sink;
  testing::run_engine(cfg, reqs, sink);
  EXPECT_GE(sink.requests[1].preemptions, 1);
  EXPECT_EQ(sink.requests[2].preemptions, 0);
  EXPECT_TRUE(sink.requests[1].finished);
  EXPECT_TRUE(sink.requests[2].finished);
}

TEST(EnginePriority, RunningLoopStopsWhenARequestPreemptsItself) {
  // vLLM Scheduler.schedule(): when allocate_slots fails and the victim is the request itself, the
  // running loop ends (`if new_blocks is None: break`); later running requests wait for the next step.
  // 4 usable blocks, B = 16, no prefix caching. A (priority 5) is admitted alone: 31 tokens, 2 blocks.
  // B (priority 1) joins next step: 31 tokens, 2 blocks, the pool is full. After that step A holds 33
  // tokens and needs a 3rd block; the victim max(priority, arrival) is A itself. B (32 tokens in 2
  // blocks) would fit, but is not scheduled in this step.
  auto cfg = config_for(full_layout(16, 5));
  cfg.policy = "priority";
  cfg.enable_prefix_caching = false;
  Scheduler s(cfg);
  SchedulerOutput out;
  auto run_step = [&](SimTime now) {
    s.schedule(now, out);
    for (const ScheduledRequest& x : out.scheduled) {
      EngineRequest& r = s.request(x.slot);
      r.num_computed += x.num_tokens;
      if (r.num_computed == r.num_tokens) s.append_token(x.slot);
    }
  };
  RequestSpec a = make_request(1, 0, {text(1, 31)}, 100);
  a.priority = 5;
  const int slot_a = s.add_request(a, 31, 100, SimTime::zero());
  run_step(SimTime::zero());
  RequestSpec b = make_request(2, 1, {text(2, 31)}, 100);
  b.priority = 1;
  const int slot_b = s.add_request(b, 31, 100, SimTime::from_ns(1000000));
  run_step(SimTime::from_ns(1000000));
  ASSERT_EQ(s.num_running(), 2);
  EXPECT_EQ(s.kv().pool().num_free_blocks(), 0);
  run_step(SimTime::from_ns(2000000));
  EXPECT_EQ(out.preemptions, 1);
  EXPECT_TRUE(out.scheduled.empty());
  EXPECT_EQ(s.request(slot_a).status, RequestStatus::kPreempted);
  EXPECT_EQ(s.running(), (std::vector<int>{slot_b}));
  // Next step: B runs; A (33 tokens, 3 blocks) does not fit beside it and stays waiting.
  run_step(SimTime::from_ns(3000000));
  ASSERT_EQ(out.scheduled.size(), 1u);
  EXPECT_EQ(out.scheduled[0].slot, slot_b);
}

TEST(EnginePriority, AVictimSkippedThisStepIsPreemptedLikeAnyOther) {
  // Qwen3.5-4B (B = 528), 265 blocks, budget 2048: the 110,600-token prompt matches 528 attention
  // tokens without a saved state and stops its first chunk there, so the 3,000-token request (priority
  // 9) is admitted in the same step; from then on each step gives 1,584 tokens to the long prompts and
  // leaves 463, which the alignment split floors to 0 for the priority-9 request: it is skipped. When
  // the 463-token request (priority 5, admitted later) crosses a block with the pool exhausted, the
  // victim max(priority, arrival) is the skipped priority-9 request, earlier in the running list but
  // not scheduled. vLLM preempts it (`if preempted_req in scheduled_running_reqs` false) and retries.
  const SimulationResult res = run_simulation(load_scenario("tests/engine/data/priority-hybrid-skipped-victim.yaml"));
  ASSERT_EQ(res.engine.layout.block_size, 528);
  int finished = 0;
  for (const auto& row : res.collector->requests()) {
    if (row.finished) ++finished;
    if (row.prompt_tokens == 3000) EXPECT_GE(row.preemptions, 1);
    if (row.prompt_tokens == 463) EXPECT_EQ(row.preemptions, 0);
  }
  EXPECT_EQ(finished, 5);
}

}  // namespace
}  // namespace kvsim
