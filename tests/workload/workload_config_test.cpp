#include <gtest/gtest.h>

#include "sim/core/errors.h"
#include "sim/core/random.h"
#include "tests/workload/workload_test_util.h"

namespace kvsim {
namespace {

std::string error_of(const WorkloadConfig& w) {
  try {
    validate_workload_config(w);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

WorkloadConfig poisson() {
  SyntheticConfig s;
  s.kind = "poisson";
  s.rate = 1.0;
  s.num_requests = 10;
  WorkloadConfig w;
  w.synthetic = s;
  return w;
}

TEST(WorkloadConfig, ExactlyOneOfTraceAndSynthetic) {
  WorkloadConfig none;
  EXPECT_EQ(error_of(none), "workload: set exactly one of 'trace' and 'synthetic'");
  WorkloadConfig both = poisson();
  both.trace = TraceConfig{};
  EXPECT_EQ(error_of(both), "workload: set exactly one of 'trace' and 'synthetic'");
  EXPECT_EQ(error_of(poisson()), "");
}

TEST(WorkloadConfig, UnknownNamesListTheValidOnes) {
  auto w = test::trace_workload("sharegpt", "x.jsonl");
  EXPECT_EQ(error_of(w), "workload.trace.format: unknown 'sharegpt' (valid: mooncake, azure, native)");
  auto s = poisson();
  s.synthetic->kind = "burst";
  EXPECT_EQ(error_of(s), "workload.synthetic.kind: unknown 'burst' (valid: poisson, gamma, shared_prefix, multi_turn)");
  s = poisson();
  s.synthetic->input_tokens.kind = "zipf";
  EXPECT_EQ(error_of(s),
            "workload.synthetic.input_tokens.kind: unknown 'zipf' (valid: fixed, uniform, normal, lognormal, "
            "exponential)");
}

TEST(WorkloadConfig, RateMustBePositive) {
  auto w = poisson();
  w.synthetic->rate = 0.0;
  EXPECT_EQ(error_of(w), "workload.synthetic.rate: must be > 0 (got 0)");
  w.synthetic->rate = 0.001;
  EXPECT_EQ(error_of(w), "");
}

TEST(WorkloadConfig, OpenLoopNeedsACountOrADuration) {
  auto w = poisson();
  w.synthetic->num_requests = 0;
  EXPECT_NE(error_of(w), "");
  w.synthetic->duration = 60.0;
  EXPECT_EQ(error_of(w), "");
}

TEST(WorkloadConfig, SharedPrefixNeedsExactlyOneOfConcurrencyAndRate) {
  SyntheticConfig s;
  s.kind = "shared_prefix";
  s.prefix_tokens = 10;
  WorkloadConfig w;
  w.synthetic = s;
  EXPECT_NE(error_of(w).find("workload.synthetic.concurrency: set exactly one"), std::string::npos);
  w.synthetic->concurrency = 2;
  EXPECT_EQ(error_of(w), "");
  w.synthetic->rate = 1.0;
  EXPECT_NE(error_of(w), "");
}

TEST(WorkloadConfig, TraceTimeScaleAndBlockSizeMustBePositive) {
  auto w = test::trace_workload("mooncake", "mooncake_small.jsonl");
  w.trace->time_scale = 0.0;
  EXPECT_EQ(error_of(w), "workload.trace.time_scale: must be > 0 (got 0)");
  w.trace->time_scale = 1.0;
  w.trace->block_size = 0;
  EXPECT_EQ(error_of(w), "workload.trace.block_size: must be > 0 (got 0)");
}

}  // namespace
}  // namespace kvsim
