#pragma once
// Streaming quantiles for runs of any length.
//
// LogSketch is a DDSketch (Masson, Rim, Lee, VLDB 2019) with relative accuracy alpha: value x > 0 goes
// to bucket i = ceil(log_gamma(x)), gamma = (1 + alpha) / (1 - alpha), and bucket i reports
// 2 gamma^i / (gamma + 1), within a factor (1 +- alpha) of every value in it. quantile(q) returns the
// bucket holding the order statistic of rank floor(q (n - 1)) (0-based), so it is within alpha
// (relative) of that exact order statistic; zeros (and values below 1e-9) are counted exactly.
// Mergeable: two sketches with the same alpha add their counts. Memory: one counter per occupied
// power of gamma between the smallest and largest value (about 2,900 for 1 ns .. 1e6 s at 0.4 %).
//
// StreamingDistribution keeps the exact samples up to `exact_limit` values, so every run of up to
// that many samples gets the exact figures of summarize_in_place (numpy's linear interpolation);
// past it, the samples move into a LogSketch (alpha = kSketchAlpha) and the quantiles come from it.
// The mean is always exact (a plain sum in input order, as mean()). Memory is bounded by the limit.
#include <cstdint>
#include <vector>

#include "sim/metrics/quantiles.h"

namespace kvsim {

inline constexpr double kSketchAlpha = 0.004;  // 0.4 %: under the 0.5 % bound with room for interpolation

class LogSketch {
 public:
  explicit LogSketch(double alpha = kSketchAlpha);
  void add(double v);  // v >= 0 (negative values are a KVSIM_CHECK failure)
  void merge(const LogSketch& other);
  int64_t count() const { return count_; }
  // The value at rank floor(q * (count - 1)); NaN when empty.
  double quantile(double q) const;
  double alpha() const { return alpha_; }

 private:
  int bucket(double v) const;
  double alpha_;
  double gamma_;
  double inv_log_gamma_;
  int64_t count_ = 0;
  int64_t zeros_ = 0;
  int offset_ = 0;               // bucket index of counts_[0]
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
      sketch_.add(static_cast<double>(v));
    }
  }
  // Exact figures while within the limit, else the sketch's quantiles; the mean is exact either way.
  Distribution summarize() const;
  bool sketched() const { return sketched_; }
  int64_t count() const { return count_; }

 private:
  void spill() {
    for (T v : exact_) sketch_.add(static_cast<double>(v));
    exact_.clear();
    exact_.shrink_to_fit();
    sketched_ = true;
  }
  int64_t limit_;
  int64_t count_ = 0;
  double sum_ = 0;
  bool sketched_ = false;
  std::vector<T> exact_;
  LogSketch sketch_;
};

extern template class StreamingDistribution<double>;
extern template class StreamingDistribution<float>;

}  // namespace kvsim
