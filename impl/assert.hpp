// Always-on assertions. A broken invariant or a driver that breaks the
// engine's preconditions (time going back, say) throws, so that a property
// test can shrink to it and a simulator can report the seed; production
// drivers let it terminate the process. The checks are cheap comparisons.
#pragma once

#include <stdexcept>
#include <string>

namespace lockstep {

class InvariantViolation : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void fail_assertion(const char* condition, const char* file, int line);

}  // namespace lockstep

#define LOCKSTEP_ASSERT(condition)                                   \
  do {                                                               \
    if (!(condition)) [[unlikely]]                                   \
      ::lockstep::fail_assertion(#condition, __FILE__, __LINE__);    \
  } while (false)
