// One key of one incarnation of the target, decided by a forward sweep over
// server instants: is there an assignment of server instants to this key's
// requests (within their windows, in order per connection), of sweep
// instants and of causes for deferred answers (within the tolerance) under
// which the contract gives exactly the responses observed for this key?
//
// Every configuration the server may be in is carried forward at once,
// instant by instant (a frontier), never by backtracking: an early choice
// that is refuted late costs only the configurations it keeps alive, and
// configurations that differ only in their sweep phases or in one instant
// interval are merged. The phases of every surviving explanation are
// collected, so the checker can intersect them across keys exactly.
// DESIGN.md beside this file gives the algorithm and the argument that it
// never reports a violation that has an explanation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/history/key_input.hpp"
#include "model/history/phase_set.hpp"

namespace lockstep::history {

struct KeyCheckOptions {
  // Configurations stepped over the whole key; past it the key is undecided.
  std::uint64_t work_max = 50'000'000;
  // Configurations alive at one instant; past it the key is undecided.
  std::size_t frontier_max = 100'000;
  // Keep the steps of each configuration, for --explain, reports and
  // stories (costs an allocation per step, so only when asked).
  bool record_steps = false;
  std::int64_t origin_us = 0;  // where the history's clock starts, for descriptions
};

enum class KeyOutcome { explained, unexplained, undecided };

struct KeyVerdict {
  KeyOutcome outcome = KeyOutcome::undecided;
  // Explained: every sweep phase that some explanation of the key uses.
  PhaseSet phases;
  // With record_steps: one explanation, or the furthest attempt.
  std::vector<Step> steps;
  std::uint64_t work = 0;          // configurations stepped
  std::size_t frontier_peak = 0;   // most configurations alive at one instant
  // Unexplained or undecided: the furthest configuration, how many responses
  // it explained, the first it could not, and its state in words.
  std::uint32_t explained = 0;
  std::int32_t unexplained = -1;   // an index into KeyInput::observations, or -1
  std::int64_t last_alive_ms = 0;  // the last instant some configuration was alive
  std::string state;
  std::string why;  // undecided: which limit was reached
};

KeyVerdict check_key(const KeyInput& input, const KeyOracles& oracles, const PhaseSet& phases,
                     const KeyCheckOptions& options = {});

}  // namespace lockstep::history
