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
  see_epoch(cluster::command_epoch(command));
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

namespace {

// What a request asks, as its line without the session fields.
std::string asked(const cluster::Command& command) {
  if (const auto* a = std::get_if<cluster::Acquire>(&command)) {
    return fmt::format("A {} {} {} {}", a->key, a->owner, a->lease_ms.value, a->wait_ms.value);
  }
  const auto& r = std::get<cluster::Release>(command);
  return fmt::format("R {} {}", r.key, r.token.value);
}

const cluster::Session& session_of(const cluster::Command& command) {
  if (const auto* a = std::get_if<cluster::Acquire>(&command)) return a->session;
  return std::get<cluster::Release>(command).session;
}

ConnectionId connection_of(const cluster::Command& command) {
  if (const auto* a = std::get_if<cluster::Acquire>(&command)) return a->connection;
  return std::get<cluster::Release>(command).connection;
}

}  // namespace

bool ClusterModel::handled_by_session(const cluster::Command& command, Outputs& out) {
  const auto& session = session_of(command);
  const auto connection = connection_of(command);
  if (session.anonymous()) return false;
  auto client = clients_.find(session.client);
  if (client == clients_.end()) return false;
  auto request = client->second.requests.find(session.sequence);
  if (request != client->second.requests.end()) {
    const Remembered& what = request->second;
    if (what.request != asked(command)) {
      // Another request under a number already used: refused, never told
      // what the first one came to.
      out.push_back({connection, Response::error(cluster::reused_reason)});
      return true;
    }
    // A retry: what the request came to, heard where the client now asks.
    client->second.last_use = ++uses_;
    if (what.kind != Remembered::Kind::queued) {
      out.push_back({connection, what.response});
    } else {
      for (auto& [key, state] : keys_) {
        for (auto& waiter : state.queue) {
          if (waiter.id != what.waiter) continue;
          waiter.connection = connection;
          belong(waiter, cluster::command_epoch(command));
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

void ClusterModel::remember(const cluster::Command& command, Remembered what) {
  const auto& session = session_of(command);
  if (session.anonymous()) return;
  what.request = asked(command);
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
  what.request = std::move(request->second.request);
  request->second = std::move(what);
}

// ---- requests -----------------------------------------------------------------

void ClusterModel::acquire(const cluster::Acquire& command, Outputs& out) {
  if (handled_by_session(command, out)) return;
  const auto answer = [&](Response response) {
    remember(command, Remembered{Remembered::Kind::answered, response, 0, {}});
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
                               command.session, 0, std::nullopt});
  belong(state.queue.back(), command.epoch);
  remember(command, Remembered{Remembered::Kind::queued, {}, id, {}});
}

void ClusterModel::release(const cluster::Release& command, Outputs& out) {
  if (handled_by_session(command, out)) return;
  auto found = keys_.find(command.key);
  const bool holds = found != keys_.end() && found->second.token == command.token;
  Response response =
      holds ? Response::released(command.token, command.key) : Response::not_held(command.token, command.key);
  remember(command, Remembered{Remembered::Kind::answered, response, 0, {}});
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
  if (waiter->detached_at) {
    // Its client did not come back within the grace: it leaves, unheard.
    answered_later(*waiter, Remembered{Remembered::Kind::dropped, Response::timed_out(waiter->owner, command.key), 0, {}});
    queue.erase(waiter);
    return;
  }
  if (clock_ < waiter->deadline) return;  // not due: it stays
  const auto response = Response::timed_out(waiter->owner, command.key);
  answered_later(*waiter, Remembered{Remembered::Kind::answered, response, 0, {}});
  out.push_back({waiter->connection, response});
  queue.erase(waiter);
}

void ClusterModel::close(const cluster::Close& command) {
  for (auto& [key, state] : keys_) {
    for (const auto& w : state.queue) {
      if (w.connection != command.connection) continue;
      // Never answered; a retry of it hears T (it can no longer be granted).
      answered_later(w, Remembered{Remembered::Kind::dropped, Response::timed_out(w.owner, key), 0, {}});
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
    if (head.detached_at) {
      // Nobody would hear it: dropped, as its closed connection would.
      answered_later(head, Remembered{Remembered::Kind::dropped, Response::timed_out(head.owner, key), 0, {}});
      continue;
    }
    if (clock_ >= head.deadline || tokens_exhausted()) {
      // docs/protocol.md, "Time": at now >= deadline a waiter is answered T,
      // never granted; and "Tokens": with no token left, so is every waiter.
      const auto response = Response::timed_out(head.owner, key);
      answered_later(head, Remembered{Remembered::Kind::answered, response, 0, {}});
      out.push_back({head.connection, response});
      continue;
    }
    state.holder = head.owner;
    state.token = new_token();
    state.granted_at = clock_;
    state.expiry = clock_ + head.lease_ms;
    const auto response = Response::granted(state.token, head.owner, key);
    answered_later(head, Remembered{Remembered::Kind::answered, response, 0, {}});
    out.push_back({head.connection, response});
    return;
  }
  keys_.erase(key);
}

// ---- leader changes ---------------------------------------------------------------

void ClusterModel::see_epoch(std::uint64_t epoch) {
  if (epoch <= epoch_) return;
  epoch_ = epoch;
  for (auto& [key, state] : keys_) {
    for (auto& w : state.queue) {
      if (w.epoch < epoch_ && !w.detached_at) w.detached_at = clock_;
    }
  }
}

void ClusterModel::belong(Waiter& waiter, std::uint64_t epoch) {
  waiter.epoch = epoch;
  if (epoch >= epoch_) {
    waiter.detached_at.reset();
  } else if (!waiter.detached_at) {
    waiter.detached_at = clock_;
  }
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
      text += fmt::format("  waiter {} owner {} lease {} deadline {} connection {} epoch {}", w.id, w.owner,
                          w.lease_ms.value, w.deadline.value, w.connection.value, w.epoch);
      text += w.detached_at ? fmt::format(" detached {}\n", w.detached_at->value) : "\n";
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
