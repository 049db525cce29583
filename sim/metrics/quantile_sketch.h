#pragma once
// Streaming quantiles for runs of any length.
//
// LogSketch is a log-linear (HDR-style) histogram: value x > 0 with x = m 2^e, m in [1, 2), goes to
// bucket (e, floor((m - 1) 256)), found from the bits of the double (no logarithm: ITL adds one value a
// token). A bucket spans at most 1/256 of its lower edge, and reports its midpoint, so every value in it
// is within 1/512 (0.2 %) relative; quantile(q) returns the bucket holding the order statistic of rank
// floor(q (n - 1)) (0-based), within 0.2 % of that exact order statistic. Zeros (and values below 1e-9)
// are counted exactly. Mergeable: two sketches add their counts. Memory: one counter per bucket between
// the smallest and largest exponent seen (256 per factor of 2: about 12,800 for 1e-6 .. 1e9 ms).
// StreamingDistribution keeps the exact samples up to `exact_limit` values, so every run of up to
// that many samples gets the exact figures of summarize_in_place (numpy's linear interpolation);
// past it, the samples move into a LogSketch and the quantiles come from it.
// The mean is always exact (a plain sum in input order, as mean()); the standard deviation is exact
// while exact, then from running sums of x and x^2. Memory is bounded by the limit.
#include <cstdint>
#include <vector>

#include "sim/metrics/quantiles.h"

namespace kvsim {

inline constexpr double kSketchRelativeError = 1.0 / 512;  // 0.2 %, under the 0.5 % bound

class LogSketch {
 public:
  static constexpr int kSubBuckets = 256;  // per power of two
  void add(double v);                      // v >= 0 (negative or non-finite: a KVSIM_CHECK failure)
  void merge(const LogSketch& other);
  int64_t count() const { return count_; }
  // The value at rank floor(q * (count - 1)); NaN when empty.
  double quantile(double q) const;

 private:
  static int64_t bucket(double v);
  static double midpoint(int64_t bucket);
  int64_t count_ = 0;
  int64_t zeros_ = 0;
  int64_t offset_ = 0;           // bucket index of counts_[0]
  std::vector<int64_t> counts_;  // contiguous from offset_
};

template <typename T>
class StreamingDistribution {
 public:
  explicit StreamingDistribution(int64_t exact_limit) : limit_(exact_limit) {}
  void add(T v) {
    ++count_;
    sum_ += static_cast<double>(v);
    if (!sketched_) {
      exact_.push_back(v);
      if (static_cast<int64_t>(exact_.size()) > limit_) spill();
    } else {
      squares_ += static_cast<double>(v) * static_cast<double>(v);
      sketch_.add(static_cast<double>(v));
    }
  }
  // Exact figures while within the limit, else the sketch's quantiles; the mean is exact either way.
  Distribution summarize() const;
  bool sketched() const { return sketched_; }
  int64_t count() const { return count_; }

 private:
  void spill() {
    for (T v : exact_) {
      squares_ += static_cast<double>(v) * static_cast<double>(v);
      sketch_.add(static_cast<double>(v));
    }
    exact_.clear();
    exact_.shrink_to_fit();
    sketched_ = true;
  }
  int64_t limit_;
  int64_t count_ = 0;
  double sum_ = 0;
  double squares_ = 0;  // for the standard deviation once sketched (E[x^2] - E[x]^2)
  bool sketched_ = false;
  std::vector<T> exact_;
  LogSketch sketch_;
};

extern template class StreamingDistribution<double>;
extern template class StreamingDistribution<float>;

}  // namespace kvsim
