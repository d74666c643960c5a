// The leader's deadline heap (docs/protocol.md, "Cluster mode"): every holder's
// expiry and every waiter's deadline of the applied state, smallest first,
// so the leader knows when to propose Expire and Timeout commands.
//
// It is leader-only and not replicated: a node rebuilds it from its applied
// LockMachine when it becomes leader (become_leader) and forgets it when it
// steps down, so what the heap holds is always derived from committed state.
// While leading, the driver feeds it what each apply created
// (note_applied) and asks it at each tick what is due (due).
//
// Entries are checked lazily: a deadline whose waiter was granted or whose
// holder released stays in the heap until its instant, when due() finds it
// stale against the applied state and drops it. A waiter's instant may move
// (LockMachine::due_at: a leader change detaches it, due at the end of its
// grace; a retry attaches it again): the table reports each new instant, and
// an entry for an instant the waiter no longer has is stale. So the heap never holds
// more than twice the live deadlines plus a constant: past that, note_applied
// rebuilds it from the machine (amortized O(1) per apply).
//
// In flight: a deadline due() yielded is not yielded again while its command
// is proposed but not applied; note_applied's `settled` ends that. A leader's
// own proposal is not lost while it leads (Raft truncates a leader's log only
// under a higher term; etcd either commits a fenced write or reports it
// failed), so nothing is proposed again on a timer: that would only append
// copies behind the first, and under load the copies are what keeps the log
// long (a swarm found a cluster that never caught up). A proposal the driver
// reports lost (refused, fenced, fate unknown) is handed back with lost() and
// yielded again at the next due(); leadership lost drops everything. Applying
// a copy twice is harmless anyway: it checks the token or the waiter.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "impl/cluster/bugs.hpp"
#include "impl/cluster/commands.hpp"
#include "impl/cluster/lock_machine.hpp"
#include "impl/units.hpp"

namespace lockstep::cluster {

struct DeadlineConfig {
  ClusterBug bug = ClusterBug::none;
};

class DeadlineHeap {
 public:
  explicit DeadlineHeap(DeadlineConfig config = {}) : config_(config) {}

  // This node became leader: the heap is rebuilt from the applied state and
  // nothing is in flight.
  void become_leader(const LockMachine& machine);
  // This node is no longer leader: it forgets every deadline.
  void step_down();
  bool leading() const { return leading_; }

  // What one or more applies produced (LockMachine::Applied). Ignored while
  // not leading: become_leader rebuilds from the state instead.
  void note_applied(const Applied& applied, const LockMachine& machine);

  // The commands to propose at `now`, stamped `now`: for every deadline at or
  // before `now` still valid in `machine` and not in flight, ordered by
  // instant, then Timeouts before Expires, Timeouts in queueing order and
  // Expires in token order. Each is then in flight.
  std::vector<Command> due(TimeMs now, const LockMachine& machine);

  // The command due() yielded for `target` will not be applied (the driver
  // could not propose it, or its fate is unknown): yield it again.
  void lost(const DeadlineTarget& target);

  // The earliest instant at which due() may yield something (it may find
  // only stale entries then).
  std::optional<TimeMs> next_due() const;

  std::size_t size() const { return heap_.size(); }
  // The heap holds `deadline` or has its command in flight: what a checker
  // outside the heap asks of every deadline of the applied state.
  bool tracks(const Deadline& deadline) const {
    return heap_.contains(deadline) || in_flight_.contains(deadline.target);
  }
  std::size_t in_flight() const { return in_flight_.size(); }

  // Leading: every deadline of the applied state is in the heap or in
  // flight. Throws InvariantViolation.
  void check_invariants(const LockMachine& machine) const;

 private:
  static bool still_valid(const Deadline& deadline, const LockMachine& machine);
  void rebuild(const LockMachine& machine);
  bool bug(ClusterBug which) const { return config_.bug == which; }

  DeadlineConfig config_;
  bool leading_ = false;
  // An ordered set as the min-heap: O(log n) like a binary heap, and the
  // same deadline noted twice is kept once.
  std::set<Deadline> heap_;
  // Yielded, not yet applied: target -> its instant.
  std::map<DeadlineTarget, TimeMs> in_flight_;
};

}  // namespace lockstep::cluster
