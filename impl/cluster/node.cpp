#include "impl/cluster/node.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "impl/assert.hpp"

namespace lockstep::cluster {

namespace {

// Bounds on the node's own queues: generous, but not unlimited.
constexpr std::uint64_t in_flight_limit = std::uint64_t{1} << 24;
constexpr std::uint64_t held_lines_limit = std::uint64_t{1} << 24;

std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

bool is_digits(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::optional<std::string> validate(const NodeConfig& config) {
  if (auto error = lockstep::validate(config.limits)) return error;
  if (auto error = cluster::validate(config.sessions)) return error;
  if (config.first_token.value == 0) return std::string("first_token must be positive");
  if (config.in_flight_max < 1 || config.in_flight_max > in_flight_limit) {
    return fmt::format("in_flight_max must be in 1..{}", in_flight_limit);
  }
  if (config.held_lines_max < 1 || config.held_lines_max > held_lines_limit) {
    return fmt::format("held_lines_max must be in 1..{}", held_lines_limit);
  }
  if (config.waiter_grace_ms.value < 0 || config.waiter_grace_ms > waiter_grace_max) {
    return fmt::format("waiter_grace_ms must be in 0..{}", waiter_grace_max.value);
  }
  return std::nullopt;
}

std::string to_client_line(const ToClient& message) {
  if (message.kind == ToClient::Kind::clock_marker) return fmt::format("C {}", message.marker.value);
  LOCKSTEP_ASSERT(message.kind == ToClient::Kind::response);
  return format_response(message.response);
}

namespace {

MachineConfig machine_config(const NodeConfig& config) {
  if (auto error = validate(config)) throw std::invalid_argument(*error);
  return MachineConfig{config.limits, config.sessions, config.first_token, config.bug, config.waiter_grace_ms};
}

}  // namespace

Node::Node(NodeConfig config)
    : config_(std::move(config)), machine_(machine_config(config_)), heap_(DeadlineConfig{config_.bug}) {}

// ---- client lines ---------------------------------------------------------------

void Node::on_connect(ConnectionId connection, NodeOutputs&) { connections_.try_emplace(connection); }

void Node::on_line(ConnectionId connection, std::string_view line, TimeMs now, NodeOutputs& out) {
  const auto& known = connections_.try_emplace(connection).first->second;
  if (known.ending) return;  // after `X`, lines are discarded
  if (advancing_) {
    // A `C` is in progress: what is read now is handled at its instant,
    // after it, in order.
    if (held_.size() >= config_.held_lines_max) {
      out.to_clients.push_back({connection, ToClient::Kind::response, Response::error("too many lines held"), {}});
      return;
    }
    held_.push_back({connection, std::string(line)});
    return;
  }
  handle_line(connection, line, now, out);
  continue_clock(out);
}

void Node::handle_line(ConnectionId connection, std::string_view line, TimeMs now, NodeOutputs& out) {
  if (config_.test_clock) {
    if (line == "X") {
      end_connection(connection, out);
      return;
    }
    if (line.starts_with("C ")) {
      handle_clock_line(connection, line, out);
      return;
    }
  }
  const Limits& limits = config_.limits;
  auto parsed = parse_session_request(line, limits);
  if (auto* bad = std::get_if<Malformed>(&parsed)) {
    // E, nothing changes; an overlong line then ends the connection.
    out.to_clients.push_back({connection, ToClient::Kind::response, Response::error(bad->reason), {}});
    if (line.size() > limits.max_line_bytes) end_connection(connection, out);
    return;
  }
  handle_request(connection, std::get<SessionRequest>(parsed), now, out);
}

void Node::handle_request(ConnectionId connection, const SessionRequest& parsed, TimeMs now, NodeOutputs& out) {
  const auto answer = [&](Response response) {
    out.to_clients.push_back({connection, ToClient::Kind::response, std::move(response), {}});
  };
  if (!leading_ && config_.bug == ClusterBug::serve_without_leadership && has_led_ && leader_address_.empty()) {
    // The bug: a node that stopped leading and sees no other leader (its
    // consensus is out of reach) still grants a key its applied table shows
    // free, with the token it expects to issue, as if its table were the
    // cluster's.
    if (const auto* a = std::get_if<AcquireRequest>(&parsed.request); a && !machine_.keys().contains(a->key)) {
      answer(Response::granted(machine_.next_token(), a->owner, a->key));
      return;
    }
  }
  if (!leading_) {
    // docs/protocol.md, "Cluster nodes on the wire": a follower applies nothing.
    ++stats_.redirects;
    answer(Response::error(leader_address_.empty() ? "not-leader" : "not-leader " + leader_address_));
    return;
  }
  if (in_flight_total_ >= config_.in_flight_max) {
    answer(Response::error("too many requests in flight"));
    return;
  }
  // What is due by now goes first (docs/protocol.md, "Cluster semantics in
  // conformance vectors": due Timeouts, due Expires, then the requests of
  // the instant): the heap is asked at every request, not only at the next
  // tick. (The test clock proposes what is due instant by instant itself.)
  if (!config_.test_clock) propose_due(now, out);
  const Session session =
      parsed.session ? Session{std::string(parsed.session->client), parsed.session->sequence} : Session{};
  const TimeMs at = stamp(now);
  Command command;
  if (const auto* a = std::get_if<AcquireRequest>(&parsed.request)) {
    command = Acquire{session, connection, std::string(a->key), std::string(a->owner), a->lease_ms,
                      a->wait_ms, at};
    // The answer-before-commit bug grants a key the applied table shows
    // free at once, with the token it expects to issue, as if the entry
    // could not be lost or overtaken before it commits.
    if (config_.bug == ClusterBug::answer_before_commit && !machine_.keys().contains(a->key)) {
      answer(Response::granted(machine_.next_token(), a->owner, a->key));
    }
  } else {
    const auto& r = std::get<ReleaseRequest>(parsed.request);
    command = Release{session, connection, std::string(r.key), r.token, at};
  }
  ++stats_.requests_proposed;
  ++connections_.at(connection).in_flight;
  ++in_flight_total_;
  propose(command, Pending{Pending::Kind::request, connection, {}}, out);
}

void Node::handle_clock_line(ConnectionId connection, std::string_view line, NodeOutputs& out) {
  // As simple mode's test clock (docs/protocol.md, "Exact, with a test clock"):
  // 1 to 19 digits, leading zeros allowed, at most time_max, never back.
  const auto digits = line.substr(2);
  const bool numeric = !digits.empty() && digits.size() <= 19 && is_digits(digits);
  std::uint64_t value = 0;
  for (const char c : numeric ? digits : std::string_view()) value = value * 10 + static_cast<std::uint64_t>(c - '0');
  if (!numeric || value > static_cast<std::uint64_t>(time_max.value) ||
      TimeMs{static_cast<std::int64_t>(value)} < test_now_) {
    out.to_clients.push_back({connection, ToClient::Kind::response,
                              Response::error(numeric ? "C must not move the clock back" : "expected C <now_ms>"), {}});
    return;
  }
  const TimeMs target{static_cast<std::int64_t>(value)};
  advancing_ = ClockAdvance{target, test_now_, true};
  test_now_ = target;
}

void Node::advance_test_clock(TimeMs now, NodeOutputs& out) {
  LOCKSTEP_ASSERT(config_.test_clock);
  if (advancing_) {
    // One already runs: it goes on to the later instant.
    advancing_->target = std::max(advancing_->target, now);
    test_now_ = advancing_->target;
  } else if (now > test_now_) {
    advancing_ = ClockAdvance{now, test_now_, false};
    test_now_ = now;
  }
  continue_clock(out);
}

void Node::continue_clock(NodeOutputs& out) {
  while (true) {
    if (!advancing_) {
      if (held_.empty()) return;
      HeldLine held = std::move(held_.front());
      held_.pop_front();
      const auto found = connections_.find(held.connection);
      if (found == connections_.end() || found->second.ending) continue;  // closed since
      handle_line(held.connection, held.line, test_now_, out);
      continue;
    }
    if (leading_) {
      // Every instant starts from a table that applied everything before
      // it: what an instant's commands create may fall due later on.
      if (!pending_.empty()) return;
      const auto due = heap_.next_due();
      if (due && *due <= advancing_->target) {
        // A deadline is never before the clock that created it.
        const TimeMs instant = std::max(*due, advancing_->floor);
        advancing_->floor = instant;
        propose_due(instant, out);
        continue;  // waits for them, or finds the next instant if all were stale
      }
    }
    // Everything due by the target is applied, and everything read before
    // the `C`: the markers go out, after each connection's responses.
    if (advancing_->markers) {
      for (const auto& [connection, state] : connections_) {
        if (!state.ending) out.to_clients.push_back({connection, ToClient::Kind::clock_marker, {}, advancing_->target});
      }
    }
    advancing_.reset();
  }
}

// ---- connections ----------------------------------------------------------------

void Node::on_close(ConnectionId connection, TimeMs now, NodeOutputs& out) {
  const auto found = connections_.find(connection);
  if (found == connections_.end()) return;  // closed by the node already
  // simple mode point 10: its waiters leave silently; requests still in flight may
  // queue more, so the Close goes after them. A follower can propose
  // nothing: its waiters (from when it led) stay until answered.
  if (leading_ && (found->second.in_flight > 0 || machine_.has_waiters(connection))) {
    ++stats_.closes_proposed;
    propose(Close{connection, stamp(now)}, Pending{Pending::Kind::close, connection, {}}, out);
  }
  connections_.erase(found);
  std::erase_if(held_, [&](const HeldLine& held) { return held.connection == connection; });
  continue_clock(out);
}

void Node::end_connection(ConnectionId connection, NodeOutputs& out) {
  auto& state = connections_.at(connection);
  state.ending = true;
  if (leading_ && (state.in_flight > 0 || machine_.has_waiters(connection))) {
    ++stats_.closes_proposed;
    propose(Close{connection, test_now_}, Pending{Pending::Kind::close, connection, {}}, out);
    return;  // closed when the Close is applied
  }
  close_now(connection, out);
}

void Node::close_now(ConnectionId connection, NodeOutputs& out) {
  out.to_clients.push_back({connection, ToClient::Kind::close, {}, {}});
  connections_.erase(connection);
}

// ---- proposals ------------------------------------------------------------------

void Node::propose(const Command& command, Pending pending, NodeOutputs& out) {
  LOCKSTEP_ASSERT(leading_);
  const std::uint64_t id = next_proposal_++;
  out.proposals.push_back(Proposal{id, epoch_, encode_framed(Origin{epoch_.value, id}, command)});
  pending_.emplace(id, std::move(pending));
}

void Node::propose_due(TimeMs now, NodeOutputs& out) {
  for (auto& command : heap_.due(now, machine_)) {
    if (std::holds_alternative<Expire>(command)) {
      ++stats_.expires_proposed;
    } else {
      ++stats_.timeouts_proposed;
    }
    propose(command, Pending{Pending::Kind::deadline, {}, *deadline_target(command)}, out);
  }
}

void Node::propose_owed_closes(TimeMs now, NodeOutputs& out) {
  const auto owed = std::move(closes_owed_);
  closes_owed_.clear();
  for (const ConnectionId connection : owed) {
    // Proposed even with no waiter now: a request of that connection still
    // in flight may queue one, and the Close goes after it.
    ++stats_.closes_proposed;
    propose(Close{connection, stamp(now)}, Pending{Pending::Kind::close, connection, {}}, out);
  }
}

void Node::on_proposal_failed(std::uint64_t proposal, NodeOutputs& out) {
  const auto found = pending_.find(proposal);
  if (found == pending_.end()) return;  // of an earlier leadership, or reported twice
  const Pending pending = found->second;
  pending_.erase(found);
  ++stats_.proposals_failed;
  switch (pending.kind) {
    case Pending::Kind::request: {
      --in_flight_total_;
      const auto connection = connections_.find(pending.connection);
      if (connection == connections_.end()) break;
      --connection->second.in_flight;
      // Its fate is not this node's to tell (the driver may not know
      // either): the client retries with its session, applied at most once.
      ++stats_.connections_closed_unknown;
      if (machine_.has_waiters(pending.connection) || connection->second.in_flight > 0) {
        closes_owed_.insert(pending.connection);  // its waiters go with it, as with any close
      }
      close_now(pending.connection, out);
      break;
    }
    case Pending::Kind::deadline:
      // Proposed again at the next tick, not now: a driver that cannot
      // propose would otherwise be handed the same proposal forever.
      heap_.lost(pending.target);
      return;
    case Pending::Kind::close: {
      closes_owed_.insert(pending.connection);
      const auto connection = connections_.find(pending.connection);
      if (connection != connections_.end() && connection->second.ending) close_now(pending.connection, out);
      break;
    }
  }
  continue_clock(out);
}

// ---- the committed log --------------------------------------------------------------

void Node::on_committed(LogIndex index, std::string_view bytes, NodeOutputs& out) {
  auto decoded = decode_entry(bytes);
  if (std::holds_alternative<DecodeError>(decoded)) {
    // Only a leader writes entries, so this is a bug or a corrupted log;
    // every replica rejects the same bytes alike, so they still agree.
    machine_.skip_entry(index, true);
    return;
  }
  auto& frames = std::get<std::vector<Framed>>(decoded);
  if (frames.empty()) machine_.skip_entry(index, false);
  for (const auto& frame : frames) {
    if (observer_ != nullptr) observer_->before_command(index, frame.command, machine_);
    const Applied applied = machine_.apply_command(frame.command, index);
    if (observer_ != nullptr) observer_->after_command(index, frame.command, machine_, applied);
    if (leading_) heap_.note_applied(applied, machine_);
    // A node answers the connections it holds; the others' are answered by
    // the node that holds them.
    for (const auto& response : applied.responses) {
      if (connections_.contains(response.connection)) {
        out.to_clients.push_back({response.connection, ToClient::Kind::response, response.response, {}});
      }
    }
    if (leading_ && frame.origin.epoch == epoch_.value) {
      const auto mine = pending_.find(frame.origin.proposal);
      if (mine != pending_.end()) {
        const Pending pending = mine->second;
        pending_.erase(mine);
        settle(pending, out);
      }
    }
  }
  continue_clock(out);
}

void Node::settle(const Pending& pending, NodeOutputs& out) {
  switch (pending.kind) {
    case Pending::Kind::request: {
      --in_flight_total_;
      const auto connection = connections_.find(pending.connection);
      if (connection != connections_.end()) --connection->second.in_flight;
      return;
    }
    case Pending::Kind::deadline:
      return;  // the heap settles it from the Applied
    case Pending::Kind::close: {
      const auto connection = connections_.find(pending.connection);
      if (connection != connections_.end() && connection->second.ending) close_now(pending.connection, out);
      return;
    }
  }
}

// ---- leadership ----------------------------------------------------------------------

void Node::on_leadership_gained(Epoch epoch, TimeMs, NodeOutputs& out) {
  if (leading_ && epoch == epoch_) return;
  if (leading_) lose_leadership(out);
  LOCKSTEP_ASSERT(pending_.empty());
  leading_ = true;
  has_led_ = true;
  epoch_ = epoch;
  // The heap comes from the applied state, never from what this node
  // remembers of an earlier leadership.
  heap_.become_leader(machine_);
  continue_clock(out);
}

void Node::on_leadership_lost(NodeOutputs& out) {
  if (!leading_) return;
  lose_leadership(out);
  continue_clock(out);
}

void Node::lose_leadership(NodeOutputs& out) {
  leading_ = false;
  heap_.step_down();
  // Requests in flight may still commit under the next leader, or never:
  // their connections close instead of guessing (docs/protocol.md, "Cluster
  // nodes on the wire"); their clients retry with their sessions.
  std::set<ConnectionId> unknown;
  for (const auto& [id, pending] : pending_) {
    if (pending.kind != Pending::Kind::deadline && connections_.contains(pending.connection)) {
      unknown.insert(pending.connection);
    }
  }
  pending_.clear();
  in_flight_total_ = 0;
  closes_owed_.clear();
  for (const ConnectionId connection : unknown) {
    ++stats_.connections_closed_unknown;
    close_now(connection, out);
  }
  // A waiter waits on the leader: the next leadership detaches it, and only
  // its client's retry there attaches it again (docs/protocol.md, "Waiters
  // and leader changes"). Its connection here would hear nothing more.
  std::vector<ConnectionId> waiting;
  for (const auto& [connection, state] : connections_) {
    if (machine_.has_waiters(connection)) waiting.push_back(connection);
  }
  for (const ConnectionId connection : waiting) {
    ++stats_.connections_closed_waiting;
    close_now(connection, out);
  }
}

void Node::on_leader_address(std::string address) { leader_address_ = std::move(address); }

// ---- time and compaction ------------------------------------------------------------

void Node::on_tick(TimeMs now, NodeOutputs& out) {
  if (leading_) {
    propose_owed_closes(now, out);
    if (config_.test_clock) {
      continue_clock(out);  // after a failed proposal, the advance goes on
    } else {
      propose_due(now, out);
    }
  }
  decide_compaction(out);
}

void Node::decide_compaction(NodeOutputs& out) {
  if (config_.snapshot_every_entries == 0) return;
  // The table can snapshot only its current state: take one when enough
  // was applied, offer it once log_keep_entries more were, so that slow
  // followers still find those entries in the log.
  const LogIndex applied = machine_.applied();
  if (!stash_ && applied >= last_snapshot_index_ + config_.snapshot_every_entries) stash_ = snapshot();
  if (stash_ && applied >= stash_->index + config_.log_keep_entries) {
    last_snapshot_index_ = stash_->index;
    out.compaction = std::move(*stash_);
    stash_.reset();
    ++stats_.snapshots;
  }
}

std::optional<TimeMs> Node::next_due() const {
  if (!leading_) return std::nullopt;
  return heap_.next_due();
}

// ---- snapshots ------------------------------------------------------------------------

TableSnapshot Node::snapshot() const { return TableSnapshot{machine_.applied(), machine_.snapshot()}; }

void Node::restore(const TableSnapshot& snapshot, NodeOutputs&) {
  machine_.restore(snapshot.index, snapshot.bytes);  // throws, changing nothing, on bad bytes
  stash_.reset();
  last_snapshot_index_ = snapshot.index;
  if (leading_) {
    heap_.step_down();
    heap_.become_leader(machine_);
  }
}

std::uint64_t Node::digest() const { return fnv1a(machine_.snapshot()); }

// ---- invariants ------------------------------------------------------------------------

void Node::check_invariants() const {
  machine_.check_invariants();
  if (leading_) heap_.check_invariants(machine_);
  LOCKSTEP_ASSERT(leading_ || pending_.empty());
  LOCKSTEP_ASSERT(leading_ || closes_owed_.empty());
  std::size_t requests = 0;
  std::map<ConnectionId, std::uint64_t> per_connection;
  for (const auto& [id, pending] : pending_) {
    LOCKSTEP_ASSERT(id < next_proposal_);
    if (pending.kind != Pending::Kind::request) continue;
    ++requests;
    if (connections_.contains(pending.connection)) ++per_connection[pending.connection];
  }
  LOCKSTEP_ASSERT(requests == in_flight_total_);
  LOCKSTEP_ASSERT(in_flight_total_ <= config_.in_flight_max);
  // (Only the connections with requests in flight: a driver may keep many
  // idle ones open.)
  for (const auto& [connection, count] : per_connection) LOCKSTEP_ASSERT(connections_.at(connection).in_flight == count);
  LOCKSTEP_ASSERT(held_.size() <= config_.held_lines_max);
  LOCKSTEP_ASSERT(held_.empty() || advancing_);
  LOCKSTEP_ASSERT(config_.test_clock || !advancing_);
}

}  // namespace lockstep::cluster
