// Max-min fairness by progressive filling: textbook cases, expected rates computed by hand.
#include "sim/net/max_min.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace kvsim {
namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();

struct Problem {
  std::vector<double> capacity;
  std::vector<std::vector<int>> flows;
  std::vector<double> bounds;
};

std::vector<double> solve(const Problem& p, MaxMinSolver& s) {
  s.reset(p.capacity);
  for (size_t i = 0; i < p.flows.size(); ++i) {
    s.add_flow(p.flows[i].data(), static_cast<int>(p.flows[i].size()), p.bounds.empty() ? kNone : p.bounds[i]);
  }
  s.solve();
  std::vector<double> r;
  for (int i = 0; i < s.num_flows(); ++i) r.push_back(s.rate(i));
  return r;
}

TEST(NetMaxMin, TwoFlowsShareALinkEqually) {
  MaxMinSolver s;
  auto r = solve({{10.0}, {{0}, {0}}, {}}, s);
  EXPECT_DOUBLE_EQ(r[0], 5.0);
  EXPECT_DOUBLE_EQ(r[1], 5.0);
}

TEST(NetMaxMin, OneFlowAloneTakesTheWholeLink) {
  MaxMinSolver s;
  auto r = solve({{10.0}, {{0}}, {}}, s);
  EXPECT_DOUBLE_EQ(r[0], 10.0);
}

// Flow 0 also crosses a 2-unit link: it gets 2, and flow 1 takes the other 8 of the shared 10.
TEST(NetMaxMin, FlowLimitedBySlowerLinkLeavesItsShareToTheOther) {
  MaxMinSolver s;
  auto r = solve({{10.0, 2.0}, {{0, 1}, {0}}, {}}, s);
  EXPECT_DOUBLE_EQ(r[0], 2.0);
  EXPECT_DOUBLE_EQ(r[1], 8.0);
}

// Flow 0 capped at 3 leaves 7 to flow 1; a cap above the fair share (6 > 5) changes nothing.
TEST(NetMaxMin, FlowLimitedByItsCapLeavesItsShareToTheOther) {
  MaxMinSolver s;
  auto r = solve({{10.0}, {{0}, {0}}, {3.0, kNone}}, s);
  EXPECT_DOUBLE_EQ(r[0], 3.0);
  EXPECT_DOUBLE_EQ(r[1], 7.0);
  r = solve({{10.0}, {{0}, {0}}, {6.0, kNone}}, s);
  EXPECT_DOUBLE_EQ(r[0], 5.0);
  EXPECT_DOUBLE_EQ(r[1], 5.0);
}

// Chain L0 (12) - L1 (6) - L2 (2); A crosses L0, B crosses L0 and L1, C crosses all three.
// Round 1: shares L0 12/3 = 4, L1 6/2 = 3, L2 2/1 = 2 -> C = 2 (L2 saturates).
// Round 2: L0 (12-2)/2 = 5, L1 (6-2)/1 = 4 -> B = 4 (L1 saturates).
// Round 3: L0 (12-2-4)/1 = 6 -> A = 6. Every link ends full: 6+4+2 = 12, 4+2 = 6, 2.
TEST(NetMaxMin, ChainOfThreeLinksFillsProgressively) {
  MaxMinSolver s;
  auto r = solve({{12.0, 6.0, 2.0}, {{0}, {0, 1}, {0, 1, 2}}, {}}, s);
  EXPECT_DOUBLE_EQ(r[0], 6.0);
  EXPECT_DOUBLE_EQ(r[1], 4.0);
  EXPECT_DOUBLE_EQ(r[2], 2.0);
}

// The classic example: one long flow over three unit links, one short flow on each link: all 1/2.
TEST(NetMaxMin, LongFlowAndThreeShortFlowsGetHalfEach) {
  MaxMinSolver s;
  auto r = solve({{1.0, 1.0, 1.0}, {{0, 1, 2}, {0}, {1}, {2}}, {}}, s);
  for (double v : r) EXPECT_DOUBLE_EQ(v, 0.5);
}

// Bounds below the level are fixed first and raise the others: 3 flows on 9, caps 1 and 2 -> 1, 2, 6.
TEST(NetMaxMin, SeveralCapsBelowTheShareAreAllHonoured) {
  MaxMinSolver s;
  auto r = solve({{9.0}, {{0}, {0}, {0}}, {1.0, 2.0, kNone}}, s);
  EXPECT_DOUBLE_EQ(r[0], 1.0);
  EXPECT_DOUBLE_EQ(r[1], 2.0);
  EXPECT_DOUBLE_EQ(r[2], 6.0);
}

}  // namespace
}  // namespace kvsim
