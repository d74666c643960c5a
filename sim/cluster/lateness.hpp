// How late a cluster run's Expires, Timeouts and caused answers really
// were, in the black-box checker's own terms (check/DESIGN.md,
// "Lateness"), so that the run's history can state it as its
// `max_lateness_ms` and the checker is held to what happened rather than
// to whatever lateness an explanation might need.
//
// The simulator knows one explanation the checker must accept: each log
// entry taking effect at the instant its leader proposed it (global time:
// after its request was sent, no later than any node answered from it, in
// log order; the stamp the leader put in it lies within the clock
// allowance of that instant, which is what the checker's rules allow for:
// docs/protocol.md, "Black box against a cluster"). For that explanation
// this meter takes, on the global clock, with A the clock allowance 2·S,
// every step the checker counts as late:
//   - a grant's end (its Expire, or a Release that found it still held),
//     or the end of the run if it never ended, past its grant's instant +
//     lease + A;
//   - a waiter's Timeout (or the `T` a hand-off gave it, its deadline come)
//     past its queueing instant + wait + A;
//   - the first hearing of a caused answer, on any connection of its
//     request (a retry's replay included), past its cause's on-time instant
//     + 1 ms + the tolerance: a hand-off's grant caused by an Expire is on
//     time until the ended grant's instant + lease + A, one caused by a
//     Release until the Release's own instant, a waiter's `T` until its
//     queueing instant + wait + A;
//   - a caused answer never heard by a request sent once, whose connection
//     the client watched, and the `T` of a waiter still queued at the end
//     that its deadline made owed: the end of that watch past the on-time
//     instant + the tolerance (with a maximum, the checker owes it).
// So the least lateness the checker finds is no more than worst_ms(). Like
// every observer it changes nothing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "impl/cluster/commands.hpp"
#include "impl/cluster/lock_machine.hpp"
#include "impl/protocol.hpp"
#include "impl/units.hpp"

namespace lockstep::sim {

class ClusterLateness {
 public:
  ClusterLateness(DurationMs clock_allowance_ms, DurationMs tolerance_ms)
      : allowance_ms_(clock_allowance_ms.value), tolerance_ms_(tolerance_ms.value) {}

  // A client sent an attempt of a request (global time).
  void sent(const cluster::Session& session, TimeMs at);
  // The client stopped watching an attempt's connection (answered, given
  // up, or closed by the node).
  void attempt_ended(const cluster::Session& session, TimeMs at);
  // Around the first application anywhere of a command, whose leader
  // proposed it at `proposed` (global time): its instant.
  void before_first_apply(const cluster::Command& command, const cluster::LockMachine& machine);
  void after_first_apply(const cluster::Command& command, const cluster::LockMachine& machine,
                         const cluster::Applied& applied, TimeMs proposed);
  // A client heard `response` (global time).
  void received(const Response& response, TimeMs at);
  // The end of the run: what never ended counts to here.
  void finish(TimeMs end);

  // The worst lateness measured (0 when everything was on time), and what
  // it was.
  std::int64_t worst_ms() const { return worst_ms_; }
  const std::string& worst_what() const { return worst_what_; }

 private:
  struct Grant {
    std::int64_t at = 0;     // its instant
    std::int64_t lease = 0;
  };
  struct Caused {
    std::int64_t on_time = 0;  // the cause's on-time instant
    cluster::Session session;
    bool heard = false;
  };
  struct Waiting {
    std::int64_t due = 0;  // its queueing instant + wait + A
    cluster::Session session;
  };
  struct Attempts {
    std::int64_t first_sent = 0;
    std::uint32_t count = 0;
    std::optional<std::int64_t> first_ended;
  };

  void note(std::int64_t amount, std::string what);
  std::int64_t grant_due(const Grant& g) const { return g.at + g.lease + allowance_ms_; }
  // An answer owed to a request sent once is late by the client's watch of
  // its connection past `on_time` and the tolerance.
  void owed(const cluster::Session& session, std::int64_t on_time, std::int64_t end, const std::string& what);

  std::int64_t allowance_ms_, tolerance_ms_;
  std::int64_t worst_ms_ = 0;
  std::string worst_what_;
  std::map<cluster::Session, Attempts> attempts_;
  std::map<std::pair<std::string, std::uint64_t>, Grant> grants_;  // (key, token): tokens are per key in some bugs
  // By owner (every request's owner is its own in the simulator): its
  // caused grant, its caused `T`, and the waiters queued.
  std::map<std::string, Caused> caused_, caused_timeouts_;
  std::map<std::string, Waiting> waiting_;
  // The key's holder before the command being applied.
  std::optional<std::uint64_t> holder_before_;
};

}  // namespace lockstep::sim
