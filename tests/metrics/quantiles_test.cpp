#include "sim/metrics/quantiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kvsim {

// 1..100 under numpy's linear interpolation: h = q * 99.
//   p50: h = 49.5  -> x[49] + 0.5 * (x[50] - x[49]) = 50 + 0.5   = 50.5
//   p90: h = 89.1  -> x[89] + 0.1 * (x[90] - x[89]) = 90 + 0.1   = 90.1
//   p99: h = 98.01 -> x[98] + 0.01 * (x[99] - x[98]) = 99 + 0.01 = 99.01
TEST(Quantiles, LinearInterpolationMatchesNumpyOn1To100) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  EXPECT_NEAR(quantile(v, 0.50), 50.5, 1e-12);
  EXPECT_NEAR(quantile(v, 0.90), 90.1, 1e-12);
  EXPECT_NEAR(quantile(v, 0.99), 99.01, 1e-12);
  EXPECT_DOUBLE_EQ(quantile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile(v, 1.0), 100.0);
  EXPECT_DOUBLE_EQ(mean(v), 50.5);
}

// [1, 2, 3, 4]: p50 h = 1.5 -> 2.5; p90 h = 2.7 -> 3 + 0.7 = 3.7 (np.percentile([1,2,3,4], 90) = 3.7).
TEST(Quantiles, InterpolatesBetweenClosestRanks) {
  std::vector<double> v{4, 1, 3, 2};
  EXPECT_NEAR(quantile(v, 0.5), 2.5, 1e-12);
  EXPECT_NEAR(quantile(v, 0.9), 3.7, 1e-12);
}

TEST(Quantiles, SingleValueIsEveryQuantile) {
  std::vector<double> v{7.0};
  EXPECT_DOUBLE_EQ(quantile(v, 0.0), 7.0);
  EXPECT_DOUBLE_EQ(quantile(v, 0.99), 7.0);
}

TEST(Quantiles, EmptyInputIsNaN) {
  std::vector<double> v;
  EXPECT_TRUE(std::isnan(quantile(v, 0.5)));
  EXPECT_TRUE(std::isnan(mean(v)));
  const Distribution d = summarize_in_place(v);
  EXPECT_EQ(d.count, 0);
  EXPECT_TRUE(std::isnan(d.p99));
}

TEST(Quantiles, SummaryOfFloatsMatchesDoubles) {
  std::vector<float> f;
  std::vector<double> d;
  for (int i = 1; i <= 100; ++i) {
    f.push_back(static_cast<float>(i));
    d.push_back(i);
  }
  const Distribution a = summarize_in_place(f);
  const Distribution b = summarize_in_place(d);
  EXPECT_EQ(a.count, 100);
  EXPECT_DOUBLE_EQ(a.p50, b.p50);
  EXPECT_NEAR(a.p99, 99.01, 1e-9);
}

TEST(Quantiles, SummaryOfUnsortedInputUsesTheSortedOrder) {
  // 1..100 in the order i * 37 mod 101 (a permutation): p50 = 50.5, p90 = 90.1, p99 = 99.01 as sorted.
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back((i * 37) % 101);
  const Distribution d = summarize_in_place(v);
  EXPECT_NEAR(d.p50, 50.5, 1e-12);
  EXPECT_NEAR(d.p90, 90.1, 1e-12);
  EXPECT_NEAR(d.p99, 99.01, 1e-12);
  EXPECT_DOUBLE_EQ(d.mean, 50.5);
  // p95: h = 94.05 -> 95.05; p99.9: h = 98.901 -> 99.901; np.std(1..100) = sqrt((100^2 - 1) / 12).
  EXPECT_NEAR(d.p95, 95.05, 1e-12);
  EXPECT_NEAR(d.p999, 99.901, 1e-12);
  EXPECT_NEAR(d.stddev, std::sqrt(9999.0 / 12.0), 1e-12);
  // Three values: p50, p90 and p99 all interpolate between the 2nd and 3rd smallest (h = 1, 1.8, 1.98).
  std::vector<double> w = {3, 1, 2};
  const Distribution e = summarize_in_place(w);
  EXPECT_DOUBLE_EQ(e.p50, 2.0);
  EXPECT_NEAR(e.p90, 2.8, 1e-12);
  EXPECT_NEAR(e.p99, 2.98, 1e-12);
  std::vector<double> one = {7};
  EXPECT_DOUBLE_EQ(summarize_in_place(one).p99, 7.0);
}

}  // namespace kvsim
