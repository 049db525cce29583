// Named random streams: uniform_int stays inside its inclusive bounds on both sides, including ranges
// wider than 2^63 (whose width overflows int64), and rejects an empty range.
#include "sim/core/random.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "sim/core/check.h"

namespace kvsim {
namespace {

TEST(RandomStream, UniformIntHitsBothInclusiveBounds) {
  RandomStream r(7);
  bool saw_lo = false, saw_hi = false;
  for (int i = 0; i < 1000; ++i) {
    const int64_t x = r.uniform_int(-2, 2);
    ASSERT_GE(x, -2);
    ASSERT_LE(x, 2);
    saw_lo = saw_lo || x == -2;
    saw_hi = saw_hi || x == 2;
  }
  EXPECT_TRUE(saw_lo);
  EXPECT_TRUE(saw_hi);
}

TEST(RandomStream, UniformIntSinglePointRange) {
  RandomStream r(7);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(r.uniform_int(5, 5), 5);
}

TEST(RandomStream, UniformIntWiderThanInt64Range) {
  // [INT64_MIN, 0] has 2^63 + 1 values: hi - lo does not fit int64. Half of the draws land in the
  // lower half of the range in expectation; with 1000 draws both halves appear.
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  RandomStream r(11);
  int lower = 0;
  for (int i = 0; i < 1000; ++i) {
    const int64_t x = r.uniform_int(kMin, 0);
    ASSERT_LE(x, 0);
    lower += x < kMin / 2;
  }
  EXPECT_GT(lower, 0);
  EXPECT_LT(lower, 1000);
}

TEST(RandomStream, UniformIntEmptyRangeIsAnInvariantError) {
  RandomStream r(1);
  EXPECT_THROW(r.uniform_int(3, 2), InvariantError);
}

TEST(RandomStreams, StreamsAreIndependentOfCreationOrder) {
  RandomStreams a(42), b(42);
  a.stream("x");
  const uint64_t ya = a.stream("y").next_u64();
  const uint64_t yb = b.stream("y").next_u64();
  EXPECT_EQ(ya, yb);
}

}  // namespace
}  // namespace kvsim
