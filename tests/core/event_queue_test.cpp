// The event queue's total order (time, phase, insertion) and integer time's one rounding point.
#include "sim/core/event_queue.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "sim/core/check.h"

namespace kvsim {
namespace {

TEST(EventQueue, OrdersByTimeThenPhaseThenInsertion) {
  EventQueue q;
  std::vector<int> order;
  const SimTime t1 = SimTime::from_ns(10), t0 = SimTime::from_ns(5);
  q.schedule(t1, Phase::kSchedule, 0, [&] { order.push_back(1); });
  q.schedule(t1, Phase::kArrival, 0, [&] { order.push_back(2); });
  q.schedule(t1, Phase::kSchedule, 0, [&] { order.push_back(3); });
  q.schedule(t0, Phase::kSample, 0, [&] { order.push_back(4); });
  q.schedule(t1, Phase::kStepDone, 0, [&] { order.push_back(5); });
  while (q.run_one()) {
  }
  EXPECT_EQ(order, (std::vector<int>{4, 2, 5, 1, 3}));
  EXPECT_EQ(q.now(), t1);
  EXPECT_EQ(q.events_dispatched(), 5u);
}

TEST(EventQueue, SchedulingInThePastIsAnInvariantError) {
  EventQueue q;
  q.schedule(SimTime::from_ns(10), Phase::kArrival, 0, [] {});
  q.run_one();
  EXPECT_THROW(q.schedule(SimTime::from_ns(9), Phase::kArrival, 0, [] {}), InvariantError);
  EXPECT_NO_THROW(q.schedule(SimTime::from_ns(10), Phase::kArrival, 0, [] {}));
}

TEST(EventQueue, FingerprintDependsOnTimeAndTag) {
  auto fp = [](int64_t at, uint32_t tag) {
    EventQueue q;
    q.schedule(SimTime::from_ns(at), Phase::kArrival, tag, [] {});
    q.run_one();
    return q.fingerprint();
  };
  EXPECT_EQ(fp(3, 1), fp(3, 1));
  EXPECT_NE(fp(3, 1), fp(4, 1));
  EXPECT_NE(fp(3, 1), fp(3, 2));
}

TEST(DurationFromSeconds, RoundsToNearestNanosecond) {
  EXPECT_EQ(duration_from_seconds(1.6e-9).ns(), 2);
  EXPECT_EQ(duration_from_seconds(1.4e-9).ns(), 1);
  EXPECT_EQ(duration_from_seconds(0.0).ns(), 0);
  EXPECT_EQ(duration_from_seconds(2.0).ns(), 2000000000);
}

TEST(DurationFromSeconds, RejectsNegativeNanAndInfinite) {
  EXPECT_THROW(duration_from_seconds(-1e-9), std::invalid_argument);
  EXPECT_THROW(duration_from_seconds(std::nan("")), std::invalid_argument);
  EXPECT_THROW(duration_from_seconds(std::numeric_limits<double>::infinity()), std::invalid_argument);
  EXPECT_THROW(duration_from_seconds(1e10), std::invalid_argument);  // 1e19 ns > INT64_MAX
}

}  // namespace
}  // namespace kvsim
