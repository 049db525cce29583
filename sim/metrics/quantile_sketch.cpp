#include "sim/metrics/quantile_sketch.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "sim/core/check.h"

namespace kvsim {
namespace {
constexpr double kZero = 1e-9;  // values below count as zero (ms: a picosecond)
}

// The double's biased exponent and top 8 mantissa bits: (exponent, sub-bucket) in one index.
int64_t LogSketch::bucket(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const auto exponent = static_cast<int64_t>((bits >> 52) & 0x7FF);
  const auto sub = static_cast<int64_t>((bits >> 44) & 0xFF);
  return exponent * kSubBuckets + sub;
}

double LogSketch::midpoint(int64_t b) {
  const int64_t exponent = b / kSubBuckets - 1023;
  const double lower = 1.0 + static_cast<double>(b % kSubBuckets) / kSubBuckets;
  return std::ldexp(lower + 0.5 / kSubBuckets, static_cast<int>(exponent));
}

void LogSketch::add(double v) {
  KVSIM_CHECK(v >= 0 && std::isfinite(v), "sketch value " << v);
  ++count_;
  if (v < kZero) {
    ++zeros_;
    return;
  }
  const int64_t i = bucket(v);
  if (counts_.empty()) {
    offset_ = i;
    counts_.assign(1, 0);
  } else if (i < offset_) {
    counts_.insert(counts_.begin(), static_cast<size_t>(offset_ - i), 0);
    offset_ = i;
  } else if (i >= offset_ + static_cast<int64_t>(counts_.size())) {
    counts_.resize(static_cast<size_t>(i - offset_ + 1), 0);
  }
  ++counts_[static_cast<size_t>(i - offset_)];
}

void LogSketch::merge(const LogSketch& o) {
  count_ += o.count_;
  zeros_ += o.zeros_;
  if (o.counts_.empty()) return;
  if (counts_.empty()) {
    offset_ = o.offset_;
    counts_ = o.counts_;
    return;
  }
  const int64_t lo = std::min(offset_, o.offset_);
  const int64_t hi =
      std::max(offset_ + static_cast<int64_t>(counts_.size()), o.offset_ + static_cast<int64_t>(o.counts_.size()));
  std::vector<int64_t> merged(static_cast<size_t>(hi - lo), 0);
  for (size_t k = 0; k < counts_.size(); ++k) merged[static_cast<size_t>(offset_ - lo) + k] += counts_[k];
  for (size_t k = 0; k < o.counts_.size(); ++k) merged[static_cast<size_t>(o.offset_ - lo) + k] += o.counts_[k];
  counts_ = std::move(merged);
  offset_ = lo;
}

double LogSketch::quantile(double q) const {
  KVSIM_CHECK(q >= 0.0 && q <= 1.0, "quantile q must be in [0, 1], got " << q);
  if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
  const auto rank = static_cast<int64_t>(std::floor(q * static_cast<double>(count_ - 1)));
  int64_t seen = zeros_;
  if (rank < seen) return 0.0;
  for (size_t k = 0; k < counts_.size(); ++k) {
    seen += counts_[k];
    if (rank < seen) return midpoint(offset_ + static_cast<int64_t>(k));
  }
  return midpoint(offset_ + static_cast<int64_t>(counts_.size()) - 1);
}

template <typename T>
Distribution StreamingDistribution<T>::summarize() const {
  if (!sketched_) {
    std::vector<T> copy = exact_;
    return summarize_in_place(copy);
  }
  Distribution d;
  d.count = count_;
  d.mean = count_ > 0 ? sum_ / static_cast<double>(count_) : std::numeric_limits<double>::quiet_NaN();
  d.p50 = sketch_.quantile(0.50);
  d.p90 = sketch_.quantile(0.90);
  d.p99 = sketch_.quantile(0.99);
  return d;
}

template class StreamingDistribution<double>;
template class StreamingDistribution<float>;

}  // namespace kvsim
