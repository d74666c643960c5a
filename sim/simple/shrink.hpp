// Reproduce and shrink. A failing run's server inputs (the request lines
// and closes the server handled, at the instants it handled them) become a
// conformance vector: the `at` and `close` lines are the inputs, the
// `expect` lines are what the reference model answers to them. A correct
// engine passes such a vector by construction; the failing engine does not.
// Delta debugging (Zeller's ddmin) then removes inputs for as long as the
// vector still fails against the failing engine, so the file a reviewer
// reads is a handful of lines that `lockstep conform --inject-bug NAME`
// replays to the same failure.
//
// A release's token is kept symbolic while shrinking (the acquire that
// obtained it), so that removing an earlier grant does not leave a release
// carrying somebody else's token by accident.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "impl/bugs.hpp"
#include "sim/simple/params.hpp"
#include "sim/simple/simulation.hpp"

namespace lockstep::sim {

// The vector text for `inputs` (no restarts), ending at `end`. Every token
// is written by its `$name`, so the vector holds against any server's
// tokens; empty when that is impossible (a release of a token granted at
// the same instant, whose name is not bound yet when the release is sent).
std::string vector_for_inputs(const std::vector<InputRecord>& inputs, const Limits& limits, TimeMs end,
                              const std::string& comment);

// Whether the vector fails against the engine with `bug`.
bool vector_fails(const std::string& vector_text, InjectedBug bug);

struct ShrinkResult {
  std::string vector_text;         // empty when no failing vector was found
  std::size_t inputs_before = 0;
  std::size_t inputs_after = 0;
  std::uint64_t evaluations = 0;
  std::string note;                // why there is no vector, or how it was cut
};

// The inputs of the incarnation in which the failure happened, focused on
// `key` first when it is not empty, then shrunk with at most
// `evaluations_max` runs of the candidate vector.
ShrinkResult shrink_failure(const RunResult& failed, const Violation& violation,
                            std::uint64_t evaluations_max = 3000);

}  // namespace lockstep::sim
