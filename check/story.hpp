// A key's violation told for a reader: the history is cut to the shortest
// prefix whose events on that key still have no explanation, and that
// prefix is printed as a timeline of the key (requests sent, responses
// received, closes), with the furthest explanation the search reached: the
// model's state there and the response that nothing explains.
#pragma once

#include <cstdint>

#include "check/checker.hpp"
#include "check/frontier.hpp"
#include "check/key_input.hpp"

namespace lockstep::history {

// `whole` is the key's verdict on the whole history: where its last
// configuration died, and that configuration's state.
// The culprit and the contract's answer there, in words (empty when the
// search recorded no failure).
std::string failure_sentence(const KeyInput& input, const KeyFailure& failure, std::int64_t origin_us);

Finding key_finding(const History& history, std::uint32_t incarnation, const KeyInput& input, bool shrink,
                    const KeyVerdict& whole);

// How soon after a restart a violation points at the restart rather than at
// the limits: a server that outlives its stop serves at most through its
// shutdown, and the tools give a server 2 s to exit on SIGTERM before they
// kill it (live/process.hpp).
inline constexpr std::int64_t restart_suspect_us = 2'000'000;

// A line that points at the target's restart, for a violation in an
// incarnation after the first that shows (at `at_us`) within
// restart_suspect_us of its start; empty otherwise.
std::string restart_note(const History& history, std::uint32_t incarnation, std::int64_t at_us);

}  // namespace lockstep::history
