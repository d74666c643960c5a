// The definitions of RaftClusterOf's members (sim/raft/cluster.hpp), for the
// files that instantiate it with a state machine: sim/raft/cluster.cpp with
// the append-only register, sim/cluster/replica.cpp with the lock service's
// node. Everyone else includes only the header.
#pragma once

#include "impl/assert.hpp"
#include "sim/raft/cluster.hpp"

namespace lockstep::sim {

template <class Machine>
RaftClusterOf<Machine>::RaftClusterOf(std::size_t nodes, raft::RaftConfig base, std::uint64_t seed,
                                      std::function<Machine()> make_machine)
    : base_(std::move(base)), seed_(seed), make_machine_(std::move(make_machine)), checker_(nodes) {
  slots_.reserve(nodes);
  for (std::size_t i = 0; i < nodes; ++i) slots_.push_back(Slot{std::nullopt, make_machine_(), RaftStorage{}, 0, false, 0});
  LOCKSTEP_ASSERT(nodes >= 1);
  base_.peers.clear();
  for (raft::NodeId id = 1; id <= nodes; ++id) base_.peers.push_back(id);
}

template <class Machine>
raft::RaftConfig RaftClusterOf<Machine>::config_for(raft::NodeId id) const {
  auto config = base_;
  config.id = id;
  return config;
}

template <class Machine>
std::vector<raft::Message> RaftClusterOf<Machine>::handle(raft::NodeId id, raft::Ready ready) {
  auto& s = slot(id);
  s.storage.write(ready);
  if (s.crash_before_sync && ready.must_persist()) {
    ++torn_writes_;
    crash(id);  // the unsynced writes are lost, the messages never leave
    return {};
  }
  const auto before = s.storage.durable().hard_state;
  s.storage.sync();
  checker_.on_durable(id, before, s.storage.durable().hard_state);
  checker_.on_entries(*s.node, ready.entries);
  if (s.storage.unsynced() && !ready.messages.empty()) checker_.on_send_unsynced(id);
  for (const auto& message : ready.messages) checker_.on_send(s.storage.durable(), message);
  if (s.node->role() == raft::Role::leader && s.node->term() > s.led) {
    s.led = s.node->term();
    if (on_leader) on_leader(id, *s.node);
  }
  if (ready.restore_snapshot) {
    s.machine.restore(*ready.snapshot);
    if (on_restore) on_restore(id, s.machine);
  }
  for (const auto& entry : ready.committed) {
    checker_.on_applied(*s.node, entry);
    if (on_before_apply) on_before_apply(id, entry, s.machine);
    s.machine.apply(entry);
    if (on_apply) on_apply(id, entry, s.machine);
  }
  return std::move(ready.messages);
}

template <class Machine>
std::vector<raft::Message> RaftClusterOf<Machine>::deliver(const raft::Message& message, TimeMs now) {
  auto& s = slot(message.to);
  if (!s.node) return {};
  return handle(message.to, s.node->step(message, now));
}

template <class Machine>
std::vector<raft::Message> RaftClusterOf<Machine>::tick(raft::NodeId id, TimeMs now) {
  auto& s = slot(id);
  if (!s.node) return {};
  return handle(id, s.node->tick(now));
}

template <class Machine>
std::vector<raft::Message> RaftClusterOf<Machine>::campaign(raft::NodeId id, TimeMs now) {
  auto& s = slot(id);
  if (!s.node) return {};
  return handle(id, s.node->campaign(now));
}

template <class Machine>
RaftProposeOutcome RaftClusterOf<Machine>::propose(raft::NodeId id, std::string data, TimeMs now) {
  auto& s = slot(id);
  RaftProposeOutcome out;
  if (!s.node) return out;
  // The hook sees the bytes; keep them only when it is set.
  const std::string data_copy = on_propose ? data : std::string();
  auto result = s.node->propose(std::move(data), now);
  out.kind = result.kind;
  out.index = result.index;
  out.term = result.term;
  out.leader_hint = result.leader_hint;
  if (on_propose) on_propose(id, data_copy, out, now);
  out.messages = handle(id, std::move(result.ready));
  return out;
}

template <class Machine>
std::vector<raft::Message> RaftClusterOf<Machine>::compact(raft::NodeId id, raft::Index index) {
  auto& s = slot(id);
  if (!s.node) return {};
  index = std::min({index, s.node->applied(), s.node->commit()});
  if (index <= s.node->snapshot().index) return {};
  auto data = s.machine.snapshot_through(index);
  return handle(id, s.node->compact(index, std::move(data)));
}

template <class Machine>
std::vector<raft::Message> RaftClusterOf<Machine>::compact_with(raft::NodeId id, raft::Index index, std::string data) {
  auto& s = slot(id);
  if (!s.node || index <= s.node->snapshot().index || index > std::min(s.node->applied(), s.node->commit())) return {};
  return handle(id, s.node->compact(index, std::move(data)));
}

template <class Machine>
void RaftClusterOf<Machine>::crash(raft::NodeId id) {
  auto& s = slot(id);
  s.storage.crash();
  s.node.reset();
  s.crash_before_sync = false;
}

template <class Machine>
void RaftClusterOf<Machine>::restart(raft::NodeId id, TimeMs now) {
  auto& s = slot(id);
  LOCKSTEP_ASSERT(!s.node);
  ++s.starts;
  const auto& durable = s.storage.durable();
  s.node.emplace(config_for(id), seed_ * 0x9e3779b97f4a7c15ULL + id * 1000003ULL + s.starts, durable, now);
  s.machine = make_machine_();
  if (durable.snapshot.index > 0) {
    s.machine.restore(durable.snapshot);
    if (on_restore) on_restore(id, s.machine);
  }
  checker_.on_restart(id, s.node->commit());
}

template <class Machine>
void RaftClusterOf<Machine>::check(TimeMs at) {
  std::vector<const raft::RaftNode*> live;
  for (const auto& s : slots_) {
    if (s.node) live.push_back(&*s.node);
  }
  checker_.after_event(live, at);
}

}  // namespace lockstep::sim
