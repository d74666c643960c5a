#include "model/client_checker.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace lockstep {

ClientChecker::ClientChecker(const Limits& limits) : limits_(limits) {}

void ClientChecker::violation(TimeMs now, std::string what) {
  violations_.push_back(fmt::format("at {}: {}", now.value, what));
}

bool ClientChecker::live(const std::string& key, TimeMs now) const {
  const auto grant = grants_.find(key);
  return grant != grants_.end() && !grant->second.released && now < grant->second.expiry;
}

std::size_t ClientChecker::queued_on(const std::string& key) const {
  return static_cast<std::size_t>(
      std::count_if(queued_.begin(), queued_.end(), [&](const Queued& q) { return q.key == key; }));
}

std::size_t ClientChecker::live_keys(TimeMs now) const {
  std::size_t count = 0;
  for (const auto& [key, grant] : grants_) count += live(key, now) ? 1 : 0;
  return count;
}

void ClientChecker::on_request(TimeMs now, ConnectionId connection, const Request& request) {
  if (sent_) violation(now, "a request was sent before the previous one was handled");
  closed_[connection] = false;
  Sent sent{now, connection, true, {}, {}, {}, {}, {}, false};
  if (const auto* a = std::get_if<AcquireRequest>(&request)) {
    sent.key = std::string(a->key);
    sent.owner = std::string(a->owner);
    sent.lease_ms = a->lease_ms;
    sent.wait_ms = a->wait_ms;
  } else {
    const auto& r = std::get<ReleaseRequest>(request);
    sent.acquire = false;
    sent.key = std::string(r.key);
    sent.token = r.token;
  }
  sent_ = sent;
}

bool ClientChecker::answers_sent(const Outbound& o) const {
  if (!sent_ || sent_->answered || o.connection != sent_->connection) return false;
  const Response& r = o.response;
  if (r.key != sent_->key) return false;
  if (sent_->acquire) {
    return r.owner == sent_->owner && (r.kind == ResponseKind::granted ||
                                       r.kind == ResponseKind::timed_out ||
                                       r.kind == ResponseKind::busy);
  }
  return r.token == sent_->token &&
         (r.kind == ResponseKind::released || r.kind == ResponseKind::not_held);
}

void ClientChecker::on_response(TimeMs now, const Outbound& o) {
  ++responses_checked_;
  if (closed_[o.connection]) {
    violation(now, fmt::format("'{}' sent on a closed connection", format_response(o.response)));
    return;
  }
  if (o.response.kind == ResponseKind::error) {
    violation(now, fmt::format("unexpected '{}'", format_response(o.response)));
    return;
  }
  if (answers_sent(o)) {
    sent_->answered = true;
    on_immediate(now, o.response);
  } else {
    on_deferred(now, o);
  }
}

void ClientChecker::on_grant(TimeMs now, const std::string& key, Token token, DurationMs lease_ms) {
  if (last_token_ && token <= *last_token_) {
    violation(now, fmt::format("token {} for {} is not greater than the earlier token {}",
                               token.value, key, last_token_->value));
  }
  if (!last_token_ || token > *last_token_) last_token_ = token;
  if (live(key, now)) {
    violation(now, fmt::format("{} granted with token {} while token {} holds it until {}", key,
                               token.value, grants_[key].token.value, grants_[key].expiry.value));
  }
  grants_[key] = Grant{token, now + lease_ms, false};
  // Live keys are among the keys ever granted: count them only when that
  // many could exceed the limit (keeps a grant O(1) in large simulations).
  if (grants_.size() > limits_.max_keys && live_keys(now) > limits_.max_keys) {
    violation(now, fmt::format("more than max_keys={} keys held", limits_.max_keys));
  }
}

void ClientChecker::on_immediate(TimeMs now, const Response& r) {
  const Sent& s = *sent_;
  switch (r.kind) {
    case ResponseKind::granted:
      on_grant(now, s.key, r.token, s.lease_ms);
      return;
    case ResponseKind::timed_out:
      if (s.wait_ms.value > 0) violation(now, fmt::format("T at once for {} {} with wait {}", s.owner, s.key, s.wait_ms.value));
      if (!live(s.key, now)) violation(now, fmt::format("try-lock of {} refused while no grant of it is live", s.key));
      return;
    case ResponseKind::busy: {
      if (s.wait_ms.value == 0 && live(s.key, now)) {
        violation(now, fmt::format("B for a try-lock of held {} (must be T)", s.key));
      }
      // Queueing on a live key is refused only at a waiter limit, and the
      // clients see every queued request, so they can count both.
      if (s.wait_ms.value > 0 && live(s.key, now) && queued_on(s.key) < limits_.max_waiters_per_key &&
          queued_.size() < limits_.max_waiters) {
        violation(now, fmt::format("B for {} {} with {} queued on the key and {} in all, under the limits",
                                   s.owner, s.key, queued_on(s.key), queued_.size()));
      }
      return;
    }
    case ResponseKind::released: {
      auto grant = grants_.find(s.key);
      if (grant == grants_.end() || grant->second.token != r.token || grant->second.released) {
        violation(now, fmt::format("R {} {} for a token that does not hold the key", r.token.value, s.key));
        return;
      }
      grant->second.released = true;
      return;
    }
    case ResponseKind::not_held:
      if (live(s.key, now) && grants_[s.key].token == r.token) {
        violation(now, fmt::format("N {} {} for the live holder's token", r.token.value, s.key));
      }
      return;
    case ResponseKind::error:
      return;
  }
}

void ClientChecker::on_deferred(TimeMs now, const Outbound& o) {
  const Response& r = o.response;
  const auto mine = [&](const Queued& q) {
    return q.connection == o.connection && q.owner == r.owner && q.key == r.key;
  };
  if (r.kind == ResponseKind::timed_out) {
    auto found = std::find_if(queued_.begin(), queued_.end(),
                              [&](const Queued& q) { return mine(q) && q.deadline == now; });
    if (found == queued_.end()) {
      const auto other = std::find_if(queued_.begin(), queued_.end(), mine);
      violation(now, other == queued_.end()
                         ? fmt::format("'{}' answers no queued request", format_response(r))
                         : fmt::format("'{}' at {}, but the request's deadline is {}",
                                       format_response(r), now.value, other->deadline.value));
      if (other != queued_.end()) queued_.erase(other);
      return;
    }
    queued_.erase(found);
    return;
  }
  if (r.kind != ResponseKind::granted) {
    violation(now, fmt::format("'{}' answers no request", format_response(r)));
    return;
  }
  const auto found = std::find_if(queued_.begin(), queued_.end(), mine);
  if (found == queued_.end()) {
    violation(now, fmt::format("'{}' answers no queued request", format_response(r)));
    return;
  }
  const auto head = std::find_if(queued_.begin(), queued_.end(),
                                 [&](const Queued& q) { return q.key == r.key; });
  if (head != found) {
    violation(now, fmt::format("{} handed to {} (queued #{}) before {} (queued #{}): not FIFO",
                               r.key, found->owner, found->order, head->owner, head->order));
  }
  if (now >= found->deadline) {
    violation(now, fmt::format("{} granted to {} at {}, not before its deadline {}", r.key,
                               found->owner, now.value, found->deadline.value));
  }
  // A hand-off follows a release (already seen) or a sweep of an expired
  // grant, so the earlier grant is no longer live: on_grant checks that.
  const Queued taken = *found;
  queued_.erase(found);
  if (const auto holder = grants_.find(r.key);
      holder != grants_.end() && !holder->second.released && holder->second.expiry <= now) {
    on_sweep_handoff(now, r.key, holder->second.token, r.token);
  }
  on_grant(now, r.key, r.token, taken.lease_ms);
}

void ClientChecker::on_sweep_handoff(TimeMs now, const std::string& key, Token holder, Token granted) {
  if (now != sweep_instant_) {
    sweep_instant_ = now;
    sweep_handoffs_.clear();
  }
  for (const auto& earlier : sweep_handoffs_) {
    if ((earlier.holder < holder) != (earlier.granted < granted)) {
      violation(now, fmt::format("the sweep handed {} (holder's token {}) over with token {} and {} (holder's token "
                                 "{}) with token {}: not in the order of their holders' tokens",
                                 earlier.key, earlier.holder.value, earlier.granted.value, key, holder.value,
                                 granted.value));
    }
  }
  sweep_handoffs_.push_back(SweepHandoff{key, holder, granted});
}

void ClientChecker::end_request(TimeMs now) {
  if (!sent_) return;
  const Sent s = *sent_;
  sent_.reset();
  if (s.answered) return;
  if (!s.acquire) {
    violation(now, fmt::format("R {} {} was not answered at once", s.key, s.token.value));
    return;
  }
  if (s.wait_ms.value == 0) {
    violation(now, fmt::format("try-lock {} {} was not answered at once", s.owner, s.key));
    return;
  }
  if (!live(s.key, now)) {
    violation(now, fmt::format("{} {} queued although no grant of {} is live", s.owner, s.key, s.key));
  }
  const auto order = next_order_++;
  queued_.push_back(Queued{order, s.connection, s.owner, s.key, s.lease_ms, s.at + s.wait_ms});
  if (queued_on(s.key) > limits_.max_waiters_per_key) {
    violation(now, fmt::format("more than max_waiters_per_key={} queued on {}", limits_.max_waiters_per_key, s.key));
  }
  if (queued_.size() > limits_.max_waiters) {
    violation(now, fmt::format("more than max_waiters={} queued", limits_.max_waiters));
  }
}

void ClientChecker::on_close(TimeMs, ConnectionId connection) {
  closed_[connection] = true;
  std::erase_if(queued_, [&](const Queued& q) { return q.connection == connection; });
}

void ClientChecker::on_time(TimeMs now) {
  for (auto it = queued_.begin(); it != queued_.end();) {
    if (it->deadline <= now) {
      violation(now, fmt::format("{} {} queued until {} was never answered", it->owner, it->key,
                                 it->deadline.value));
      it = queued_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace lockstep
