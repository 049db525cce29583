#pragma once
// KVSIM_CHECK stays on in release builds: it guards invariants (a broken one is a bug in kvsim, not
// bad input) and throws InvariantError with the file, line and condition.
#include <sstream>
#include <stdexcept>
#include <string>

namespace kvsim {

class InvariantError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);

}  // namespace kvsim

#define KVSIM_CHECK(cond, msg)                                                 \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::ostringstream kvsim_check_os_;                                      \
      kvsim_check_os_ << msg;                                                  \
      ::kvsim::check_failed(__FILE__, __LINE__, #cond, kvsim_check_os_.str()); \
    }                                                                          \
  } while (0)
