#include "sim/core/units.h"

#include <gtest/gtest.h>

#include "sim/core/errors.h"

namespace kvsim {

TEST(Units, BytesUseBinaryAndDecimalPrefixes) {
  EXPECT_EQ(parse_bytes("80GiB", "k"), 80LL * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_bytes("141GB", "k"), 141000000000LL);
  EXPECT_EQ(parse_bytes("4096", "k"), 4096);
}

TEST(Units, BandwidthInBytesPerSecond) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("900GB/s", "k"), 900e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gb/s", "k"), 50e9);  // 400 Gbit/s = 50 GB/s
}

TEST(Units, DurationRoundsToNanoseconds) {
  EXPECT_EQ(parse_duration("2.5us", "k").ns(), 2500);
  EXPECT_EQ(parse_duration("10ms", "k").ns(), 10000000);
}

TEST(Units, BadUnitNamesTheKey) {
  try {
    parse_bytes("80 parsecs", "engine.memory");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("engine.memory"), std::string::npos);
  }
  EXPECT_THROW(parse_duration("-1s", "k"), InputError);
  EXPECT_THROW(parse_bandwidth("900GB", "k"), InputError);
}

}  // namespace kvsim
