// The priority policy (vLLM SchedulingPolicy.PRIORITY): waiting requests run lowest priority value
// first, ties by arrival; FCFS runs them in arrival order.
#include <gtest/gtest.h>

#include "sim/engine/engine_instance.h"
#include "sim/engine/serving_sim.h"
#include "tests/engine/engine_test_util.h"

namespace kvsim {
namespace {
using testing::config_for;
using testing::FixedLatency;
using testing::full_layout;
using testing::make_request;
using testing::RecordingSink;
using testing::text;
using testing::VectorSource;

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
  SimContext ctx(1);
  FixedLatency lat;
  RecordingSink sink;
  EngineInstance engine(ctx, cfg, lat, sink);
  VectorSource src(reqs);
  ServingSim sim(ctx, src, engine);
  sim.run();
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
  SimContext ctx(1);
  FixedLatency lat;
  RecordingSink sink;
  EngineInstance engine(ctx, cfg, lat, sink);
  VectorSource src(reqs);
  ServingSim sim(ctx, src, engine);
  sim.run();
  EXPECT_GE(sink.requests[1].preemptions, 1);
  EXPECT_EQ(sink.requests[2].preemptions, 0);
  EXPECT_TRUE(sink.requests[1].finished);
  EXPECT_TRUE(sink.requests[2].finished);
}

}  // namespace
}  // namespace kvsim
