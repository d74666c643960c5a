// A key's violation told for a reader: the history is cut to the shortest
// prefix whose events on that key still have no explanation, and that
// prefix is printed as a timeline of the key (requests sent, responses
// received, closes), with the furthest explanation the search reached: the
// model's state there and the response that nothing explains.
#pragma once

#include <cstdint>

#include "model/history/checker.hpp"
#include "model/history/key_problem.hpp"

namespace lockstep::history {

// The model's state at a point of an explanation, in words.
std::string describe_state(const KeyInput& input, const KeyProblem::State& state, std::int64_t origin_us);

Finding key_finding(const History& history, std::uint32_t incarnation, const KeyInput& input, bool shrink);

}  // namespace lockstep::history
