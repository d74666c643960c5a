#include "model/cluster_model.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

namespace lockstep::model {

ClusterModel::ClusterModel(Limits limits, Token first_token) : limits_(limits), next_token_(first_token) {
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

// ---- requests -----------------------------------------------------------------

void ClusterModel::acquire(const cluster::Acquire& command, Outputs& out) {
  const auto answer = [&](Response response) { out.push_back({command.connection, std::move(response)}); };
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
  state.queue.push_back(Waiter{next_waiter_++, command.owner, command.lease_ms, clock_ + command.wait_ms,
                               command.connection});
}

void ClusterModel::release(const cluster::Release& command, Outputs& out) {
  auto found = keys_.find(command.key);
  if (found == keys_.end() || found->second.token != command.token) {
    out.push_back({command.connection, Response::not_held(command.token, command.key)});
    return;
  }
  out.push_back({command.connection, Response::released(command.token, command.key)});
  pass_on(command.key, out);
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
  out.push_back({waiter->connection, Response::timed_out(waiter->owner, command.key)});
  queue.erase(waiter);
}

void ClusterModel::close(const cluster::Close& command) {
  for (auto& [key, state] : keys_) {
    std::erase_if(state.queue, [&](const Waiter& w) { return w.connection == command.connection; });
  }
}

// ---- passing a key on ---------------------------------------------------------------

void ClusterModel::pass_on(const std::string& key, Outputs& out) {
  Key& state = keys_.at(key);
  while (!state.queue.empty()) {
    const Waiter head = state.queue.front();
    state.queue.pop_front();
    if (clock_ >= head.deadline) {
      // CONTRACT "Time": at now >= deadline a waiter is answered T, never granted.
      out.push_back({head.connection, Response::timed_out(head.owner, key)});
      continue;
    }
    state.holder = head.owner;
    state.token = new_token();
    state.granted_at = clock_;
    state.expiry = clock_ + head.lease_ms;
    out.push_back({head.connection, Response::granted(state.token, head.owner, key)});
    return;
  }
  keys_.erase(key);
}

Token ClusterModel::new_token() {
  const Token token = next_token_;
  ++next_token_.value;
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

}  // namespace lockstep::model
