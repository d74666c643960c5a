// N Raft nodes with their disks and state machines, and the one place where
// a Ready is handled: write, sync, check that nothing is unsynced, send,
// then apply. The random simulator (raft/simulation) and the scenario interpreter
// (raft/scenario) drive it with the append-only register, the cluster
// simulator (cluster/simulation) with the lock service's node; all pass each node's local
// time and route the returned messages themselves.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "impl/assert.hpp"
#include "impl/raft/node.hpp"
#include "impl/raft/register.hpp"
#include "sim/raft/checker.hpp"
#include "sim/raft/storage.hpp"

namespace lockstep::sim {

struct RaftProposeOutcome {
  raft::ProposeResult::Kind kind = raft::ProposeResult::Kind::not_leader;
  raft::Index index = 0;
  raft::Term term = 0;
  raft::NodeId leader_hint = 0;
  std::vector<raft::Message> messages;
};

// Machine is a raft::StateMachine; a restarted node gets a fresh one from
// make_machine, then the durable snapshot.
template <class Machine>
class RaftClusterOf {
 public:
  // Every node starts down, with empty storage: restart() starts one.
  RaftClusterOf(std::size_t nodes, raft::RaftConfig base, std::uint64_t seed,
                std::function<Machine()> make_machine = [] { return Machine{}; });

  std::vector<raft::Message> deliver(const raft::Message& message, TimeMs now);
  std::vector<raft::Message> tick(raft::NodeId id, TimeMs now);
  std::vector<raft::Message> campaign(raft::NodeId id, TimeMs now);
  RaftProposeOutcome propose(raft::NodeId id, std::string data, TimeMs now);
  // Compacts through `index`, capped at what the node has applied.
  std::vector<raft::Message> compact(raft::NodeId id, raft::Index index);
  // Compacts through `index` with a snapshot the driver took earlier (a
  // machine that can snapshot only its current state is compacted this way,
  // behind its applied index).
  std::vector<raft::Message> compact_with(raft::NodeId id, raft::Index index, std::string data);
  void crash(raft::NodeId id);
  void restart(raft::NodeId id, TimeMs now);
  // The node's next Ready that must persist is written but never synced:
  // the node crashes between the two, losing the writes and the sends.
  void crash_before_next_sync(raft::NodeId id) { slot(id).crash_before_sync = true; }
  void cancel_crash_before_sync(raft::NodeId id) { slot(id).crash_before_sync = false; }

  std::size_t size() const { return slots_.size(); }
  bool alive(raft::NodeId id) const { return slot(id).node.has_value(); }
  const raft::RaftNode& node(raft::NodeId id) const { return *slot(id).node; }
  const Machine& machine(raft::NodeId id) const { return slot(id).machine; }
  Machine& machine(raft::NodeId id) { return slot(id).machine; }
  const RaftStorage& storage(raft::NodeId id) const { return slot(id).storage; }
  // Runs the whole-cluster checks; the drivers call it after every event.
  void check(TimeMs at);
  RaftChecker& checker() { return checker_; }
  const RaftChecker& checker() const { return checker_; }
  // Told of every applied entry, once the machine applied it (the client
  // acknowledgements and the lock checkers hang on it), and of every
  // snapshot a node restored.
  std::function<void(raft::NodeId, const raft::Entry&, Machine&)> on_apply;
  std::function<void(raft::NodeId, const raft::Entry&, const Machine&)> on_before_apply;
  std::function<void(raft::NodeId, Machine&)> on_restore;
  // Told of every proposal and its outcome, and of a node that has just
  // become leader of a term (before it applies anything in that term); the
  // cluster trace hangs on them (sim/cluster/trace.hpp).
  std::function<void(raft::NodeId, const std::string& data, const RaftProposeOutcome&, TimeMs now)> on_propose;
  std::function<void(raft::NodeId, const raft::RaftNode&)> on_leader;
  std::uint64_t torn_writes() const { return torn_writes_; }

 private:
  struct Slot {
    std::optional<raft::RaftNode> node;
    Machine machine;
    RaftStorage storage;
    std::uint64_t starts = 0;
    bool crash_before_sync = false;
    raft::Term led = 0;  // the newest term this node led, for on_leader
  };
  // Inline: asked several times for every node after every event.
  Slot& slot(raft::NodeId id) {
    LOCKSTEP_ASSERT(id >= 1 && id <= slots_.size());
    return slots_[id - 1];
  }
  const Slot& slot(raft::NodeId id) const {
    LOCKSTEP_ASSERT(id >= 1 && id <= slots_.size());
    return slots_[id - 1];
  }
  raft::RaftConfig config_for(raft::NodeId id) const;
  std::vector<raft::Message> handle(raft::NodeId id, raft::Ready ready);

  raft::RaftConfig base_;
  std::uint64_t seed_;
  std::function<Machine()> make_machine_;
  std::vector<Slot> slots_;
  RaftChecker checker_;
  std::uint64_t torn_writes_ = 0;
};

using RaftCluster = RaftClusterOf<raft::AppendOnlyRegister>;
extern template class RaftClusterOf<raft::AppendOnlyRegister>;

}  // namespace lockstep::sim
