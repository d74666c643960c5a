#include "impl/cluster/sessions.hpp"

#include "impl/assert.hpp"

namespace lockstep::cluster {

SessionTable::Standing SessionTable::standing(Session session) const {
  const auto found = clients_.find(session.client);
  if (found == clients_.end()) return Standing::fresh;
  const ClientState& state = found->second;
  if (state.outcomes.contains(session.sequence)) return Standing::retry;
  if (state.highest >= limits_.window && session.sequence <= state.highest - limits_.window) {
    return Standing::stale;
  }
  return Standing::fresh;
}

const Outcome* SessionTable::find(Session session) const {
  const auto found = clients_.find(session.client);
  if (found == clients_.end()) return nullptr;
  const auto outcome = found->second.outcomes.find(session.sequence);
  return outcome == found->second.outcomes.end() ? nullptr : &outcome->second;
}

void SessionTable::touch(std::uint64_t client, raft::Index index) {
  ClientState& state = clients_.at(client);
  LOCKSTEP_ASSERT(index > state.last_index);
  by_last_index_.erase(state.last_index);
  state.last_index = index;
  by_last_index_.emplace(index, client);
}

void SessionTable::record(Session session, Outcome outcome, raft::Index index) {
  LOCKSTEP_ASSERT(session.client != 0 && session.sequence != 0);
  auto found = clients_.find(session.client);
  if (found == clients_.end()) {
    if (clients_.size() >= limits_.clients_max) evict_least_recent();
    found = clients_.emplace(session.client, ClientState{}).first;
  } else {
    by_last_index_.erase(found->second.last_index);
  }
  ClientState& state = found->second;
  LOCKSTEP_ASSERT(index > state.last_index);
  state.last_index = index;
  by_last_index_.emplace(index, session.client);
  state.highest = std::max(state.highest, session.sequence);
  state.outcomes[session.sequence] = std::move(outcome);
  // Keep only sequence numbers above highest - window.
  while (!state.outcomes.empty() && state.highest >= limits_.window &&
         state.outcomes.begin()->first <= state.highest - limits_.window) {
    state.outcomes.erase(state.outcomes.begin());
  }
}

void SessionTable::update(Session session, Outcome outcome) {
  const auto found = clients_.find(session.client);
  if (found == clients_.end()) return;
  const auto kept = found->second.outcomes.find(session.sequence);
  if (kept != found->second.outcomes.end()) kept->second = std::move(outcome);
}

void SessionTable::evict_least_recent() {
  LOCKSTEP_ASSERT(!by_last_index_.empty());
  const auto oldest = by_last_index_.begin();
  clients_.erase(oldest->second);
  by_last_index_.erase(oldest);
}

void write_response(ByteWriter& w, const Response& response) {
  w.u8(static_cast<std::uint8_t>(response.kind));
  w.u64(response.token.value);
  w.text(response.owner);
  w.text(response.key);
  w.text(response.reason);
}

Response read_response(ByteReader& r) {
  Response response;
  const auto kind = r.u8();
  switch (static_cast<ResponseKind>(kind)) {
    case ResponseKind::granted:
    case ResponseKind::timed_out:
    case ResponseKind::busy:
    case ResponseKind::released:
    case ResponseKind::not_held:
    case ResponseKind::error:
      response.kind = static_cast<ResponseKind>(kind);
      break;
    default:
      r.fail("unknown response kind");
  }
  response.token = Token{r.u64()};
  response.owner = r.text(name_bytes_max);
  response.key = r.text(name_bytes_max);
  response.reason = r.text(1'024);
  return response;
}

void SessionTable::write(ByteWriter& w) const {
  w.u64(clients_.size());
  for (const auto& [client, state] : clients_) {
    w.u64(client);
    w.u64(state.highest);
    w.u64(state.last_index);
    w.u64(state.outcomes.size());
    for (const auto& [sequence, outcome] : state.outcomes) {
      w.u64(sequence);
      w.u8(static_cast<std::uint8_t>(outcome.kind));
      write_response(w, outcome.response);
      w.u64(outcome.waiter.value);
    }
  }
}

SessionTable SessionTable::read(ByteReader& r, SessionLimits limits) {
  SessionTable table(limits);
  const auto clients = r.u64();
  if (clients > limits.clients_max) r.fail("too many sessions");
  for (std::uint64_t i = 0; i < clients && !r.failed(); ++i) {
    const auto client = r.u64();
    ClientState state;
    state.highest = r.u64();
    state.last_index = r.u64();
    const auto outcomes = r.u64();
    if (outcomes > limits.window) r.fail("session window too long");
    for (std::uint64_t j = 0; j < outcomes && !r.failed(); ++j) {
      const auto sequence = r.u64();
      Outcome outcome;
      const auto kind = r.u8();
      if (kind > static_cast<std::uint8_t>(Outcome::Kind::dropped)) r.fail("unknown outcome kind");
      outcome.kind = static_cast<Outcome::Kind>(kind);
      outcome.response = read_response(r);
      outcome.waiter = WaiterId{r.u64()};
      if (sequence == 0 || sequence > state.highest) r.fail("session sequence out of range");
      state.outcomes.emplace(sequence, std::move(outcome));
    }
    if (client == 0 || table.clients_.contains(client) ||
        table.by_last_index_.contains(state.last_index)) {
      r.fail("bad session table");
    }
    if (r.failed()) break;
    table.by_last_index_.emplace(state.last_index, client);
    table.clients_.emplace(client, std::move(state));
  }
  return table;
}

void SessionTable::check_invariants() const {
  LOCKSTEP_ASSERT(clients_.size() <= limits_.clients_max);
  LOCKSTEP_ASSERT(by_last_index_.size() == clients_.size());
  for (const auto& [index, client] : by_last_index_) {
    const auto found = clients_.find(client);
    LOCKSTEP_ASSERT(found != clients_.end());
    LOCKSTEP_ASSERT(found->second.last_index == index);
  }
  for (const auto& [client, state] : clients_) {
    LOCKSTEP_ASSERT(client != 0);
    LOCKSTEP_ASSERT(state.outcomes.size() <= limits_.window);
    for (const auto& [sequence, outcome] : state.outcomes) {
      LOCKSTEP_ASSERT(sequence <= state.highest);
      LOCKSTEP_ASSERT(state.highest < limits_.window || sequence > state.highest - limits_.window);
    }
  }
}

}  // namespace lockstep::cluster
