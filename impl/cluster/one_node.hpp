// A one-node cluster that commits each command at the instant it is
// proposed (CONTRACT.md, "Cluster semantics in conformance vectors"): the
// cluster's lock table and its leader's deadline heap, driven through the
// same calls as the simple-mode engine (on_line, on_close, advance,
// next_due), so that the vector runner replays `config mode=cluster` vectors
// against the code that runs in a real cluster, without Raft in between.
//
// Order within one instant: every call first fires what is due at instants
// up to `now`, instant by instant: at each, the due Timeouts, then the due
// Expires (what the heap yields, stamped with that instant); then it applies
// its own input. There is no sweep.
//
// Each connection is one client of the session table: its requests carry
// that client's id and an increasing sequence number, so none is ever taken
// for a retry. Malformed lines are answered as the engine answers them, and
// never reach the log.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>

#include "impl/cluster/deadlines.hpp"
#include "impl/cluster/lock_machine.hpp"
#include "impl/limits.hpp"
#include "impl/protocol.hpp"
#include "impl/units.hpp"

namespace lockstep::cluster {

class OneNodeCluster {
 public:
  // Throws std::invalid_argument when the limits are not valid.
  explicit OneNodeCluster(Limits limits, Token first_token = Token{1});

  LineOutcome on_line(ConnectionId connection, std::string_view line, TimeMs now, Outputs& out);
  // The connection closed: a Close command drops its waiters silently.
  void on_close(ConnectionId connection, TimeMs now, Outputs& out);
  // Commits what is due at instants up to `now`.
  void advance(TimeMs now, Outputs& out);
  // The next instant the heap may yield a command at.
  std::optional<TimeMs> next_due() const { return heap_.next_due(); }

  const LockMachine& machine() const { return machine_; }
  const DeadlineHeap& heap() const { return heap_; }
  // Both invariant checks; throws InvariantViolation.
  void check_invariants() const;

 private:
  // Commits one command: applies it at the next log index and feeds the heap.
  void commit(const Command& command, Outputs& out);
  Session next_session(ConnectionId connection);

  LockMachine machine_;
  DeadlineHeap heap_;
  raft::Index index_ = 0;
  TimeMs now_{0};
  std::map<ConnectionId, Session> sessions_;  // each connection's client and its last sequence number
  std::uint64_t last_client_ = 0;
};

}  // namespace lockstep::cluster
