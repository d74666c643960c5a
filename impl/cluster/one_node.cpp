#include "impl/cluster/one_node.hpp"

#include "impl/assert.hpp"

namespace lockstep::cluster {

namespace {

NodeConfig one_node_config(Limits limits, Token first_token, ClusterBug bug) {
  NodeConfig config;
  config.limits = limits;
  config.first_token = first_token;
  config.bug = bug;
  config.test_clock = true;
  return config;
}

}  // namespace

OneNodeCluster::OneNodeCluster(Limits limits, Token first_token, ClusterBug bug)
    : node_(one_node_config(limits, first_token, bug)) {
  // The only node leads from the start, with an empty table.
  NodeOutputs outputs;
  node_.on_leadership_gained(Epoch{1}, TimeMs{0}, outputs);
  LOCKSTEP_ASSERT(outputs.proposals.empty() && outputs.to_clients.empty());
}

LineOutcome OneNodeCluster::on_line(ConnectionId connection, std::string_view line, TimeMs now, Outputs& out) {
  advance(now, out);
  NodeOutputs outputs;
  node_.on_line(connection, line, now, outputs);
  return commit_all(outputs, out, connection) ? LineOutcome::close_connection : LineOutcome::keep_open;
}

void OneNodeCluster::on_close(ConnectionId connection, TimeMs now, Outputs& out) {
  advance(now, out);
  NodeOutputs outputs;
  node_.on_close(connection, now, outputs);
  commit_all(outputs, out);
}

void OneNodeCluster::advance(TimeMs now, Outputs& out) {
  NodeOutputs outputs;
  node_.advance_test_clock(now, outputs);
  commit_all(outputs, out);
}

bool OneNodeCluster::commit_all(NodeOutputs& outputs, Outputs& out, ConnectionId watched) {
  bool closed = false;
  while (true) {
    for (auto& message : outputs.to_clients) {
      if (message.kind == ToClient::Kind::response) out.push_back({message.connection, std::move(message.response)});
      if (message.kind == ToClient::Kind::close && message.connection == watched) closed = true;
    }
    if (outputs.proposals.empty()) return closed;
    // Committed at once, in the order proposed: each is the next entry.
    auto proposals = std::move(outputs.proposals);
    outputs = NodeOutputs{};
    for (const auto& proposal : proposals) node_.on_committed(++index_, proposal.bytes, outputs);
  }
}

void OneNodeCluster::check_invariants() const {
  node_.check_invariants();
  // Committed at once: nothing stays in flight between calls.
  LOCKSTEP_ASSERT(node_.in_flight() == 0);
  LOCKSTEP_ASSERT(node_.heap().in_flight() == 0);
}

}  // namespace lockstep::cluster
