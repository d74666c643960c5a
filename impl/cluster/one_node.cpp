#include "impl/cluster/one_node.hpp"

#include <stdexcept>
#include <variant>

#include "impl/assert.hpp"

namespace lockstep::cluster {

OneNodeCluster::OneNodeCluster(Limits limits, Token first_token)
    : machine_(MachineConfig{limits, SessionLimits{}, first_token, ClusterBug::none}) {
  // The only node leads from the start, with an empty table.
  heap_.become_leader(machine_);
}

LineOutcome OneNodeCluster::on_line(ConnectionId connection, std::string_view line, TimeMs now, Outputs& out) {
  advance(now, out);
  const Limits& limits = machine_.config().limits;
  auto parsed = parse_request(line, limits);
  if (auto* bad = std::get_if<Malformed>(&parsed)) {
    // As the engine: E, nothing changes, and an overlong line closes the connection.
    out.push_back({connection, Response::error(bad->reason)});
    return line.size() > limits.max_line_bytes ? LineOutcome::close_connection : LineOutcome::keep_open;
  }
  const Session session = next_session(connection);
  if (const auto* a = std::get_if<AcquireRequest>(&std::get<Request>(parsed))) {
    commit(Acquire{session, connection, std::string(a->key), std::string(a->owner), a->lease_ms, a->wait_ms, now},
           out);
  } else {
    const auto& r = std::get<ReleaseRequest>(std::get<Request>(parsed));
    commit(Release{session, connection, std::string(r.key), r.token, now}, out);
  }
  return LineOutcome::keep_open;
}

void OneNodeCluster::on_close(ConnectionId connection, TimeMs now, Outputs& out) {
  advance(now, out);
  commit(Close{connection, now}, out);
  sessions_.erase(connection);
}

void OneNodeCluster::advance(TimeMs now, Outputs& out) {
  LOCKSTEP_ASSERT(now >= now_);
  // Instant by instant, so that each command is stamped with the instant it
  // fell due at, and Timeouts of an instant come before its Expires.
  for (auto due = heap_.next_due(); due && *due <= now; due = heap_.next_due()) {
    // A deadline is never before the clock that created it: nothing is
    // overdue but what this loop is about to commit.
    const TimeMs instant = std::max(*due, now_);
    now_ = instant;
    for (const Command& command : heap_.due(instant, machine_)) commit(command, out);
  }
  now_ = now;
}

void OneNodeCluster::commit(const Command& command, Outputs& out) {
  Applied applied = machine_.apply_command(command, ++index_);
  heap_.note_applied(applied, machine_);
  for (auto& response : applied.responses) out.push_back(std::move(response));
}

Session OneNodeCluster::next_session(ConnectionId connection) {
  auto found = sessions_.find(connection);
  if (found == sessions_.end()) found = sessions_.emplace(connection, Session{++last_client_, 0}).first;
  ++found->second.sequence;
  return found->second;
}

void OneNodeCluster::check_invariants() const {
  machine_.check_invariants();
  heap_.check_invariants(machine_);
  // Committed at once: nothing stays in flight between calls.
  LOCKSTEP_ASSERT(heap_.in_flight() == 0);
}

}  // namespace lockstep::cluster
