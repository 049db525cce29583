// workload.synthetic.turnaround: in a closed loop each request reaches the engine that long after its
// slot is free (the slot's previous request finished, or the run started), each slot on its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "sim/app/simulation.h"
#include "sim/core/errors.h"
#include "sim/metrics/run_collector.h"
#include "sim/scenario/scenario.h"

namespace kvsim {
namespace {

std::string scenario(int concurrency, const std::string& turnaround) {
  return std::string(R"(
model: models/qwen3-8b.json
gpu: h100-sxm
engine: {block_size: 16, num_gpu_blocks: 4000, max_model_len: 4096, enable_prefix_caching: false}
workload:
  synthetic:
    kind: shared_prefix
    groups: 12
    requests_per_group: 1
    suffix_tokens: 300
    output_tokens: 20
    concurrency: )") +
         std::to_string(concurrency) + "\n" + (turnaround.empty() ? "" : "    turnaround: " + turnaround + "\n");
}

std::vector<RequestRow> rows(const std::string& yaml) {
  const SimulationResult r = run_simulation(parse_scenario(yaml, "turnaround.yaml"));
  std::vector<RequestRow> out = r.collector->requests();
  std::sort(out.begin(), out.end(), [](const RequestRow& a, const RequestRow& b) { return a.id < b.id; });
  return out;
}

constexpr int64_t kQuarterSecondNs = 250'000'000;

TEST(ClosedLoopTurnaround, OneSlotSendsEachRequestAFixedTurnaroundAfterThePreviousFinished) {
  const auto r = rows(scenario(1, "0.25s"));
  ASSERT_EQ(r.size(), 12u);
  EXPECT_EQ(r[0].arrival.ns(), kQuarterSecondNs);  // the first slot turns around from the start
  for (size_t i = 1; i < r.size(); ++i) {
    ASSERT_TRUE(r[i - 1].finished);
    EXPECT_EQ(r[i].arrival.ns(), r[i - 1].finish.ns() + kQuarterSecondNs) << "request " << i;
  }
}

TEST(ClosedLoopTurnaround, SlotsTurnAroundInParallel) {
  const auto r = rows(scenario(3, "0.25s"));
  ASSERT_EQ(r.size(), 12u);
  // The three first requests leave together, a turnaround after the start (not one after another).
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(r[i].arrival.ns(), kQuarterSecondNs) << "request " << i;
  // Every later request arrives a turnaround after an earlier request finished, and each finish frees
  // one slot only: the arrivals minus the turnaround are distinct finish times.
  std::multiset<int64_t> finishes;
  for (const RequestRow& x : r) finishes.insert(x.finish.ns());
  for (size_t i = 3; i < r.size(); ++i) {
    auto it = finishes.find(r[i].arrival.ns() - kQuarterSecondNs);
    ASSERT_NE(it, finishes.end()) << "request " << i << " arrives a turnaround after no finish";
    finishes.erase(it);
  }
}

TEST(ClosedLoopTurnaround, NoTurnaroundRefillsAtTheFinish) {
  const auto r = rows(scenario(1, ""));
  EXPECT_EQ(r[0].arrival.ns(), 0);
  for (size_t i = 1; i < r.size(); ++i) EXPECT_EQ(r[i].arrival.ns(), r[i - 1].finish.ns()) << "request " << i;
}

TEST(ClosedLoopTurnaround, OpenLoopIsRefusedNamingTheKey) {
  std::string y = scenario(1, "0.25s");
  y.replace(y.find("concurrency: 1"), 14, "rate: 5");
  try {
    run_simulation(parse_scenario(y, "turnaround.yaml"));
    FAIL() << "an open loop with a turnaround was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("workload.synthetic.turnaround"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvsim
