#pragma once
// Sampling a DistSpec with our own distribution code (random.h). "fixed" draws nothing from the
// stream, so switching a length to fixed does not shift the other draws of the same stream.
#include <cstdint>
#include <string>

#include "sim/core/random.h"
#include "sim/workload/workload_config.h"

namespace kvsim {

// Unclamped draw. normal/lognormal take the mean and stddev of the resulting values; lognormal
// converts them to the underlying normal: sigma^2 = ln(1 + sd^2/mean^2), mu = ln(mean) - sigma^2/2.
double sample_raw(const DistSpec& d, RandomStream& rng);
// Rounded to the nearest integer, clamped to [max(min, 1), max] (max 0 = no ceiling).
int64_t sample_tokens(const DistSpec& d, RandomStream& rng);
// Clamped to [max(min, 0), max] (max 0 = no ceiling).
double sample_seconds(const DistSpec& d, RandomStream& rng);
// Throws InputError "<where>.<key>: ..." for an unknown kind or inconsistent parameters, and for a
// parameter above kMaxDistValue (a token count or seconds that no int64 clock or count could hold).
void validate_dist(const DistSpec& d, const std::string& where);
inline constexpr double kMaxDistValue = 1e9;
// t + seconds on the simulated clock; an InputError naming `what` when the sum passes the end of
// the int64 nanosecond clock (about 292 years), e.g. a rate so low that arrivals run off the clock.
SimTime advance_clock(SimTime t, double seconds, const std::string& what);

}  // namespace kvsim
