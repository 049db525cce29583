#pragma once
// InputError: bad input from the user (a config, a trace line, a scenario key, a unit). The message
// names the file, line or key; the app prints it on one line and exits with code 2.
#include <stdexcept>
#include <string>

namespace kvsim {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace kvsim
