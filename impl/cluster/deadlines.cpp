#include "impl/cluster/deadlines.hpp"

#include "impl/assert.hpp"

namespace lockstep::cluster {

namespace {

// The heap is rebuilt once it holds more than this many entries beyond
// twice the live deadlines.
constexpr std::size_t stale_slack = 64;

}  // namespace

void DeadlineHeap::become_leader(const LockMachine& machine) {
  // The injected bug keeps whatever the heap held when this node last led
  // (and step_down did not clear), missing every deadline applied since.
  if (bug(ClusterBug::heap_not_rebuilt)) {
    leading_ = true;
    return;
  }
  leading_ = true;
  in_flight_.clear();
  rebuild(machine);
}

void DeadlineHeap::step_down() {
  leading_ = false;
  if (bug(ClusterBug::heap_not_rebuilt)) return;
  heap_.clear();
  in_flight_.clear();
}

void DeadlineHeap::rebuild(const LockMachine& machine) {
  heap_.clear();
  for (auto& deadline : machine.deadlines()) {
    if (!in_flight_.contains(deadline.target)) heap_.insert(std::move(deadline));
  }
}

void DeadlineHeap::note_applied(const Applied& applied, const LockMachine& machine) {
  if (!leading_) return;
  for (const auto& target : applied.settled) {
    in_flight_.erase(target);
    // A Timeout that found its waiter attached again by a retry (no longer
    // due) leaves it queued: its deadline goes back into the heap.
    if (target.kind != DeadlineTarget::Kind::timeout) continue;
    if (const auto due = machine.waiter_due(target.key, WaiterId{target.id})) heap_.insert(Deadline{*due, target});
  }
  for (const auto& deadline : applied.deadlines) heap_.insert(deadline);
  const std::size_t live = machine.keys().size() + machine.waiter_count();
  if (heap_.size() > 2 * live + stale_slack && !bug(ClusterBug::heap_not_rebuilt)) rebuild(machine);
}

bool DeadlineHeap::still_valid(const Deadline& deadline, const LockMachine& machine) {
  const auto& target = deadline.target;
  // A waiter is due at one instant of the table at a time: an entry for
  // another (before a leader change detached it, or before a retry
  // attached it again) is stale.
  if (target.kind == DeadlineTarget::Kind::timeout) return machine.waiter_due(target.key, WaiterId{target.id}) == deadline.at;
  return machine.holds(target.key, Token{target.id});
}

std::vector<Command> DeadlineHeap::due(TimeMs now, const LockMachine& machine) {
  std::vector<Command> commands;
  if (!leading_) return commands;
  // The set is ordered by instant, then Timeouts before Expires, Timeouts by
  // waiter id and Expires by token: the order the commands must go in.
  while (!heap_.empty() && heap_.begin()->at <= now) {
    Deadline deadline = std::move(heap_.extract(heap_.begin()).value());
    if (!still_valid(deadline, machine)) continue;
    if (in_flight_.contains(deadline.target)) continue;
    in_flight_.emplace(deadline.target, deadline.at);
    commands.push_back(command_for(deadline.target, now));
  }
  return commands;
}

void DeadlineHeap::lost(const DeadlineTarget& target) {
  const auto found = in_flight_.find(target);
  if (!leading_ || found == in_flight_.end()) return;
  heap_.insert(Deadline{found->second, target});
  in_flight_.erase(found);
}

std::optional<TimeMs> DeadlineHeap::next_due() const {
  if (heap_.empty()) return std::nullopt;
  return heap_.begin()->at;
}

void DeadlineHeap::check_invariants(const LockMachine& machine) const {
  if (!leading_ || bug(ClusterBug::heap_not_rebuilt)) return;
  for (const auto& deadline : machine.deadlines()) {
    LOCKSTEP_ASSERT(heap_.contains(deadline) || in_flight_.contains(deadline.target));
  }
  // Bounded: note_applied rebuilds past this.
  LOCKSTEP_ASSERT(heap_.size() <= 2 * (machine.keys().size() + machine.waiter_count()) + stale_slack);
}

}  // namespace lockstep::cluster
