#include "impl/assert.hpp"

#include <fmt/format.h>

namespace lockstep {

void fail_assertion(const char* condition, const char* file, int line) {
  throw InvariantViolation(fmt::format("assertion failed: {} ({}:{})", condition, file, line));
}

}  // namespace lockstep
