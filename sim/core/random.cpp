#include "sim/core/random.h"

#include <cmath>

#include "sim/core/check.h"

namespace kvsim {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

RandomStream::RandomStream(uint64_t seed) {
  uint64_t st = seed;
  for (auto& x : s_) x = splitmix64(st);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t RandomStream::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double RandomStream::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double RandomStream::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

int64_t RandomStream::uniform_int(int64_t lo, int64_t hi) {
  KVSIM_CHECK(lo <= hi, "uniform_int: empty range [" << lo << ", " << hi << "]");
  // Unsigned arithmetic: hi - lo overflows int64 for ranges wider than 2^63.
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;
  if (span == 0) return static_cast<int64_t>(next_u64());
  // Rejection sampling for an unbiased result.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % span;
  uint64_t x;
  do {
    x = next_u64();
  } while (x >= limit);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + x % span);
}

double RandomStream::exponential(double rate) {
  double u;
  do {
    u = uniform();
  } while (u <= 0.0);
  return -std::log(u) / rate;
}

double RandomStream::normal(double mean, double stddev) {
  // Box-Muller; one value per call keeps the stream position simple to reason about.
  double u1;
  do {
    u1 = uniform();
  } while (u1 <= 0.0);
  const double u2 = uniform();
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double RandomStream::lognormal(double mu, double sigma) { return std::exp(normal(mu, sigma)); }

double RandomStream::gamma(double shape, double scale) {
  if (shape < 1.0) {
    // Boost to shape+1 and scale back (Marsaglia-Tsang).
    double u;
    do {
      u = uniform();
    } while (u <= 0.0);
    return gamma(shape + 1.0, scale) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x, v;
    do {
      x = normal(0.0, 1.0);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * scale;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v * scale;
  }
}

RandomStream& RandomStreams::stream(const std::string& name) {
  auto it = streams_.find(name);
  if (it != streams_.end()) return *it->second;
  uint64_t st = seed_ ^ (run_ * 0x9e3779b97f4a7c15ULL) ^ fnv1a64(name);
  auto s = std::make_unique<RandomStream>(splitmix64(st));
  auto& ref = *s;
  streams_.emplace(name, std::move(s));
  return ref;
}

}  // namespace kvsim
