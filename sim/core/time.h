#pragma once
// Simulated time: integer nanoseconds. SimTime is a point, Duration a span. Floating seconds become
// time only through duration_from_seconds(), which rounds to nearest and rejects NaN and negatives.
#include <compare>
#include <cstdint>
#include <string>

namespace kvsim {

class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration zero() { return Duration(0); }
  static constexpr Duration ns(int64_t v) { return Duration(v); }
  static constexpr Duration us(int64_t v) { return Duration(v * 1000); }
  static constexpr Duration ms(int64_t v) { return Duration(v * 1000000); }
  static constexpr Duration s(int64_t v) { return Duration(v * 1000000000); }
  constexpr int64_t ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }
  constexpr double millis() const { return static_cast<double>(ns_) * 1e-6; }
  constexpr auto operator<=>(const Duration&) const = default;
  constexpr Duration operator+(Duration o) const { return Duration(ns_ + o.ns_); }
  constexpr Duration operator-(Duration o) const { return Duration(ns_ - o.ns_); }
  constexpr Duration& operator+=(Duration o) {
    ns_ += o.ns_;
    return *this;
  }
  constexpr Duration operator*(int64_t k) const { return Duration(ns_ * k); }

 private:
  constexpr explicit Duration(int64_t v) : ns_(v) {}
  int64_t ns_ = 0;
};

class SimTime {
 public:
  constexpr SimTime() = default;
  static constexpr SimTime from_ns(int64_t v) { return SimTime(v); }
  static constexpr SimTime zero() { return SimTime(0); }
  constexpr int64_t ns() const { return ns_; }
  constexpr double seconds() const { return static_cast<double>(ns_) * 1e-9; }
  constexpr auto operator<=>(const SimTime&) const = default;
  constexpr SimTime operator+(Duration d) const { return SimTime(ns_ + d.ns()); }
  constexpr Duration operator-(SimTime o) const { return Duration::ns(ns_ - o.ns_); }

 private:
  constexpr explicit SimTime(int64_t v) : ns_(v) {}
  int64_t ns_ = 0;
};

// The one place where floating seconds become simulated time. Rounds to the nearest nanosecond;
// throws std::invalid_argument for NaN, infinity, negative values or values beyond ~292 years.
Duration duration_from_seconds(double seconds);

// Whether y-m-d is a day of the proleptic Gregorian calendar (month 1-12, the month's days, Feb 29 in
// leap years only).
bool valid_civil_date(int64_t year, int64_t month, int64_t day);

}  // namespace kvsim
