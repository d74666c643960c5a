// The nodes' side of the lock workload (workload.hpp): each node told what
// Raft says of its leadership, its outputs carried out in the order it asks
// (proposals to Raft, fenced on their term; responses and closes to the
// clients, some lost with their connection), and the client lines it reads.
#include "sim/cluster/workload.hpp"

#include "impl/assert.hpp"

namespace lockstep::sim {

// Tells the node what Raft says of its leadership: gained with the term
// as the epoch, lost, and who leads (for its redirects).
void LockWorkload::sync_leadership(Harness& h, NodeId id) {
  auto& cluster = h.cluster();
  if (!cluster.alive(id)) return;
  const auto& raft = cluster.node(id);
  auto& node = cluster.machine(id).node;
  const bool leads = raft.role() == raft::Role::leader;
  const NodeId leader = leads ? id : raft.leader();
  // Called after every event for every node: most calls change nothing.
  if (leader == known_leader_[id] && leads == node.leading() &&
      (!leads || node.epoch() == cluster::Epoch{raft.term()})) {
    return;
  }
  if (leader != known_leader_[id]) {
    known_leader_[id] = leader;
    node.on_leader_address(leader != raft::node_none ? node_address(leader) : std::string());
  }
  cluster::NodeOutputs out;
  if (leads && (!node.leading() || node.epoch() != cluster::Epoch{raft.term()})) {
    node.on_leadership_gained(cluster::Epoch{raft.term()}, h.local(id), out);
  } else if (!leads && node.leading()) {
    node.on_leadership_lost(out);
  }
  dispatch(h, id, std::move(out));
}

// What a node output, in the order the node asks: proposals to Raft, then
// lines and closes to clients, then compaction.
void LockWorkload::dispatch(Harness& h, NodeId id, cluster::NodeOutputs out) {
  if (out.proposals.empty() && out.to_clients.empty() && !out.compaction) return;
  auto& cluster = h.cluster();
  if (!cluster.alive(id)) return;
  cluster::NodeOutputs failed;
  for (auto& proposal : out.proposals) {
    if (propose(h, id, std::move(proposal.bytes), proposal.epoch)) continue;
    if (!cluster.alive(id)) return;  // crashed while writing: its outputs die with it
    cluster.machine(id).node.on_proposal_failed(proposal.id, failed);
  }
  if (!cluster.alive(id)) return;
  for (auto& message : out.to_clients) {
    if (message.kind == cluster::ToClient::Kind::clock_marker) continue;  // no test clock here
    if (trace_ != nullptr && message.kind == cluster::ToClient::Kind::response) {
      trace_->reply(connection(message.connection), message.response, h.now());  // sent, even if then lost
    }
    ClientMessage m{connection(message.connection), ClientMessage::Closed{}};
    LOCKSTEP_ASSERT(m.connection.node == id);
    if (message.kind != cluster::ToClient::Kind::close) {
      if (h.workload_prng().chance(p_.response_loss) && !h.in_liveness()) continue;  // the connection broke
      m.what = ClientMessage::Reply{std::move(message.response)};
    }
    to_client(h, std::move(m));
  }
  if (out.compaction) h.route(cluster.compact_with(id, out.compaction->index, std::move(out.compaction->bytes)));
  dispatch(h, id, std::move(failed));
}

// Raft takes a proposal only from the leader of the term it was made in:
// a deposed leader's proposal is refused here, as etcd refuses a write
// fenced on an old election revision.
bool LockWorkload::propose(Harness& h, NodeId id, std::string bytes, cluster::Epoch epoch) {
  auto& cluster = h.cluster();
  if (!cluster.alive(id)) return false;
  const auto& raft = cluster.node(id);
  if (raft.role() != raft::Role::leader || raft.term() != epoch.value) return false;
  auto out = cluster.propose(id, std::move(bytes), h.local(id));
  h.route(std::move(out.messages));
  if (out.kind == raft::ProposeResult::Kind::accepted) {
    proposed_at_[{out.term, out.index}] = h.now();
    ++h.stats().proposed;
    return true;
  }
  if (out.kind == raft::ProposeResult::Kind::too_many_uncommitted) ++h.stats().refused;
  return false;
}

void LockWorkload::at_node(Harness& h, ClientMessage m) {
  const auto* request = std::get_if<ClientMessage::Request>(&m.what);
  LOCKSTEP_ASSERT(request != nullptr);  // clients send nothing else
  auto& cluster = h.cluster();
  const NodeId id = m.connection.node;
  if (!cluster.alive(id)) return;  // the connection never opens
  sync_leadership(h, id);
  if (!cluster.alive(id)) return;
  cluster::NodeOutputs out;
  auto& node = cluster.machine(id).node;
  const auto proposed_before = node.stats().requests_proposed;
  node.on_line(m.connection.id, request->line, h.local(id), out);
  // A leader asks its heap before it proposes a request (and only then:
  // a redirect or a refusal proposes nothing).
  if (trace_ != nullptr && node.stats().requests_proposed > proposed_before) trace_heap_check(h, id, out);
  dispatch(h, id, std::move(out));
}

// What the leader's heap yielded at its clock is among the proposals the
// node is about to hand to Raft, which the trace sees go in.
void LockWorkload::trace_heap_check(Harness& h, NodeId id, const cluster::NodeOutputs& out) {
  const auto& node = h.cluster().machine(id).node;
  trace_->heap_due(id, h.local(id), node.machine(), out.proposals, h.now());
}

void LockWorkload::to_client(Harness& h, ClientMessage m) {
  const auto delay = latency(h);
  const auto slot = pool_.put(std::move(m));
  h.push(h.now() + delay, work_event::ToClient{slot});
}

}  // namespace lockstep::sim
