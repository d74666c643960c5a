#include "impl/cluster/lock_machine.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "impl/assert.hpp"
#include "impl/cluster/bytes.hpp"

namespace lockstep::cluster {

namespace {

Outcome answered(Response response, std::uint64_t request = 0) {
  return Outcome{Outcome::Kind::answered, std::move(response), {}, request};
}

}  // namespace

Command command_for(const DeadlineTarget& target, TimeMs now) {
  if (target.kind == DeadlineTarget::Kind::timeout) return Timeout{target.key, WaiterId{target.id}, now};
  return Expire{target.key, Token{target.id}, now};
}

std::optional<DeadlineTarget> deadline_target(const Command& command) {
  if (const auto* e = std::get_if<Expire>(&command)) return DeadlineTarget{DeadlineTarget::Kind::expire, e->token.value, e->key};
  if (const auto* t = std::get_if<Timeout>(&command)) return DeadlineTarget{DeadlineTarget::Kind::timeout, t->waiter.value, t->key};
  return std::nullopt;
}

LockMachine::LockMachine(MachineConfig config)
    : config_(std::move(config)), next_token_(config_.first_token), sessions_(config_.sessions) {
  if (auto error = validate(config_.limits)) throw std::invalid_argument(*error);
  if (config_.first_token.value == 0) throw std::invalid_argument("first_token must be positive");
  if (config_.sessions.clients_max == 0) throw std::invalid_argument("clients_max must be positive");
  if (config_.sessions.window == 0) throw std::invalid_argument("the session window must be positive");
  if (config_.waiter_grace_ms.value < 0 || config_.waiter_grace_ms > waiter_grace_max) {
    throw std::invalid_argument("the waiter grace is out of range");
  }
}

// ---- applying ---------------------------------------------------------------

Applied LockMachine::apply_command(const Command& command, raft::Index index) {
  LOCKSTEP_ASSERT(index >= applied_);
  LOCKSTEP_ASSERT(index > 0);
  applied_ = index;
  ++commands_applied_;
  clock_ = std::max(clock_, stamped_time(command));
  Applied applied;
  note_epoch(command_epoch(command), applied);
  if (const auto* a = std::get_if<Acquire>(&command)) {
    acquire(*a, applied);
  } else if (const auto* r = std::get_if<Release>(&command)) {
    release(*r, applied);
  } else if (const auto* e = std::get_if<Expire>(&command)) {
    expire(*e, applied);
  } else if (const auto* t = std::get_if<Timeout>(&command)) {
    timeout(*t, applied);
  } else {
    close(std::get<Close>(command));
  }
  return applied;
}

void LockMachine::skip_entry(raft::Index index, bool rejected) {
  LOCKSTEP_ASSERT(index > applied_);
  applied_ = index;
  if (rejected) ++rejected_entries_;
}

void LockMachine::acquire(const Acquire& command, Applied& applied) {
  // Anonymous: applied as it comes, nothing recorded.
  if (command.session.anonymous()) {
    try_acquire(command, applied);
    return;
  }
  const auto request = request_digest(command);
  if (answered_by_session(command.session, command.connection, command.epoch, request, true, applied)) return;
  Outcome outcome = try_acquire(command, applied);
  outcome.request = request;
  sessions_.record(command.session, std::move(outcome), commands_applied_);
}

bool LockMachine::answered_by_session(const Session& session, ConnectionId connection, std::uint64_t epoch,
                                      std::uint64_t request, bool acquire, Applied& applied) {
  switch (sessions_.standing(session, request)) {
    case SessionTable::Standing::fresh:
      return false;
    case SessionTable::Standing::retry:
      // The session-reapply bug applies a retried Acquire again.
      if (bug(ClusterBug::session_reapply) && acquire) return false;
      break;
    case SessionTable::Standing::reused:
      // The session-ignores-request bug answers it as a retry of the request
      // the number was used for.
      if (bug(ClusterBug::session_ignores_request)) break;
      applied.responses.push_back({connection, Response::error(reused_reason)});
      return true;
    case SessionTable::Standing::stale:
      applied.responses.push_back({connection, Response::error("stale request")});
      return true;
  }
  sessions_.touch(session.client, commands_applied_);
  answer_retry(connection, epoch, *sessions_.find(session), applied);
  return true;
}

// A retried request is not applied again; its client hears what the first
// one came to, on the connection it retried on (the caller made sure it is
// the same request: one reusing the number for another is refused).
void LockMachine::answer_retry(ConnectionId connection, std::uint64_t epoch, const Outcome& outcome,
                               Applied& applied) {
  switch (outcome.kind) {
    case Outcome::Kind::answered:
    case Outcome::Kind::dropped:  // its waiter left unanswered: T, it will never be granted
      applied.responses.push_back({connection, outcome.response});
      return;
    case Outcome::Kind::queued:
      // Still waiting: its answer goes where the client now listens, and
      // it is attached to the leadership that took the retry.
      move_waiter(outcome.waiter, connection, epoch, applied);
      return;
  }
}

Outcome LockMachine::try_acquire(const Acquire& command, Applied& applied) {
  const auto found = keys_.find(command.key);
  const auto refuse = [&](Response response) {
    applied.responses.push_back({command.connection, response});
    return answered(std::move(response));
  };
  // docs/protocol.md, "Tokens": once the last token is issued, every acquire
  // is E at once, whatever its key's state, and changes nothing.
  if (tokens_exhausted()) return refuse(Response::error("tokens exhausted"));
  if (found == keys_.end()) {
    // simple mode points 1 and 5: register a new key unless max_keys are registered.
    if (keys_.size() >= config_.limits.max_keys) return refuse(Response::busy(command.owner, command.key));
    KeyState& state = keys_.try_emplace(CompactString(command.key)).first->second;
    grant(state, command.key, command.owner, command.lease_ms, command.connection, applied);
    return answered(applied.responses.back().response);
  }
  // Cluster mode: the key is held until its Expire applies, expired or not.
  KeyState& state = found->second;
  // simple mode point 3: a try-lock on a held key is T at once, never queued, never B.
  if (command.wait_ms.value == 0) return refuse(Response::timed_out(command.owner, command.key));
  // simple mode point 5: queueing past a waiter limit is B, nothing changed.
  if (state.queue.size() >= config_.limits.max_waiters_per_key ||
      waiter_keys_.size() >= config_.limits.max_waiters) {
    return refuse(Response::busy(command.owner, command.key));
  }
  // simple mode point 4 (and 9: the holder's own owner queues like anyone): the tail.
  const WaiterId id = next_waiter_;
  ++next_waiter_.value;
  const TimeMs deadline = clock_ + command.wait_ms;
  Waiter& waiter = state.queue
                       .emplace(id, Waiter{id, command.owner, command.lease_ms, deadline, command.connection,
                                           command.session, command.epoch, std::nullopt})
                       .first->second;
  waiter_keys_.emplace(id, command.key);
  connection_waiters_[command.connection].insert(id);
  // A stale leadership's Acquire applied late is detached at once.
  if (command.epoch < epoch_) waiter.detached_at = clock_;
  applied.deadlines.push_back({due_at(waiter), {DeadlineTarget::Kind::timeout, id.value, command.key}});
  return Outcome{Outcome::Kind::queued, {}, id, 0};
}

void LockMachine::release(const Release& command, Applied& applied) {
  const bool recorded = !command.session.anonymous();
  const auto request = recorded ? request_digest(command) : 0;
  if (recorded && answered_by_session(command.session, command.connection, command.epoch, request, false, applied)) {
    return;
  }
  const auto found = keys_.find(command.key);
  // The stale-release bug also takes an earlier token of the key.
  const bool stale_accepted =
      bug(ClusterBug::stale_release) && found != keys_.end() && command.token < found->second.token;
  if (found == keys_.end() || (found->second.token != command.token && !stale_accepted)) {
    // simple mode point 7: another token, or no such key: N, nothing changes.
    auto response = Response::not_held(command.token, command.key);
    applied.responses.push_back({command.connection, response});
    if (recorded) sessions_.record(command.session, answered(std::move(response), request), commands_applied_);
    return;
  }
  // simple mode point 6: R; then the head waiter gets the key, or it is deleted.
  auto response = Response::released(command.token, command.key);
  applied.responses.push_back({command.connection, response});
  if (recorded) sessions_.record(command.session, answered(std::move(response), request), commands_applied_);
  hand_on(command.key, applied);
}

void LockMachine::expire(const Expire& command, Applied& applied) {
  applied.settled.push_back({DeadlineTarget::Kind::expire, command.token.value, command.key});
  const auto found = keys_.find(command.key);
  if (found == keys_.end()) return;
  // The token check is what makes a late or repeated Expire harmless: the
  // key may have been released and granted again since it was proposed.
  if (found->second.token != command.token && !bug(ClusterBug::expire_without_token_check)) return;
  hand_on(command.key, applied, bug(ClusterBug::lifo_expire_handoff));
}

void LockMachine::timeout(const Timeout& command, Applied& applied) {
  applied.settled.push_back({DeadlineTarget::Kind::timeout, command.waiter.value, command.key});
  if (!is_queued(command.key, command.waiter)) return;  // granted, timed out or dropped since
  KeyState& state = key_state(command.key);
  const Waiter& waiter = state.queue.at(command.waiter);
  // Detached by a leader change and not attached again by a retry within
  // the grace: it leaves, unheard (its connection was closed).
  if (waiter.detached_at) {
    drop_detached(state, command.key, command.waiter);
    return;
  }
  // Not due (attached again, or an early Timeout): it stays.
  if (waiter.deadline > clock_) return;
  auto response = Response::timed_out(waiter.owner, command.key);
  applied.responses.push_back({waiter.connection, response});
  sessions_.settle_waiter(waiter.session, command.waiter, answered(std::move(response)));
  remove_waiter(state, command.waiter);
}

void LockMachine::close(const Close& command) {
  const auto found = connection_waiters_.find(command.connection);
  if (found == connection_waiters_.end()) return;
  // simple mode point 10: the waiters leave silently; held locks stay. remove_waiter
  // erases the set with its last waiter, so walk a copy.
  const std::set<WaiterId> waiters = found->second;
  for (const WaiterId id : waiters) {
    const std::string& key = waiter_keys_.at(id);
    drop_detached(key_state(key), key, id);
  }
  LOCKSTEP_ASSERT(!connection_waiters_.contains(command.connection));
}

// ---- records ------------------------------------------------------------------

LockMachine::KeyState& LockMachine::key_state(std::string_view key) {
  const auto found = keys_.find(key);
  LOCKSTEP_ASSERT(found != keys_.end());
  return found->second;
}

void LockMachine::grant(KeyState& state, std::string_view key, std::string_view owner, DurationMs lease_ms,
                        ConnectionId connection, Applied& applied) {
  state.owner.assign(owner);
  // The token-per-key bug counts from the key's last token (0 for a new key).
  state.token = bug(ClusterBug::token_per_key) ? Token{state.token.value + 1} : issue_token();
  state.granted_at = clock_;
  state.expiry = clock_ + lease_ms;
  applied.responses.push_back({connection, Response::granted(state.token, owner, key)});
  applied.deadlines.push_back({state.expiry, {DeadlineTarget::Kind::expire, state.token.value, std::string(key)}});
}

void LockMachine::hand_on(std::string_view key, Applied& applied, bool newest_first) {
  KeyState& state = key_state(key);
  while (!state.queue.empty()) {
    const Waiter& head = newest_first ? state.queue.rbegin()->second : state.queue.begin()->second;
    const WaiterId id = head.id;
    // Detached by a leader change: nobody would hear the grant (a ghost
    // grant, which the bug makes of one it could grant); it leaves as if its
    // connection closed.
    const bool grantable = head.deadline > clock_ && !tokens_exhausted();
    if (head.detached_at && !(bug(ClusterBug::ghost_grant) && grantable)) {
      drop_detached(state, key, id);
      continue;
    }
    // Past its deadline (its Timeout not yet applied), or no token left to
    // grant it with (docs/protocol.md, "Tokens"): T, never a grant.
    if (head.deadline <= clock_ || tokens_exhausted()) {
      auto response = Response::timed_out(head.owner, key);
      applied.responses.push_back({head.connection, response});
      sessions_.settle_waiter(head.session, id, answered(std::move(response)));
      remove_waiter(state, id);
      continue;
    }
    const Waiter waiter = head;  // remove_waiter destroys the record
    remove_waiter(state, id);
    grant(state, key, waiter.owner, waiter.lease_ms, waiter.connection, applied);
    sessions_.settle_waiter(waiter.session, id, answered(applied.responses.back().response));
    return;
  }
  keys_.erase(keys_.find(key));
}

void LockMachine::remove_waiter(KeyState& state, WaiterId id) {
  const auto waiter = state.queue.find(id);
  LOCKSTEP_ASSERT(waiter != state.queue.end());
  const auto connection = connection_waiters_.find(waiter->second.connection);
  LOCKSTEP_ASSERT(connection != connection_waiters_.end());
  connection->second.erase(id);
  if (connection->second.empty()) connection_waiters_.erase(connection);
  waiter_keys_.erase(id);
  state.queue.erase(waiter);
}

void LockMachine::move_waiter(WaiterId id, ConnectionId connection, std::uint64_t epoch, Applied& applied) {
  const std::string& key = waiter_keys_.at(id);
  Waiter& waiter = key_state(key).queue.at(id);
  attach(waiter, epoch, key, applied);
  if (waiter.connection == connection) return;
  auto& old_set = connection_waiters_.at(waiter.connection);
  old_set.erase(id);
  if (old_set.empty()) connection_waiters_.erase(waiter.connection);
  waiter.connection = connection;
  connection_waiters_[connection].insert(id);
}

void LockMachine::note_epoch(std::uint64_t epoch, Applied& applied) {
  if (epoch <= epoch_) return;
  epoch_ = epoch;
  // Every waiter of an older leadership: its node closed its connection
  // (or died), so it waits for a retry. Keys, then queue order.
  for (auto& [key, state] : keys_) {
    for (auto& [id, waiter] : state.queue) {
      if (waiter.detached_at) continue;
      waiter.detached_at = clock_;
      if (due_at(waiter) < waiter.deadline) applied.deadlines.push_back({due_at(waiter), {DeadlineTarget::Kind::timeout, id.value, std::string(key)}});
    }
  }
}

void LockMachine::attach(Waiter& waiter, std::uint64_t epoch, std::string_view key, Applied& applied) {
  const TimeMs was_due = due_at(waiter);
  waiter.epoch = epoch;
  if (epoch >= epoch_) {
    waiter.detached_at.reset();
  } else if (!waiter.detached_at) {
    waiter.detached_at = clock_;  // a stale leadership's retry: its connection is gone too
  }
  if (due_at(waiter) != was_due) applied.deadlines.push_back({due_at(waiter), {DeadlineTarget::Kind::timeout, waiter.id.value, std::string(key)}});
}

void LockMachine::drop_detached(KeyState& state, std::string_view key, WaiterId id) {
  const Waiter& waiter = state.queue.at(id);
  // Never answered; a retry of it hears T (it can no longer be granted).
  sessions_.settle_waiter(waiter.session, id, Outcome{Outcome::Kind::dropped, Response::timed_out(waiter.owner, key), {}, 0});
  remove_waiter(state, id);
}

TimeMs LockMachine::due_at(const Waiter& waiter) const {
  if (!waiter.detached_at) return waiter.deadline;
  return std::min(waiter.deadline, *waiter.detached_at + config_.waiter_grace_ms);
}

std::optional<TimeMs> LockMachine::waiter_due(std::string_view key, WaiterId waiter) const {
  if (!is_queued(key, waiter)) return std::nullopt;
  return due_at(keys_.find(key)->second.queue.at(waiter));
}

Token LockMachine::issue_token() {
  LOCKSTEP_ASSERT(!tokens_exhausted());  // callers refuse first
  const Token token = next_token_;
  // After the last token, 2^64 - 1, the counter holds 0: none left.
  next_token_.value = token.value == UINT64_MAX ? 0 : token.value + 1;
  return token;
}

// ---- what the heap reads ----------------------------------------------------------

bool LockMachine::holds(std::string_view key, Token token) const {
  const auto found = keys_.find(key);
  return found != keys_.end() && found->second.token == token;
}

bool LockMachine::is_queued(std::string_view key, WaiterId waiter) const {
  const auto found = waiter_keys_.find(waiter);
  return found != waiter_keys_.end() && found->second == key;
}

std::vector<Deadline> LockMachine::deadlines() const {
  std::vector<Deadline> all;
  all.reserve(keys_.size() + waiter_keys_.size());
  for (const auto& [key, state] : keys_) {
    all.push_back({state.expiry, {DeadlineTarget::Kind::expire, state.token.value, std::string(key)}});
    for (const auto& [id, waiter] : state.queue) {
      all.push_back({due_at(waiter), {DeadlineTarget::Kind::timeout, id.value, std::string(key)}});
    }
  }
  return all;
}

// ---- snapshots ------------------------------------------------------------------

std::string LockMachine::snapshot() const {
  ByteWriter w;
  w.u8(snapshot_format_version);
  w.u64(applied_);
  w.u64(commands_applied_);
  w.i64(clock_.value);
  w.u64(epoch_);
  w.u64(next_token_.value);
  w.u64(next_waiter_.value);
  w.u64(keys_.size());
  for (const auto& [key, state] : keys_) {
    w.text(key);
    w.text(state.owner);
    w.u64(state.token.value);
    w.i64(state.granted_at.value);
    w.i64(state.expiry.value);
    w.u64(state.queue.size());
    for (const auto& [id, waiter] : state.queue) {
      w.u64(id.value);
      w.text(waiter.owner);
      w.i64(waiter.lease_ms.value);
      w.i64(waiter.deadline.value);
      w.u64(waiter.connection.value);
      w.text(waiter.session.client);
      w.u64(waiter.session.sequence);
      w.u64(waiter.epoch);
      w.u8(waiter.detached_at ? 1 : 0);
      w.i64(waiter.detached_at.value_or(TimeMs{0}).value);
    }
  }
  sessions_.write(w);
  return w.take();
}

void LockMachine::restore(raft::Index index, std::string_view bytes) {
  LockMachine fresh(config_);
  ByteReader r(bytes);
  if (r.u8() != snapshot_format_version) r.fail("unknown snapshot format version");
  fresh.applied_ = r.u64();
  fresh.commands_applied_ = r.u64();
  fresh.clock_ = TimeMs{r.i64()};
  fresh.epoch_ = r.u64();
  fresh.next_token_ = Token{r.u64()};
  fresh.next_waiter_ = WaiterId{r.u64()};
  const auto key_count = r.u64();
  if (key_count > config_.limits.max_keys) r.fail("too many keys");
  for (std::uint64_t k = 0; k < key_count && !r.failed(); ++k) {
    std::string key = r.text(name_bytes_max);
    KeyState state;
    state.owner.assign(r.text(name_bytes_max));
    state.token = Token{r.u64()};
    state.granted_at = TimeMs{r.i64()};
    state.expiry = TimeMs{r.i64()};
    const auto queued = r.u64();
    if (queued > config_.limits.max_waiters_per_key) r.fail("too many waiters");
    for (std::uint64_t q = 0; q < queued && !r.failed(); ++q) {
      Waiter waiter;
      waiter.id = WaiterId{r.u64()};
      waiter.owner = r.text(name_bytes_max);
      waiter.lease_ms = DurationMs{r.i64()};
      waiter.deadline = TimeMs{r.i64()};
      waiter.connection = ConnectionId{r.u64()};
      waiter.session.client = r.text(name_bytes_max);
      waiter.session.sequence = r.u64();
      waiter.epoch = r.u64();
      const auto detached = r.u8();
      const TimeMs detached_at{r.i64()};
      if (detached > 1) r.fail("bad waiter detachment");
      if (detached == 1) waiter.detached_at = detached_at;
      const bool anonymous = waiter.session.anonymous() && waiter.session.sequence == 0;
      if (!anonymous && (!is_valid_name(waiter.session.client) || waiter.session.sequence == 0)) r.fail("bad session");
      if (state.queue.contains(waiter.id) || fresh.waiter_keys_.contains(waiter.id)) r.fail("repeated waiter");
      fresh.waiter_keys_.emplace(waiter.id, key);
      fresh.connection_waiters_[waiter.connection].insert(waiter.id);
      state.queue.emplace(waiter.id, std::move(waiter));
    }
    if (fresh.keys_.contains(key)) r.fail("repeated key");
    fresh.keys_.emplace(std::move(key), std::move(state));
  }
  fresh.sessions_ = SessionTable::read(r, config_.sessions);
  if (bug(ClusterBug::restore_forgets_sessions)) fresh.sessions_ = SessionTable(config_.sessions);
  if (!r.failed() && !r.at_end()) r.fail("trailing bytes");
  if (!r.failed() && fresh.applied_ != index) r.fail("snapshot index disagrees with its bytes");
  if (r.failed()) throw std::invalid_argument("bad lock table snapshot: " + r.reason());
  try {
    fresh.check_invariants();
  } catch (const InvariantViolation& violation) {
    throw std::invalid_argument(std::string("bad lock table snapshot: ") + violation.what());
  }
  *this = std::move(fresh);
}

// ---- invariants -------------------------------------------------------------------

void LockMachine::check_invariants() const {
  // Limits hold.
  LOCKSTEP_ASSERT(keys_.size() <= config_.limits.max_keys);
  LOCKSTEP_ASSERT(waiter_keys_.size() <= config_.limits.max_waiters);
  std::set<Token> tokens;
  std::size_t queued = 0;
  for (const auto& [key, state] : keys_) {
    LOCKSTEP_ASSERT(is_valid_name(key));
    LOCKSTEP_ASSERT(is_valid_name(state.owner));
    // Tokens: positive, issued from the one counter, one per key (which
    // the token-per-key bug breaks on purpose: the simulator's checker, not
    // this assertion, is what must catch it).
    LOCKSTEP_ASSERT(state.token >= config_.first_token);
    if (!bug(ClusterBug::token_per_key)) {
      LOCKSTEP_ASSERT(tokens_exhausted() || state.token < next_token_);
      LOCKSTEP_ASSERT(tokens.insert(state.token).second);
    }
    LOCKSTEP_ASSERT(state.granted_at <= clock_);
    LOCKSTEP_ASSERT(state.expiry > state.granted_at);
    LOCKSTEP_ASSERT(state.queue.size() <= config_.limits.max_waiters_per_key);
    for (const auto& [id, waiter] : state.queue) {
      LOCKSTEP_ASSERT(waiter.id == id);
      LOCKSTEP_ASSERT(id.value > 0 && id < next_waiter_);
      LOCKSTEP_ASSERT(waiter.lease_ms.value > 0);
      LOCKSTEP_ASSERT(is_valid_name(waiter.owner));
      // Detached exactly when attached to an older leadership than the
      // table's, since an instant the table applied.
      LOCKSTEP_ASSERT(waiter.epoch <= epoch_);
      LOCKSTEP_ASSERT(waiter.detached_at.has_value() == (waiter.epoch < epoch_));
      LOCKSTEP_ASSERT(!waiter.detached_at || *waiter.detached_at <= clock_);
      const auto indexed = waiter_keys_.find(id);
      LOCKSTEP_ASSERT(indexed != waiter_keys_.end() && indexed->second == key);
      const auto by_connection = connection_waiters_.find(waiter.connection);
      LOCKSTEP_ASSERT(by_connection != connection_waiters_.end() && by_connection->second.contains(id));
      ++queued;
    }
  }
  LOCKSTEP_ASSERT(queued == waiter_keys_.size());
  std::size_t by_connection = 0;
  for (const auto& [connection, waiters] : connection_waiters_) {
    LOCKSTEP_ASSERT(!waiters.empty());
    by_connection += waiters.size();
  }
  LOCKSTEP_ASSERT(by_connection == queued);
  // A session outcome still queued names a waiter of that session. (Not
  // the converse: a client evicted from the table may have a waiter left.)
  sessions_.for_each([&](const Session& session, const Outcome& outcome) {
    if (outcome.kind != Outcome::Kind::queued) return;
    const auto indexed = waiter_keys_.find(outcome.waiter);
    LOCKSTEP_ASSERT(indexed != waiter_keys_.end());
    LOCKSTEP_ASSERT(keys_.find(indexed->second)->second.queue.at(outcome.waiter).session == session);
  });
  sessions_.check_invariants();
}

// ---- canonical text ---------------------------------------------------------------

std::string canonical_table(const LockMachine& machine) {
  std::string text;
  for (const auto& [key, state] : machine.keys()) {
    text += fmt::format("key {} holder {} token {} granted_at {} expiry {}\n", key, state.owner, state.token.value,
                        state.granted_at.value, state.expiry.value);
    for (const auto& [id, waiter] : state.queue) {
      text += fmt::format("  waiter {} owner {} lease {} deadline {} connection {} epoch {}", id.value, waiter.owner,
                          waiter.lease_ms.value, waiter.deadline.value, waiter.connection.value, waiter.epoch);
      text += waiter.detached_at ? fmt::format(" detached {}\n", waiter.detached_at->value) : "\n";
    }
  }
  return text;
}

}  // namespace lockstep::cluster
