#pragma once
// StrongInt: an int64 wrapped in a tag type so that values of different meaning (a time point and a
// span, a request id and a block id) cannot be mixed by accident. Arithmetic is defined only where
// it makes sense for the tag (see time.h).
#include <compare>
#include <cstdint>
#include <functional>

namespace kvsim {

template <typename Tag>
class StrongInt {
 public:
  constexpr StrongInt() = default;
  constexpr explicit StrongInt(int64_t v) : v_(v) {}
  constexpr int64_t value() const { return v_; }
  constexpr auto operator<=>(const StrongInt&) const = default;

 private:
  int64_t v_ = 0;
};

struct RequestIdTag {};
using RequestId = StrongInt<RequestIdTag>;

}  // namespace kvsim

template <typename Tag>
struct std::hash<kvsim::StrongInt<Tag>> {
  size_t operator()(const kvsim::StrongInt<Tag>& s) const noexcept { return std::hash<int64_t>{}(s.value()); }
};
