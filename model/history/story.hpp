// A key's violation told for a reader: the history is cut to the shortest
// prefix whose events on that key still have no explanation, and that
// prefix is printed as a timeline of the key (requests sent, responses
// received, closes), with the furthest explanation the search reached: the
// model's state there and the response that nothing explains.
#pragma once

#include <cstdint>

#include "model/history/checker.hpp"
#include "model/history/frontier.hpp"
#include "model/history/key_input.hpp"

namespace lockstep::history {

// `whole` is the key's verdict on the whole history: where its last
// configuration died, and that configuration's state.
// The culprit and the contract's answer there, in words (empty when the
// search recorded no failure).
std::string failure_sentence(const KeyInput& input, const KeyFailure& failure, std::int64_t origin_us);

Finding key_finding(const History& history, std::uint32_t incarnation, const KeyInput& input, bool shrink,
                    const KeyVerdict& whole);

}  // namespace lockstep::history
