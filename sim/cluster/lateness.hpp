// How late a cluster run's Expires and caused answers really were, in the black-box checker's own terms (model/history/DESIGN.md,
// "Lateness"), so that the run's history can state it as its
// `max_lateness_ms` and the checker is held to what happened rather than
// to whatever lateness an explanation might need.
//
// The simulator knows one explanation the checker must accept: each log
// entry taking effect at its first application anywhere (global time: it
// is after the entry was proposed, so after its request was sent, and
// before any node answered from it; and it grows with the log index). For
// that explanation this meter takes, on the global clock, with A the clock
// allowance 2·S, each of the checker's bounds replaced by the true instant
// it bounds:
//   - a grant's end (its Expire, or a Release that found it still held),
//     or the end of the run if it never ended, past its grant's instant +
//     lease + A (the checker counts from the latest instant it may place
//     the grant at, no earlier);
//   - the first hearing of a waiter's hand-off grant, on any connection of
//     its request (a retry's replay included), past its cause's on-time
//     instant + 1 ms + the tolerance: an Expire's hand-off is on time until
//     the ended grant's instant + lease + A, a Release's from when the
//     Release was first sent (the checker counts from the earliest instant
//     it may place the Release at, no earlier);
//   - a hand-off grant never heard by a request sent once, whose connection
//     the client watched: the end of that watch past the on-time instant +
//     the tolerance (with a maximum, the checker owes such an answer).
// A waiter's `T`, its Timeout and its hand-off never count: the checker
// has them on time until the latest instant the waiter may have been
// queued (no earlier than its answer's arrival) + wait + A. So the least
// lateness the checker finds is no more than worst_ms(). Like every
// observer it changes nothing.
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
  // Around the first application anywhere of a command (global time).
  void before_first_apply(const cluster::Command& command, const cluster::LockMachine& machine);
  void after_first_apply(const cluster::Command& command, const cluster::LockMachine& machine,
                         const cluster::Applied& applied, TimeMs now);
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
    std::int64_t at = 0;     // its instant (first application)
    std::int64_t lease = 0;
  };
  struct Caused {
    std::int64_t on_time = 0;  // the cause's on-time instant
    cluster::Session session;
    bool heard = false;
  };
  struct Attempts {
    std::int64_t first_sent = 0;
    std::uint32_t count = 0;
    std::optional<std::int64_t> first_ended;
  };

  void note(std::int64_t amount, std::string what);
  std::int64_t grant_due(const Grant& g) const { return g.at + g.lease + allowance_ms_; }

  std::int64_t allowance_ms_, tolerance_ms_;
  std::int64_t worst_ms_ = 0;
  std::string worst_what_;
  std::map<cluster::Session, Attempts> attempts_;
  std::map<std::pair<std::string, std::uint64_t>, Grant> grants_;  // (key, token): tokens are per key in some bugs
  std::map<std::string, Caused> caused_;                           // by owner: its hand-off grant
  // The key's holder before the command being applied.
  std::optional<std::uint64_t> holder_before_;
};

}  // namespace lockstep::sim
