// One key of a cluster's history (docs/protocol.md, "Black box against a
// cluster"), decided by a forward sweep over instants of a reference clock
// (the tester's): is there an assignment of instants to the key's
// operations, Expires and Timeouts under which cluster mode's rules give
// exactly the responses observed for this key?
//
// The rules it reads a history by, beside simple mode's requests:
// - no sweep and no take-over in place: a key is held until its Expire;
// - an Expire takes effect no earlier than its lease's end less the clock
//   allowance (2·S), a Timeout no earlier than the waiter's deadline less
//   it; either may be late: how late is measured (lateness) and fails the
//   key only past max_lateness_ms when one is stated;
// - requests that carry one session (client, seq), whatever connections
//   carried them, are one operation, applied once; any of its sends may
//   hear its outcome;
// - an operation may take effect at any instant after it was first sent,
//   or never, unless an answer to it arrived (then before that answer);
// - nothing is owed by a deadline unless max_lateness_ms is stated: a
//   node answers only what it applied, and the node holding a waiter's
//   connection may apply late.
// DESIGN.md beside this file gives the algorithm and the argument that it
// never reports a violation that has an explanation.
#pragma once

#include "check/frontier.hpp"
#include "check/key_input.hpp"

namespace lockstep::history {

KeyVerdict check_cluster_key(const KeyInput& input, const KeyOracles& oracles, const KeyCheckOptions& options = {});

}  // namespace lockstep::history
