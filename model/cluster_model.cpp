#include "model/cluster_model.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

namespace lockstep::model {

ClusterModel::ClusterModel(Limits limits, Token first_token, cluster::SessionLimits sessions)
    : limits_(limits), session_limits_(sessions), next_token_(first_token) {
  if (auto error = validate(limits_)) throw std::invalid_argument(*error);
  if (first_token.value == 0) throw std::invalid_argument("first_token must be positive");
}

Outputs ClusterModel::apply(const cluster::Command& command) {
  clock_ = std::max(clock_, cluster::stamped_time(command));
  Outputs out;
  std::visit(
      [&](const auto& c) {
        using C = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<C, cluster::Acquire>) acquire(c, out);
        if constexpr (std::is_same_v<C, cluster::Release>) release(c, out);
        if constexpr (std::is_same_v<C, cluster::Expire>) expire(c, out);
        if constexpr (std::is_same_v<C, cluster::Timeout>) timeout(c, out);
        if constexpr (std::is_same_v<C, cluster::Close>) close(c);
      },
      command);
  return out;
}

std::size_t ClusterModel::waiter_count() const {
  std::size_t count = 0;
  for (const auto& [key, state] : keys_) count += state.queue.size();
  return count;
}

// ---- sessions ---------------------------------------------------------------

bool ClusterModel::handled_by_session(const cluster::Session& session, ConnectionId connection, Outputs& out) {
  if (session.anonymous()) return false;
  auto client = clients_.find(session.client);
  if (client == clients_.end()) return false;
  auto request = client->second.requests.find(session.sequence);
  if (request != client->second.requests.end()) {
    // A retry: what the request came to, heard where the client now asks.
    client->second.last_use = ++uses_;
    const Remembered& what = request->second;
    if (what.kind != Remembered::Kind::queued) {
      out.push_back({connection, what.response});
    } else {
      for (auto& [key, state] : keys_) {
        for (auto& waiter : state.queue) {
          if (waiter.id == what.waiter) waiter.connection = connection;
        }
      }
    }
    return true;
  }
  const auto window = session_limits_.window;
  if (client->second.highest >= window && session.sequence <= client->second.highest - window) {
    out.push_back({connection, Response::error("stale request")});
    return true;
  }
  return false;
}

void ClusterModel::remember(const cluster::Session& session, Remembered what) {
  if (session.anonymous()) return;
  if (!clients_.contains(session.client) && clients_.size() >= session_limits_.clients_max) {
    // Forget the client used longest ago.
    auto oldest = clients_.begin();
    for (auto it = clients_.begin(); it != clients_.end(); ++it) {
      if (it->second.last_use < oldest->second.last_use) oldest = it;
    }
    clients_.erase(oldest);
  }
  Client& client = clients_[session.client];
  client.last_use = ++uses_;
  client.highest = std::max(client.highest, session.sequence);
  client.requests[session.sequence] = std::move(what);
  std::erase_if(client.requests, [&](const auto& entry) {
    return client.highest >= session_limits_.window && entry.first <= client.highest - session_limits_.window;
  });
}

void ClusterModel::answered_later(const Waiter& waiter, Remembered what) {
  if (waiter.session.anonymous()) return;
  const auto client = clients_.find(waiter.session.client);
  if (client == clients_.end()) return;
  const auto request = client->second.requests.find(waiter.session.sequence);
  if (request == client->second.requests.end()) return;
  // Forgotten and asked again since (an evicted client reusing its number):
  // the request remembered now is another one.
  if (request->second.kind != Remembered::Kind::queued || request->second.waiter != waiter.id) return;
  request->second = std::move(what);
}

// ---- requests -----------------------------------------------------------------

void ClusterModel::acquire(const cluster::Acquire& command, Outputs& out) {
  if (handled_by_session(command.session, command.connection, out)) return;
  const auto answer = [&](Response response) {
    remember(command.session, Remembered{Remembered::Kind::answered, response, 0});
    out.push_back({command.connection, std::move(response)});
  };
  // No token left: every acquire is E, whatever its key's state.
  if (tokens_exhausted()) return answer(Response::error("tokens exhausted"));
  auto found = keys_.find(command.key);
  if (found == keys_.end()) {
    // A free key is granted at once, unless max_keys keys are registered.
    if (keys_.size() >= limits_.max_keys) return answer(Response::busy(command.owner, command.key));
    const Token token = new_token();
    keys_[command.key] = Key{command.owner, token, clock_, clock_ + command.lease_ms, {}};
    return answer(Response::granted(token, command.owner, command.key));
  }
  // Held until its Expire is applied, expired or not: never taken over.
  Key& state = found->second;
  if (command.wait_ms.value == 0) return answer(Response::timed_out(command.owner, command.key));
  if (state.queue.size() >= limits_.max_waiters_per_key || waiter_count() >= limits_.max_waiters) {
    return answer(Response::busy(command.owner, command.key));
  }
  // The tail, whoever holds the key (the same owner is no exception).
  const std::uint64_t id = next_waiter_++;
  state.queue.push_back(Waiter{id, command.owner, command.lease_ms, clock_ + command.wait_ms, command.connection,
                               command.session});
  remember(command.session, Remembered{Remembered::Kind::queued, {}, id});
}

void ClusterModel::release(const cluster::Release& command, Outputs& out) {
  if (handled_by_session(command.session, command.connection, out)) return;
  auto found = keys_.find(command.key);
  const bool holds = found != keys_.end() && found->second.token == command.token;
  Response response =
      holds ? Response::released(command.token, command.key) : Response::not_held(command.token, command.key);
  remember(command.session, Remembered{Remembered::Kind::answered, response, 0});
  out.push_back({command.connection, std::move(response)});
  if (holds) pass_on(command.key, out);
}

// ---- what the leader proposes at deadlines ----------------------------------------

void ClusterModel::expire(const cluster::Expire& command, Outputs& out) {
  auto found = keys_.find(command.key);
  if (found == keys_.end() || found->second.token != command.token) return;  // released or passed on since
  pass_on(command.key, out);
}

void ClusterModel::timeout(const cluster::Timeout& command, Outputs& out) {
  auto found = keys_.find(command.key);
  if (found == keys_.end()) return;
  auto& queue = found->second.queue;
  const auto waiter = std::find_if(queue.begin(), queue.end(),
                                   [&](const Waiter& w) { return w.id == command.waiter.value; });
  if (waiter == queue.end()) return;  // granted, timed out or dropped since
  const auto response = Response::timed_out(waiter->owner, command.key);
  answered_later(*waiter, Remembered{Remembered::Kind::answered, response, 0});
  out.push_back({waiter->connection, response});
  queue.erase(waiter);
}

void ClusterModel::close(const cluster::Close& command) {
  for (auto& [key, state] : keys_) {
    for (const auto& w : state.queue) {
      if (w.connection != command.connection) continue;
      // Never answered; a retry of it hears T (it can no longer be granted).
      answered_later(w, Remembered{Remembered::Kind::dropped, Response::timed_out(w.owner, key), 0});
    }
    std::erase_if(state.queue, [&](const Waiter& w) { return w.connection == command.connection; });
  }
}

// ---- passing a key on ---------------------------------------------------------------

void ClusterModel::pass_on(const std::string& key, Outputs& out) {
  Key& state = keys_.at(key);
  while (!state.queue.empty()) {
    const Waiter head = state.queue.front();
    state.queue.pop_front();
    if (clock_ >= head.deadline || tokens_exhausted()) {
      // docs/protocol.md, "Time": at now >= deadline a waiter is answered T,
      // never granted; and "Tokens": with no token left, so is every waiter.
      const auto response = Response::timed_out(head.owner, key);
      answered_later(head, Remembered{Remembered::Kind::answered, response, 0});
      out.push_back({head.connection, response});
      continue;
    }
    state.holder = head.owner;
    state.token = new_token();
    state.granted_at = clock_;
    state.expiry = clock_ + head.lease_ms;
    const auto response = Response::granted(state.token, head.owner, key);
    answered_later(head, Remembered{Remembered::Kind::answered, response, 0});
    out.push_back({head.connection, response});
    return;
  }
  keys_.erase(key);
}

Token ClusterModel::new_token() {
  const Token token = next_token_;
  next_token_.value = token.value == UINT64_MAX ? 0 : token.value + 1;  // 0: none left
  return token;
}

// ---- canonical text ---------------------------------------------------------------

std::string ClusterModel::canonical() const {
  std::string text;
  for (const auto& [key, state] : keys_) {
    text += fmt::format("key {} holder {} token {} granted_at {} expiry {}\n", key, state.holder, state.token.value,
                        state.granted_at.value, state.expiry.value);
    for (const auto& w : state.queue) {
      text += fmt::format("  waiter {} owner {} lease {} deadline {} connection {}\n", w.id, w.owner,
                          w.lease_ms.value, w.deadline.value, w.connection.value);
    }
  }
  return text;
}

std::string ClusterModel::canonical_sessions() const {
  std::string text;
  for (const auto& [name, client] : clients_) {
    text += fmt::format("client {} highest {}\n", name, client.highest);
    for (const auto& [sequence, what] : client.requests) {
      text += fmt::format("  {} {} {} {}\n", sequence, static_cast<int>(what.kind), format_response(what.response),
                          what.waiter);
    }
  }
  return text;
}

}  // namespace lockstep::model
