// The lock service's node (impl/cluster/node.hpp) as the state machine our
// Raft drives in the simulator: each committed entry goes to the node
// (a no-op as an empty entry), snapshots are the node's, and whatever the
// node outputs while applying waits in `outputs` for the simulator to take
// right after the apply (sim/cluster/workload.cpp). Nothing else: the node is
// the logic, this is the plug.
#pragma once

#include <string>

#include "impl/assert.hpp"
#include "impl/cluster/node.hpp"
#include "impl/raft/state_machine.hpp"
#include "sim/raft/cluster.hpp"

namespace lockstep::sim {

class NodeReplica final : public raft::StateMachine {
 public:
  explicit NodeReplica(cluster::NodeConfig config) : node(std::move(config)) {}

  void apply(const raft::Entry& entry) override {
    node.on_committed(entry.index, entry.kind == raft::EntryKind::noop ? std::string_view{} : entry.data, outputs);
  }
  // The node can snapshot only its current state; the simulator compacts
  // with the snapshots the node offers instead (RaftClusterOf::compact_with).
  std::string snapshot_through(raft::Index index) const override {
    LOCKSTEP_ASSERT(index == node.applied());
    return node.snapshot().bytes;
  }
  void restore(const raft::Snapshot& snapshot) override {
    node.restore(cluster::TableSnapshot{snapshot.index, snapshot.data}, outputs);
  }

  cluster::Node node;
  cluster::NodeOutputs outputs;
};

using LockRaftCluster = RaftClusterOf<NodeReplica>;
extern template class RaftClusterOf<NodeReplica>;

}  // namespace lockstep::sim
