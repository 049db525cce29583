#include "sim/core/check.h"

namespace kvsim {

void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  throw InvariantError(std::string("invariant failed at ") + file + ":" + std::to_string(line) + ": " + cond +
                       (msg.empty() ? "" : ": " + msg));
}

}  // namespace kvsim
