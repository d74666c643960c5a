// The state machine a Raft log drives, as an interface: the node never
// holds one (it only hands committed entries out in Ready::committed), so
// the lock table and the test register are two implementations the driver
// chooses between. Applying must be deterministic and read no clock: any
// time it needs comes in the entry (docs/protocol.md, "Cluster mode").
#pragma once

#include <string>

#include "impl/raft/node.hpp"
#include "impl/raft/types.hpp"

namespace lockstep::raft {

class StateMachine {
 public:
  virtual ~StateMachine() = default;
  // Applies one committed entry; entries arrive in index order, no-ops included.
  virtual void apply(const Entry& entry) = 0;
  // The state's bytes after applying every entry through `index`, which is
  // at most the last applied index and at least the last restored snapshot's.
  virtual std::string snapshot_through(Index index) const = 0;
  // Replaces the state with a snapshot's.
  virtual void restore(const Snapshot& snapshot) = 0;
};

// Step 3 of a Ready: restore a received snapshot, then apply what committed.
inline void apply_ready(StateMachine& machine, const Ready& ready) {
  if (ready.restore_snapshot) machine.restore(*ready.snapshot);
  for (const auto& entry : ready.committed) machine.apply(entry);
}

}  // namespace lockstep::raft
