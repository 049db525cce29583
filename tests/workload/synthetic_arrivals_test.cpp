#include <gtest/gtest.h>

#include <cmath>

#include "sim/core/random.h"
#include "sim/workload/content_ids.h"
#include "sim/workload/impl/dist_sampling.h"
#include "tests/workload/workload_test_util.h"

namespace kvsim {
namespace {

using test::drain;

WorkloadConfig synthetic(const SyntheticConfig& s) {
  WorkloadConfig w;
  w.synthetic = s;
  return w;
}

std::vector<double> gaps_of(const std::vector<RequestSpec>& reqs) {
  std::vector<double> gaps;
  SimTime prev = SimTime::zero();
  for (const RequestSpec& r : reqs) {
    gaps.push_back((r.arrival - prev).seconds());
    prev = r.arrival;
  }
  return gaps;
}

TEST(PoissonArrivals, MeanInterArrivalIsOneOverRate) {
  SyntheticConfig s;
  s.kind = "poisson";
  s.rate = 4.0;  // mean gap 0.25 s
  s.num_requests = 20000;
  RandomStreams rng(42);
  auto src = make_request_source(synthetic(s), rng);
  const auto reqs = drain(*src);
  ASSERT_EQ(reqs.size(), 20000u);
  // Standard error of the mean gap: 0.25 / sqrt(20000) = 0.0018 s; the bound is over 5 of them.
  const double mean = reqs.back().arrival.seconds() / 20000.0;
  EXPECT_NEAR(mean, 0.25, 0.01);
  // Exponential gaps: CV 1 (generous bound).
  double sum = 0, sq = 0;
  for (double g : gaps_of(reqs)) {
    sum += g;
    sq += g * g;
  }
  const double m = sum / reqs.size();
  const double cv = std::sqrt(sq / reqs.size() - m * m) / m;
  EXPECT_NEAR(cv, 1.0, 0.05);
}

TEST(GammaArrivals, MeanAndCoefficientOfVariationMatchTheConfig) {
  SyntheticConfig s;
  s.kind = "gamma";
  s.rate = 2.0;  // mean gap 0.5 s
  s.cv = 3.0;    // shape 1/9
  s.num_requests = 40000;
  RandomStreams rng(42);
  auto src = make_request_source(synthetic(s), rng);
  const auto gaps = gaps_of(drain(*src));
  double sum = 0, sq = 0;
  for (double g : gaps) {
    sum += g;
    sq += g * g;
  }
  const double m = sum / gaps.size();
  const double cv = std::sqrt(sq / gaps.size() - m * m) / m;
  // Standard error of the mean: 1.5 / sqrt(40000) = 0.0075 s; of the CV about 0.06.
  EXPECT_NEAR(m, 0.5, 0.04);
  EXPECT_NEAR(cv, 3.0, 0.3);
}

TEST(SyntheticDeterminism, SameSeedSameRequestsOtherSeedOtherRequests) {
  SyntheticConfig s;
  s.kind = "poisson";
  s.rate = 10.0;
  s.num_requests = 200;
  s.input_tokens.kind = "lognormal";
  s.input_tokens.mean = 1000;
  s.input_tokens.stddev = 500;
  s.output_tokens.kind = "uniform";
  s.output_tokens.min = 1;
  s.output_tokens.max = 300;
  auto run = [&](uint64_t seed) {
    RandomStreams rng(seed);
    auto src = make_request_source(synthetic(s), rng);
    return drain(*src);
  };
  const auto a = run(7), b = run(7), c = run(8);
  ASSERT_EQ(a.size(), b.size());
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival, b[i].arrival);
    EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
    EXPECT_EQ(a[i].output_tokens, b[i].output_tokens);
    EXPECT_EQ(a[i].prompt[0].content_id, b[i].prompt[0].content_id);
    differs = differs || a[i].arrival != c[i].arrival || a[i].prompt_tokens != c[i].prompt_tokens;
  }
  EXPECT_TRUE(differs);
}

TEST(SyntheticArrivals, DurationStopsGenerationAndIdsAreSequential) {
  SyntheticConfig s;
  s.kind = "poisson";
  s.rate = 100.0;
  s.duration = 2.0;
  RandomStreams rng(3);
  auto src = make_request_source(synthetic(s), rng);
  const auto reqs = drain(*src);
  // About 200 arrivals in 2 s; the sd is sqrt(200) = 14.
  EXPECT_GT(reqs.size(), 120u);
  EXPECT_LT(reqs.size(), 280u);
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(reqs[i].id.value(), static_cast<int64_t>(i));
    EXPECT_LE(reqs[i].arrival.ns(), 2'000'000'000);
    if (i > 0) {
      EXPECT_GE(reqs[i].arrival, reqs[i - 1].arrival);
    }
    EXPECT_EQ(reqs[i].prompt[0].content_id, make_content_id(ContentNamespace::kUnique, i));
  }
}

TEST(LengthDistributions, FixedDrawsNothingFromTheStream) {
  RandomStream a(5), b(5);
  EXPECT_EQ(sample_tokens(DistSpec::fixed(77), a), 77);
  EXPECT_EQ(a.next_u64(), b.next_u64());
}

TEST(LengthDistributions, UniformCoversBothInclusiveEnds) {
  DistSpec d;
  d.kind = "uniform";
  d.min = 10;
  d.max = 12;
  RandomStream rng(9);
  bool saw10 = false, saw12 = false;
  for (int i = 0; i < 1000; ++i) {
    const int64_t x = sample_tokens(d, rng);
    ASSERT_GE(x, 10);
    ASSERT_LE(x, 12);
    saw10 = saw10 || x == 10;
    saw12 = saw12 || x == 12;
  }
  EXPECT_TRUE(saw10 && saw12);
}

TEST(LengthDistributions, NormalIsClampedToMinAndMax) {
  DistSpec d;
  d.kind = "normal";
  d.mean = 100;
  d.stddev = 100;
  d.min = 50;
  d.max = 150;
  RandomStream rng(9);
  bool hit_min = false, hit_max = false;
  for (int i = 0; i < 2000; ++i) {
    const int64_t x = sample_tokens(d, rng);
    ASSERT_GE(x, 50);
    ASSERT_LE(x, 150);
    hit_min = hit_min || x == 50;  // P(x < 50) = P(z < -0.5) = 31 %
    hit_max = hit_max || x == 150;
  }
  EXPECT_TRUE(hit_min && hit_max);
}

TEST(LengthDistributions, LognormalHasTheRequestedMean) {
  DistSpec d;
  d.kind = "lognormal";
  d.mean = 2000;
  d.stddev = 1000;
  RandomStream rng(11);
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(sample_tokens(d, rng));
  // Standard error 1000 / sqrt(20000) = 7 tokens.
  EXPECT_NEAR(sum / n, 2000.0, 50.0);
}

TEST(LengthDistributions, TokenCountsAreAtLeastOne) {
  DistSpec d;
  d.kind = "normal";
  d.mean = 1;
  d.stddev = 10;
  RandomStream rng(2);
  for (int i = 0; i < 500; ++i) ASSERT_GE(sample_tokens(d, rng), 1);
}

}  // namespace
}  // namespace kvsim
