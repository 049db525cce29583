// The streaming quantile sketch against exact quantiles: adversarial inputs, a heavy tail, merging, and
// a 100,000-request run summarised both ways.
#include "sim/metrics/quantile_sketch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "sim/app/simulation.h"
#include "sim/core/random.h"
#include "sim/scenario/scenario.h"

namespace kvsim {
namespace {

// The exact order statistic the sketch targets: rank floor(q (n - 1)) of the sorted values.
double order_statistic(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(std::floor(q * static_cast<double>(v.size() - 1)))];
}

void expect_within_bound(const std::vector<double>& values, const char* what) {
  LogSketch s;
  for (double v : values) s.add(v);
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const double exact = order_statistic(values, q);
    const double got = s.quantile(q);
    if (exact == 0) {
      EXPECT_EQ(got, 0.0) << what << " q " << q;
    } else {
      EXPECT_LE(std::fabs(got - exact) / exact, kSketchRelativeError) << what << " q " << q;
    }
  }
}

TEST(LogSketch, AllEqualValues) { expect_within_bound(std::vector<double>(1000, 7.5), "all equal"); }

// 60 % at 1 ms, 40 % at 100 ms: p50 is in the first mode, p90 / p99 / p99.9 in the second.
TEST(LogSketch, TwoModes) {
  std::vector<double> v(600, 1.0);
  v.insert(v.end(), 400, 100.0);
  expect_within_bound(v, "two modes");
  LogSketch s;
  for (double x : v) s.add(x);
  EXPECT_NEAR(s.quantile(0.5), 1.0, 1.0 / 512);
  EXPECT_NEAR(s.quantile(0.9), 100.0, 100.0 / 512);
}

// Pareto(alpha 1.1, x_min 1): p99.9 is ~500x the median.
TEST(LogSketch, HeavyTailAndZeros) {
  RandomStream r(42);
  std::vector<double> v;
  for (int i = 0; i < 200000; ++i) v.push_back(std::pow(1.0 - r.uniform(), -1.0 / 1.1));
  v.insert(v.end(), 1000, 0.0);  // multi-token deliveries: gaps of exactly 0
  expect_within_bound(v, "pareto");
  // Spanning 1e-6 .. 1e9 keeps the bound at both ends.
  expect_within_bound({1e-6, 3e-6, 1e9, 2.5e8, 0.5, 0.25}, "wide range");
}

TEST(LogSketch, MergeEqualsTheSketchOfTheUnion) {
  RandomStream r(7);
  LogSketch a, b, all;
  for (int i = 0; i < 5000; ++i) {
    const double x = r.lognormal(2.0, 1.5);
    (i % 3 == 0 ? a : b).add(x);
    all.add(x);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  for (double q : {0.0, 0.25, 0.5, 0.9, 0.99, 1.0}) EXPECT_EQ(a.quantile(q), all.quantile(q)) << q;
}

TEST(StreamingDistribution, ExactUpToTheLimitThenSketched) {
  StreamingDistribution<double> d(100);
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) {
    d.add(i);
    v.push_back(i);
  }
  EXPECT_FALSE(d.sketched());
  const Distribution exact = d.summarize();
  EXPECT_DOUBLE_EQ(exact.p50, 50.5);  // numpy's linear interpolation on 1..100
  EXPECT_DOUBLE_EQ(exact.p99, 99.01);
  d.add(101);
  EXPECT_TRUE(d.sketched());
  const Distribution s = d.summarize();
  EXPECT_EQ(s.count, 101);
  EXPECT_DOUBLE_EQ(s.mean, 51.0);  // means stay exact
  EXPECT_LE(std::fabs(s.p50 - 51.0) / 51.0, kSketchRelativeError);
}

// 100,000 requests summarised exactly and through the sketch alone: every percentile within 0.5 %.
TEST(StreamingDistribution, SketchMatchesExactOnA100kRequestRun) {
  const Scenario s = parse_scenario(R"(
model: models/qwen3-8b.json
gpu: h100-sxm
engine: {block_size: 16}
workload:
  synthetic: {kind: poisson, rate: 400, num_requests: 100000, input_tokens: {kind: uniform, min: 32, max: 256},
              output_tokens: {kind: uniform, min: 2, max: 40}}
)",
                                    "sketch.yaml");
  RunOptions exact;
  exact.keep_records = false;
  RunOptions sketched = exact;
  sketched.exact_request_samples = 0;
  sketched.exact_itl_samples = 0;
  const SimulationResult a = run_simulation(s, exact);
  const SimulationResult b = run_simulation(s, sketched);
  ASSERT_EQ(a.summary.requests.finished, 100000);
  EXPECT_EQ(a.fingerprint, b.fingerprint);
  const auto close = [](const Distribution& x, const Distribution& y, const char* name) {
    EXPECT_EQ(x.count, y.count) << name;
    EXPECT_DOUBLE_EQ(x.mean, y.mean) << name;
    for (const auto& [e, g, q] : {std::tuple{x.p50, y.p50, "p50"}, {x.p90, y.p90, "p90"}, {x.p99, y.p99, "p99"}})
      EXPECT_LE(std::fabs(g - e) / e, 0.005) << name << " " << q << ": exact " << e << ", sketch " << g;
  };
  close(a.summary.ttft_ms, b.summary.ttft_ms, "ttft");
  close(a.summary.tpot_ms, b.summary.tpot_ms, "tpot");
  close(a.summary.itl_ms, b.summary.itl_ms, "itl");
  close(a.summary.e2e_ms, b.summary.e2e_ms, "e2e");
}

}  // namespace
}  // namespace kvsim
