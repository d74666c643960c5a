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

#include "check/key_input.hpp"
#include "check/phase_set.hpp"

namespace lockstep::history {

struct KeyCheckOptions {
  // Configurations stepped over the whole key; past it the key is undecided.
  std::uint64_t work_max = 50'000'000;
  // Configurations alive at one instant; past it the key is undecided.
  std::size_t frontier_max = 100'000;
  // Bytes the configurations of one instant may take (an estimate of what
  // they hold); past it the key is undecided, rather than the process
  // growing without bound.
  std::uint64_t memory_max_bytes = 1ull << 30;
  // Keep the steps of each configuration, for --explain, reports and
  // stories (costs an allocation per step, so only when asked).
  bool record_steps = false;
  std::int64_t origin_us = 0;  // where the history's clock starts, for descriptions
};

enum class KeyOutcome { explained, unexplained, undecided };

// Why the furthest configuration went no further: an answer the contract
// gives there that was not observed (`missing`), an observation nothing
// gives (`unexplained`), or a request that could not be handled in its
// window (`unhandled`). Indices are into the KeyInput's lists.
struct KeyFailure {
  // (Cluster mode with max_lateness_ms: `late`, an Expire, a Timeout or a
  // deferred answer later than that allows; `request` is whose it was.)
  enum class Kind { none, missing, unexplained, unhandled, late };
  // What causes a missing answer: its own request (an answer given at
  // once), a release or a sweep that hands the key over, a wait ending.
  // (Cluster mode: an Expire hands the key over, where a sweep would.)
  enum class Cause { request, release, sweep, deadline, expire };
  Kind kind = Kind::none;
  Cause cause = Cause::request;
  ResponseKind response = ResponseKind::error;  // missing: the contract's answer
  std::uint32_t conn = 0;                       // its connection (a slot of KeyInput::conns)
  std::uint32_t owner = 0;                      // A, T, B
  std::uint64_t token = 0;                      // A (0: any), R, N
  std::int64_t at_ms = 0;                       // the instant of the answer (or of the death)
  std::int64_t due_by_us = -1;                  // missing and deferred: the latest arrival allowed
  std::int32_t request = -1;                    // the request answered (or not handled)
  std::int32_t cause_request = -1;              // a release that handed the key over
  std::int32_t got = -1;                        // missing: what came instead for that owner or token
  std::uint64_t next_token = 0;                 // missing grant: the key's next token seen (0: none left)
  std::int32_t observation = -1;                // unexplained: the observation
  // Unexplained: what the furthest explanation says of the culprit's owner
  // (or token) there, and so what the contract would answer instead, in
  // words ("`bob` waits behind `alice` on c2: a hand-off goes to `alice`
  // first, `A <token> alice k`"). Empty when there is nothing to say.
  std::string instead;
};

// When a grant observed on the key may have been issued: every
// explanation issues it at an instant of [first_ms, last_ms].
struct GrantWindow {
  std::uint32_t observation = 0;
  std::int64_t first_ms = 0, last_ms = 0;
  // Simple mode: every explanation issues it as a sweep's hand-off of the
  // key from an expired holder whose grant carried this token (for the
  // order of one sweep across keys); 0 when not known to be one.
  std::uint64_t swept_holder = 0;
};

struct KeyVerdict {
  KeyOutcome outcome = KeyOutcome::undecided;
  // Explained: every sweep phase that some explanation of the key uses.
  PhaseSet phases;
  // With record_steps: one explanation, or the furthest attempt.
  std::vector<Step> steps;
  std::uint64_t work = 0;          // configurations stepped
  std::size_t frontier_peak = 0;   // most configurations alive at one instant
  std::uint64_t memory_peak_bytes = 0;  // estimated, of the configurations of one instant
  // Explained: for each grant observed, the instants it may have been
  // issued at (for the order of tokens across keys).
  std::vector<GrantWindow> grants;
  // Unexplained: why the furthest configuration died.
  KeyFailure failure;
  // Unexplained or undecided: the furthest configuration, how many responses
  // it explained, the first it could not, and its state in words.
  std::uint32_t explained = 0;
  std::int32_t unexplained = -1;   // an index into KeyInput::observations, or -1
  std::int64_t last_alive_ms = 0;  // the last instant some configuration was alive
  std::string state;
  std::string why;  // undecided: which limit was reached
  // Cluster mode, explained: the least lateness an explanation needs (ms
  // past a deadline and the clock allowance), and what was that late: the
  // request whose Expire ('e'), Timeout ('t') or deferred answer ('a') it
  // was, at which instant.
  std::int64_t lateness_ms = 0;
  std::int32_t late_request = -1;
  char late_what = 0;
  std::int64_t late_at_ms = 0;
  std::int64_t late_due_ms = 0;  // when it was due (its deadline plus the clock allowance, or plus the tolerance)
};

// A key of a simple server's history, within the sweep phases `phases`.
KeyVerdict check_simple_key(const KeyInput& input, const KeyOracles& oracles, const PhaseSet& phases,
                            const KeyCheckOptions& options = {});
// Either mode's, by the key's own (the reference, the least-lateness search
// and the limit hints ask it so; check_history asks its ModeRules): a key
// of a cluster's history is searched under cluster mode's rules
// (cluster_frontier.hpp), where `phases` means nothing.
KeyVerdict check_key(const KeyInput& input, const KeyOracles& oracles, const PhaseSet& phases,
                     const KeyCheckOptions& options = {});

}  // namespace lockstep::history
