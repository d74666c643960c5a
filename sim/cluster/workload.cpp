// What the Raft harness calls of the lock workload (workload.hpp): each
// node's machine, the start of the run, every apply and tick of a node, its
// crash and restart, the liveness phase's checks at the end, and the
// run's figures; and the trace's watch of the Raft cluster. The nodes'
// and the clients' own sides are nodes.cpp and clients.cpp.
#include "sim/cluster/workload.hpp"

#include "impl/assert.hpp"

namespace lockstep::sim {

LockWorkload::Machine LockWorkload::make_machine() const {
  cluster::NodeConfig config;
  config.limits = p_.limits;
  config.sessions = p_.sessions;
  config.bug = p_.bug;
  config.waiter_grace_ms = p_.waiter_grace_ms;
  config.snapshot_every_entries = p_.raft.compact_threshold;
  config.log_keep_entries = p_.raft.log_keep;
  return Machine(config);
}

void LockWorkload::start(Harness& h) {
  checker_.emplace(h.checker(), p_.limits, p_.sessions, p_.skew_bound_ms);
  for (NodeId id = 1; id <= p_.raft.nodes; ++id) {
    watches_[id].id = id;
    watches_[id].checker = &*checker_;
    watches_[id].lateness = &lateness_;
    watches_[id].timeline = timeline_;
    watches_[id].trace = trace_;
  }
  // A restarted node is a new Node: it is (re)connected to its watch
  // before each entry it applies.
  h.cluster().on_before_apply = [this, &h](NodeId id, const raft::Entry& entry, const Machine&) {
    watches_[id].now = h.now();
    watches_[id].term = entry.term;
    const auto proposal = proposed_at_.find({entry.term, entry.index});
    watches_[id].proposed = proposal != proposed_at_.end() ? proposal->second : h.now();
    h.cluster().machine(id).node.set_observer(&watches_[id]);
  };
  if (trace_ != nullptr) watch_for_trace(h);
  for (std::uint32_t c = 1; c <= p_.clients; ++c) {
    clients_[c].id = c;
    clients_[c].name = fmt::format("{}", c);
    clients_[c].target = static_cast<NodeId>(1 + c % p_.raft.nodes);
    schedule_act(h, c, DurationMs{h.workload_prng().between(0, p_.think_max_ms.value)});
  }
}

void LockWorkload::on_apply(Harness& h, NodeId id, const raft::Entry& entry, Machine& machine) {
  checker_->entry_applied(id, entry.index);
  dispatch(h, id, std::exchange(machine.outputs, {}));
}

void LockWorkload::on_tick(Harness& h, NodeId id) {
  sync_leadership(h, id);
  auto& cluster = h.cluster();
  if (!cluster.alive(id)) return;
  const auto& node = cluster.machine(id).node;
  if (node.leading()) {
    // The checker outside the heap: every deadline of the leader's
    // applied table is in its heap or in flight.
    for (const auto& deadline : node.machine().deadlines()) {
      if (node.heap().tracks(deadline)) continue;
      h.checker().fail("deadline-heap",
                       fmt::format("leader {} (term {}) does not track the {} of `{}` (id {}) at {} ms of its applied "
                                   "state",
                                   id, cluster.node(id).term(),
                                   deadline.target.kind == cluster::DeadlineTarget::Kind::expire ? "expiry" : "wait deadline",
                                   deadline.target.key, deadline.target.id, deadline.at.value));
      break;  // the node goes on as it would: a traced run goes on past its first violation
    }
  }
  cluster::NodeOutputs out;
  cluster.machine(id).node.on_tick(h.local(id), out);
  // A leader asks its heap at every tick.
  if (trace_ != nullptr && node.leading()) trace_heap_check(h, id, out);
  dispatch(h, id, std::move(out));
  // The node's own invariants, on every node now and then: a full check
  // costs as much as hundreds of applies.
  if (cluster.alive(id) && ++ticks_[id] % table_check_ticks == 0) cluster.machine(id).node.check_invariants();
}

void LockWorkload::after_event(Harness& h) {
  auto& cluster = h.cluster();
  for (NodeId id = 1; id <= p_.raft.nodes; ++id) {
    if (!cluster.alive(id)) {
      if (timeline_ != nullptr) timeline_->node_state(id, false, 0, h.now());
      continue;
    }
    sync_leadership(h, id);
    if (timeline_ != nullptr) {
      const auto& node = cluster.node(id);
      timeline_->node_state(id, true, node.role() == raft::Role::leader ? node.term() : 0, h.now());
    }
  }
}

void LockWorkload::on_down(Harness& h, NodeId id) {
  // Its connections died with it; its Node is replaced at the restart.
  add_node_stats(h.cluster().machine(id).node.stats());
  if (trace_ != nullptr) trace_->down(id);
}

void LockWorkload::on_restart(Harness& h, NodeId id) {
  known_leader_[id] = 0;
  if (trace_ != nullptr) trace_->restart(id, h.cluster().machine(id).node.machine(), h.now());
}

void LockWorkload::check_liveness(Harness& h) {
  auto& cluster = h.cluster();
  for (std::uint32_t c = 1; c <= p_.clients; ++c) {
    if (clients_[c].waiting) {
      h.checker().fail("liveness", fmt::format("client {}'s request {} (`{}`) is unanswered at the end", c,
                                               clients_[c].session.sequence, cluster::describe(clients_[c].command)));
      return;
    }
  }
  NodeId leader = 0;
  for (NodeId id = 1; id <= p_.raft.nodes; ++id) {
    if (cluster.alive(id) && cluster.node(id).role() == raft::Role::leader) leader = id;
  }
  if (leader == 0) {
    h.checker().fail("liveness", "no leader at the end");
    return;
  }
  const auto& machine = cluster.machine(leader).node.machine();
  const auto limit = TimeMs{h.local(leader).value - p_.expire_bound_ms.value};
  for (const auto& [key, state] : machine.keys()) {
    if (state.expiry < limit) {
      h.checker().fail("liveness", fmt::format("key `{}` (token {}) is still held at the end, {} ms past its expiry "
                                               "on the leader's clock; the bound is {} ms",
                                               key, state.token.value, (h.local(leader) - state.expiry).value,
                                               p_.expire_bound_ms.value));
      return;
    }
    for (const auto& [id, waiter] : state.queue) {
      // A waiter a leader change detached is due at the end of its grace.
      if (machine.due_at(waiter) < limit) {
        h.checker().fail("liveness", fmt::format("`{}` still waits for key `{}` at the end, past its deadline{}",
                                                 waiter.owner, key,
                                                 waiter.detached_at ? " or the end of its grace after a leader change"
                                                                    : ""));
        return;
      }
    }
  }
  // Every node that applied the whole log holds the model's table.
  for (NodeId id = 1; id <= p_.raft.nodes; ++id) {
    if (cluster.alive(id)) checker_->compare_final(id, cluster.machine(id).node.machine());
  }
}

ClusterLockStats LockWorkload::lock_stats(Harness& h) {
  ClusterLockStats stats = lock_;
  for (NodeId id = 1; id <= p_.raft.nodes; ++id) {
    if (h.cluster().alive(id)) add_node_stats(h.cluster().machine(id).node.stats(), stats);
  }
  stats.expires_applied = checker_->expires_applied();
  stats.timeouts_applied = checker_->timeouts_applied();
  return stats;
}

const ClusterLateness& LockWorkload::lateness(TimeMs end) {
  lateness_.finish(end);
  return lateness_;
}

void LockWorkload::add_node_stats(const cluster::NodeStats& s, ClusterLockStats& into) {
  into.expires_proposed += s.expires_proposed;
  into.timeouts_proposed += s.timeouts_proposed;
  into.snapshots += s.snapshots;
  into.closed_unknown += s.connections_closed_unknown;
  into.closed_waiting += s.connections_closed_waiting;
}

// The trace watches the Raft cluster's proposals, elections and snapshot
// installs; applies come through the nodes' watches, and the rest is
// written where it happens (restarts, heap checks, replies).
void LockWorkload::watch_for_trace(Harness& h) {
  auto& cluster = h.cluster();
  cluster.on_propose = [this, &h](NodeId id, const std::string& data, const RaftProposeOutcome& outcome, TimeMs clock) {
    trace_->propose(id, data, outcome, clock, h.now());
  };
  cluster.on_leader = [this, &h](NodeId id, const raft::RaftNode& node) { trace_->elect(id, node, h.now()); };
  cluster.on_restore = [this, &h](NodeId id, Machine& machine) { trace_->restore(id, machine.node.machine(), h.now()); };
}

}  // namespace lockstep::sim
