#pragma once
// Named random streams derived from one seed and a run number (ns-3 style). Each stream is an
// independent xoshiro256** generator seeded by hashing (seed, run, name) with splitmix64, so adding a
// stream never shifts the numbers of another. Distributions are our own code: std distributions
// differ across standard libraries, and results must be identical everywhere.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace kvsim {

class RandomStream {
 public:
  explicit RandomStream(uint64_t seed);
  uint64_t next_u64();
  double uniform();                             // [0, 1)
  double uniform(double lo, double hi);         // [lo, hi)
  int64_t uniform_int(int64_t lo, int64_t hi);  // inclusive both ends
  double exponential(double rate);              // mean 1/rate
  double normal(double mean, double stddev);
  double lognormal(double mu, double sigma);
  double gamma(double shape, double scale);  // Marsaglia-Tsang

 private:
  uint64_t s_[4];
};

class RandomStreams {
 public:
  RandomStreams(uint64_t seed, uint64_t run = 0) : seed_(seed), run_(run) {}
  // Returns the stream with this name, creating it on first use. References stay valid.
  RandomStream& stream(const std::string& name);
  uint64_t seed() const { return seed_; }

 private:
  uint64_t seed_;
  uint64_t run_;
  std::map<std::string, std::unique_ptr<RandomStream>> streams_;
};

uint64_t splitmix64(uint64_t& state);
// FNV-1a over the bytes of a string; used to derive stream seeds from names.
uint64_t fnv1a64(const std::string& s, uint64_t h = 14695981039346656037ULL);

}  // namespace kvsim
