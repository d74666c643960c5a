#include "impl/cluster/sessions.hpp"

#include <fmt/format.h>

#include "impl/assert.hpp"

namespace lockstep::cluster {

std::optional<std::string> validate(const SessionLimits& limits) {
  if (limits.window < 1 || limits.window > session_window_max) {
    return fmt::format("the session window must be in 1..{}", session_window_max);
  }
  if (limits.clients_max < 1 || limits.clients_max > session_clients_max) {
    return fmt::format("clients_max must be in 1..{}", session_clients_max);
  }
  return std::nullopt;
}

namespace {

std::uint64_t digest_text(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace

std::uint64_t request_digest(const Command& command) {
  if (const auto* a = std::get_if<Acquire>(&command)) {
    return digest_text(fmt::format("A {} {} {} {}", a->key, a->owner, a->lease_ms.value, a->wait_ms.value));
  }
  const auto& r = std::get<Release>(command);
  return digest_text(fmt::format("R {} {}", r.key, r.token.value));
}

std::uint64_t request_digest(const Request& request) {
  if (const auto* a = std::get_if<AcquireRequest>(&request)) {
    return digest_text(fmt::format("A {} {} {} {}", a->key, a->owner, a->lease_ms.value, a->wait_ms.value));
  }
  const auto& r = std::get<ReleaseRequest>(request);
  return digest_text(fmt::format("R {} {}", r.key, r.token.value));
}

SessionTable::Standing SessionTable::standing(const Session& session, std::uint64_t request) const {
  LOCKSTEP_ASSERT(!session.anonymous());
  const auto found = clients_.find(session.client);
  if (found == clients_.end()) return Standing::fresh;
  const ClientState& state = found->second;
  if (const auto kept = state.outcomes.find(session.sequence); kept != state.outcomes.end()) {
    return kept->second.request == request ? Standing::retry : Standing::reused;
  }
  if (state.highest >= limits_.window && session.sequence <= state.highest - limits_.window) {
    return Standing::stale;
  }
  return Standing::fresh;
}

const Outcome* SessionTable::find(const Session& session) const {
  const auto found = clients_.find(session.client);
  if (found == clients_.end()) return nullptr;
  const auto outcome = found->second.outcomes.find(session.sequence);
  return outcome == found->second.outcomes.end() ? nullptr : &outcome->second;
}

void SessionTable::touch(const std::string& client, std::uint64_t use) {
  ClientState& state = clients_.find(client)->second;
  LOCKSTEP_ASSERT(use > state.last_use);
  by_last_use_.erase(state.last_use);
  state.last_use = use;
  by_last_use_.emplace(use, client);
}

void SessionTable::record(const Session& session, Outcome outcome, std::uint64_t use) {
  LOCKSTEP_ASSERT(!session.anonymous() && session.sequence != 0);
  auto found = clients_.find(session.client);
  if (found == clients_.end()) {
    if (clients_.size() >= limits_.clients_max) evict_least_recent();
    found = clients_.emplace(session.client, ClientState{}).first;
  } else {
    by_last_use_.erase(found->second.last_use);
  }
  ClientState& state = found->second;
  LOCKSTEP_ASSERT(use > state.last_use);
  state.last_use = use;
  by_last_use_.emplace(use, session.client);
  state.highest = std::max(state.highest, session.sequence);
  state.outcomes[session.sequence] = std::move(outcome);
  // Keep only sequence numbers above highest - window.
  while (!state.outcomes.empty() && state.highest >= limits_.window &&
         state.outcomes.begin()->first <= state.highest - limits_.window) {
    state.outcomes.erase(state.outcomes.begin());
  }
}

void SessionTable::settle_waiter(const Session& session, WaiterId waiter, Outcome outcome) {
  if (session.anonymous()) return;
  const auto found = clients_.find(session.client);
  if (found == clients_.end()) return;
  const auto kept = found->second.outcomes.find(session.sequence);
  if (kept == found->second.outcomes.end()) return;
  if (kept->second.kind != Outcome::Kind::queued || kept->second.waiter != waiter) return;
  outcome.request = kept->second.request;
  kept->second = std::move(outcome);
}

void SessionTable::evict_least_recent() {
  LOCKSTEP_ASSERT(!by_last_use_.empty());
  const auto oldest = by_last_use_.begin();
  clients_.erase(clients_.find(oldest->second));
  by_last_use_.erase(oldest);
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
    w.text(client);
    w.u64(state.highest);
    w.u64(state.last_use);
    w.u64(state.outcomes.size());
    for (const auto& [sequence, outcome] : state.outcomes) {
      w.u64(sequence);
      w.u8(static_cast<std::uint8_t>(outcome.kind));
      write_response(w, outcome.response);
      w.u64(outcome.waiter.value);
      w.u64(outcome.request);
    }
  }
}

SessionTable SessionTable::read(ByteReader& r, SessionLimits limits) {
  SessionTable table(limits);
  const auto clients = r.u64();
  if (clients > limits.clients_max) r.fail("too many sessions");
  for (std::uint64_t i = 0; i < clients && !r.failed(); ++i) {
    std::string client = r.text(name_bytes_max);
    ClientState state;
    state.highest = r.u64();
    state.last_use = r.u64();
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
      outcome.request = r.u64();
      if (sequence == 0 || sequence > state.highest) r.fail("session sequence out of range");
      state.outcomes.emplace(sequence, std::move(outcome));
    }
    if (!is_valid_name(client) || table.clients_.contains(client) || table.by_last_use_.contains(state.last_use)) {
      r.fail("bad session table");
    }
    if (r.failed()) break;
    table.by_last_use_.emplace(state.last_use, client);
    table.clients_.emplace(std::move(client), std::move(state));
  }
  return table;
}

void SessionTable::check_invariants() const {
  LOCKSTEP_ASSERT(clients_.size() <= limits_.clients_max);
  LOCKSTEP_ASSERT(by_last_use_.size() == clients_.size());
  for (const auto& [use, client] : by_last_use_) {
    const auto found = clients_.find(client);
    LOCKSTEP_ASSERT(found != clients_.end());
    LOCKSTEP_ASSERT(found->second.last_use == use);
  }
  for (const auto& [client, state] : clients_) {
    LOCKSTEP_ASSERT(is_valid_name(client));
    LOCKSTEP_ASSERT(state.outcomes.size() <= limits_.window);
    for (const auto& [sequence, outcome] : state.outcomes) {
      LOCKSTEP_ASSERT(sequence <= state.highest);
      LOCKSTEP_ASSERT(state.highest < limits_.window || sequence > state.highest - limits_.window);
    }
  }
}

}  // namespace lockstep::cluster
