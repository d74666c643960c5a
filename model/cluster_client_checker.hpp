// Judges a lock-service cluster from its clients' side, in real time, from
// what each client sent and received (docs/protocol.md, "Black box
// against a cluster" and "Properties"). It is the
// real-time sibling of client_checker.hpp, which needs a driver that steps
// the service and knows when each request is handled; here only the clients'
// clocks are known: when a request was first sent, and when (if ever) its
// answer arrived. A request answered after retries on other nodes is one
// operation (its session made the cluster apply it at most once); one never
// answered is indeterminate: it may have taken effect at any time after it
// was sent, or never.
//
// Each rule asks for what no correct cluster can produce, whatever the
// network and the nodes did in between:
// - tokens: no token granted twice; and a grant answered before another
//   acquire was sent has the smaller token (tokens increase with the log);
// - mutual exclusion: for two grants X and Y of one key, token(X) < token(Y),
//   Y's holder learns of its grant no earlier than X ended as X's holder
//   counts it: the first release of X's token sent, or X's first send plus
//   its lease (the holder cannot know when its grant was applied, so it
//   counts from its send), less `allowance_ms`: the cluster's clock
//   allowance 2·S plus the rounding of the clocks' milliseconds;
// - no lost grant: a release of a token answered `N` before the grant's
//   lease could have ended (and with no other release of it sent before);
// - nothing early: an acquire that waits, answered `T` on its first attempt
//   before its wait could have ended (a retry of a waiter that left with its
//   connection is rightly answered `T` at once);
// - nothing else: every line that answered no request, and every `E`, is a
//   violation (the workloads that use this checker send valid requests);
// - no key stuck (with `max_lateness_ms`): a try-lock refused `T` although no
//   grant of its key could still hold it, every one released (its `R`
//   arrived before the try-lock was sent) or past its lease by more than
//   `max_lateness_ms` (counted from when its `A` arrived, the latest its
//   lease can have started), and no acquire of the key left indeterminate.
//   A cluster's Expires may be late while it has no leader, so this is a
//   bound stated by the tester, not a rule of the contract.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "impl/protocol.hpp"
#include "impl/units.hpp"

namespace lockstep {

struct ClusterOperation {
  std::string client;  // for messages
  std::uint64_t sequence = 0;
  bool acquire = true;
  std::string key;
  std::string owner;
  DurationMs lease_ms{0};
  DurationMs wait_ms{0};
  Token token;  // a release: the token it releases
  std::int64_t sent_us = 0;
  std::optional<std::int64_t> answered_us;  // nothing: indeterminate
  std::optional<Response> response;         // with answered_us
  std::uint32_t attempts = 1;
};

struct ClusterCheckOptions {
  DurationMs allowance_ms{0};
  DurationMs max_lateness_ms{0};  // 0: keys stuck are not looked for
  // Violations reported at most (the first ones found); the count is exact.
  std::size_t report_max = 20;
};

struct ClusterCheckReport {
  std::uint64_t violations = 0;
  std::vector<std::string> messages;
  std::uint64_t grants = 0, releases = 0, indeterminate = 0;
};

// `unexpected`: lines the clients received that answered no request.
ClusterCheckReport check_cluster_history(std::span<const ClusterOperation> operations,
                                         std::span<const std::string> unexpected, const ClusterCheckOptions& options);

}  // namespace lockstep
