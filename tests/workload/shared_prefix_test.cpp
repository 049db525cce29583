#include <gtest/gtest.h>

#include <map>

#include "sim/core/random.h"
#include "sim/workload/content_ids.h"
#include "tests/workload/workload_test_util.h"

namespace kvsim {
namespace {

using test::drain;

SyntheticConfig shared(const std::string& order) {
  SyntheticConfig s;
  s.kind = "shared_prefix";
  s.groups = 3;
  s.requests_per_group = 2;
  s.prefix_tokens = 100;
  s.suffix_tokens = 10;
  s.output_tokens = DistSpec::fixed(8);
  s.concurrency = 4;
  s.order = order;
  return s;
}

std::vector<RequestSpec> run(const SyntheticConfig& s, int* concurrency = nullptr) {
  WorkloadConfig w;
  w.synthetic = s;
  RandomStreams rng(1);
  auto src = make_request_source(w, rng);
  if (concurrency) *concurrency = src->closed_loop_concurrency();
  return drain(*src);
}

uint64_t group_prefix(uint64_t g) { return make_content_id(ContentNamespace::kGroupPrefix, g); }

TEST(SharedPrefix, InterleavedOrderVisitsEveryGroupBeforeRepeating) {
  int concurrency = 0;
  const auto reqs = run(shared("interleaved"), &concurrency);
  ASSERT_EQ(reqs.size(), 6u);  // 3 groups x 2
  // g0r0, g1r0, g2r0, g0r1, g1r1, g2r1
  const uint64_t expected[] = {0, 1, 2, 0, 1, 2};
  for (size_t i = 0; i < 6; ++i) {
    ASSERT_EQ(reqs[i].prompt.size(), 2u);
    EXPECT_EQ(reqs[i].prompt[0].content_id, group_prefix(expected[i])) << i;
    EXPECT_EQ(reqs[i].prompt[0].tokens, 100);
    EXPECT_EQ(reqs[i].prompt[1].tokens, 10);
    EXPECT_EQ(reqs[i].prompt_tokens, 110);
    EXPECT_EQ(reqs[i].output_tokens, 8);
    EXPECT_EQ(reqs[i].id.value(), static_cast<int64_t>(i));
  }
  EXPECT_EQ(concurrency, 4);
}

TEST(SharedPrefix, PrefixIsSharedWithinAGroupAndSuffixesAreUnique) {
  const auto reqs = run(shared("interleaved"));
  EXPECT_EQ(reqs[0].prompt[0].content_id, reqs[3].prompt[0].content_id);  // both group 0
  EXPECT_NE(reqs[0].prompt[0].content_id, reqs[1].prompt[0].content_id);  // groups 0 and 1
  for (size_t i = 0; i < reqs.size(); ++i)
    for (size_t j = i + 1; j < reqs.size(); ++j) EXPECT_NE(reqs[i].prompt[1].content_id, reqs[j].prompt[1].content_id);
}

TEST(SharedPrefix, GroupedOrderFinishesAGroupFirst) {
  const auto reqs = run(shared("grouped"));
  const uint64_t expected[] = {0, 0, 1, 1, 2, 2};
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(reqs[i].prompt[0].content_id, group_prefix(expected[i])) << i;
}

TEST(SharedPrefix, RandomOrderKeepsRequestsPerGroup) {
  auto s = shared("random");
  s.groups = 5;
  s.requests_per_group = 4;
  const auto reqs = run(s);
  ASSERT_EQ(reqs.size(), 20u);
  std::map<uint64_t, int> per_group;
  for (const auto& r : reqs) ++per_group[r.prompt[0].content_id];
  EXPECT_EQ(per_group.size(), 5u);
  for (const auto& [id, n] : per_group) EXPECT_EQ(n, 4);
}

TEST(SharedPrefix, ClosedLoopArrivesAtZeroOpenLoopUsesPoisson) {
  for (const auto& r : run(shared("interleaved"))) EXPECT_EQ(r.arrival.ns(), 0);
  auto s = shared("interleaved");
  s.concurrency = 0;
  s.rate = 5.0;
  int concurrency = -1;
  const auto reqs = run(s, &concurrency);
  EXPECT_EQ(concurrency, 0);
  EXPECT_GT(reqs[0].arrival.ns(), 0);
  for (size_t i = 1; i < reqs.size(); ++i) EXPECT_GE(reqs[i].arrival, reqs[i - 1].arrival);
}

TEST(SharedPrefix, NumRequestsCapsTheTotal) {
  auto s = shared("interleaved");
  s.num_requests = 4;
  EXPECT_EQ(run(s).size(), 4u);
}

}  // namespace
}  // namespace kvsim
