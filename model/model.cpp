#include "model/model.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace lockstep {

namespace {

// ---- the model's own reading of the wire syntax (docs/protocol.md, "Wire protocol")

// At most `fields_max` fields (a longer line is no request either way); the
// fields are views into the line, so reading one allocates nothing.
constexpr std::size_t fields_max = 6;
struct Fields {
  std::array<std::string_view, fields_max> at;
  std::size_t count = 0;  // fields_max + 1 when there were more
};

Fields split_on_single_spaces(std::string_view line) {
  Fields fields;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= line.size(); ++i) {
    if (i < line.size() && line[i] != ' ') continue;
    if (fields.count < fields_max) fields.at[fields.count] = line.substr(start, i - start);
    if (fields.count <= fields_max) ++fields.count;
    start = i + 1;
  }
  return fields;
}

bool is_name(std::string_view text) {
  if (text.empty() || text.size() > 250) return false;
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '!' && c <= '~'; });
}

// Digits only, no leading zero but for "0" itself, within [low, high].
std::optional<std::uint64_t> number_in(std::string_view text, std::uint64_t low,
                                       std::uint64_t high) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  if (!std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  if (text.size() > 1 && text[0] == '0') return std::nullopt;
  if (text.size() == 20 && text > "18446744073709551615") return std::nullopt;
  std::uint64_t value = 0;  // cannot overflow: at most 2^64 - 1, checked above
  for (const char c : text) value = value * 10 + static_cast<std::uint64_t>(c - '0');
  if (value < low || value > high) return std::nullopt;
  return value;
}

}  // namespace

Model::Model(Limits limits, Token first_token, InjectedBug bug)
    : limits_(limits), bug_(bug), next_token_(first_token) {
  if (auto error = validate(limits_)) throw std::invalid_argument(*error);
  if (bug_ != InjectedBug::none && bug_ != InjectedBug::lifo_handoff &&
      bug_ != InjectedBug::sweep_before_timeouts) {
    throw std::invalid_argument("the model injects only lifo-handoff and sweep-before-timeouts");
  }
}

LineOutcome Model::on_line(ConnectionId connection, std::string_view line, TimeMs now,
                           Outputs& out) {
  advance(now, out);
  const auto malformed = [&](std::string_view reason) {
    out.push_back({connection, Response::error(reason)});
  };
  if (line.size() > limits_.max_line_bytes) {
    malformed("line too long");
    return LineOutcome::close_connection;
  }
  const auto fields = split_on_single_spaces(line);
  const auto& f = fields.at;
  if (f[0] == "A" && fields.count == 5) {
    const auto lease = number_in(f[3], 1, static_cast<std::uint64_t>(limits_.max_lease_ms.value));
    const auto wait = number_in(f[4], 0, static_cast<std::uint64_t>(limits_.max_wait_ms.value));
    if (!is_name(f[1]) || !is_name(f[2]) || !lease || !wait) {
      malformed("bad acquire");
    } else {
      acquire(connection, f[1], f[2], DurationMs{static_cast<std::int64_t>(*lease)},
              DurationMs{static_cast<std::int64_t>(*wait)}, out);
    }
  } else if (f[0] == "R" && fields.count == 3) {
    const auto token = number_in(f[2], 1, UINT64_MAX);
    if (!is_name(f[1]) || !token) {
      malformed("bad release");
    } else {
      release(connection, f[1], Token{*token}, out);
    }
  } else {
    malformed("unknown request");
  }
  return LineOutcome::keep_open;
}

// ---- requests (docs/protocol.md, "Simple mode") ---------------------------------

void Model::on_acquire(ConnectionId connection, std::string_view key, std::string_view owner,
                       DurationMs lease_ms, DurationMs wait_ms, TimeMs now, Outputs& out) {
  advance(now, out);
  acquire(connection, key, owner, lease_ms, wait_ms, out);
}

void Model::on_release(ConnectionId connection, std::string_view key, Token token, TimeMs now,
                       Outputs& out) {
  advance(now, out);
  release(connection, key, token, out);
}

void Model::acquire(ConnectionId connection, std::string_view key, std::string_view owner,
                    DurationMs lease_ms, DurationMs wait_ms, Outputs& out) {
  // Tokens: once the last one is issued, every acquire is E and changes nothing.
  if (tokens_exhausted_) {
    out.push_back({connection, Response::error("tokens exhausted")});
    return;
  }
  auto found = keys_.find(std::string(key));

  // 1. Unregistered key: register it, grant at once.  5. Unless max_keys are registered.
  if (found == keys_.end()) {
    if (keys_.size() >= limits_.max_keys) {
      out.push_back({connection, Response::busy(owner, key)});
      return;
    }
    const Token token = new_token();
    keys_.emplace(std::string(key), Key{std::string(owner), token, now_, now_ + lease_ms, {}});
    out.push_back({connection, Response::granted(token, owner, key)});
    return;
  }

  Key& state = found->second;
  // 2. Expired holder: taken over in place, at once, even with waiters (who stay queued).
  if (now_ >= state.expiry) {
    state.holder = owner;
    state.token = new_token();
    state.granted_at = now_;
    state.expiry = now_ + lease_ms;
    out.push_back({connection, Response::granted(state.token, owner, key)});
    return;
  }
  // 3. Valid holder, wait = 0: T at once; never queued, never B.
  if (wait_ms.value == 0) {
    out.push_back({connection, Response::timed_out(owner, key)});
    return;
  }
  // 5. Queueing past a waiter limit: B at once, nothing changed.
  if (state.queue.size() >= limits_.max_waiters_per_key || waiter_count() >= limits_.max_waiters) {
    out.push_back({connection, Response::busy(owner, key)});
    return;
  }
  // 4. Valid holder, wait > 0: queued at the tail; answered later. (9: the holder's
  // own owner is queued like anyone else.)
  state.queue.push_back(
      Waiter{std::string(owner), lease_ms, now_ + wait_ms, connection, next_queued_order_++});
  deadlines_.insert(now_ + wait_ms);
}

void Model::release(ConnectionId connection, std::string_view key, Token token, Outputs& out) {
  auto found = keys_.find(std::string(key));
  // 7. Any other token, or an unregistered key: N with the request's token; nothing changes.
  if (found == keys_.end() || found->second.token != token) {
    out.push_back({connection, Response::not_held(token, key)});
    return;
  }
  // 6. The holder's token (expired or not, while the key is registered): R; then the head
  // waiter gets the key at once, or the key is deleted.
  out.push_back({connection, Response::released(token, key)});
  if (found->second.queue.empty()) {
    keys_.erase(found);
  } else {
    give_to_head_waiter(std::string(key), /*from_release=*/true, out);
  }
}

void Model::on_close(ConnectionId connection, TimeMs now, Outputs& out) {
  advance(now, out);
  // 10. The connection's waiters leave their queues silently; held locks stay.
  for (auto& [key, state] : keys_) {
    std::erase_if(state.queue, [&](const Waiter& w) {
      if (w.connection != connection) return false;
      forget_deadline(w.deadline);
      return true;
    });
  }
}

// ---- time (docs/protocol.md, "Time" and point 8) --------------------------------

std::optional<TimeMs> Model::next_due() const {
  if (keys_.empty()) return std::nullopt;
  const auto sweep_ms = limits_.sweep_ms.value;
  TimeMs due{(now_.value / sweep_ms + 1) * sweep_ms};
  if (!deadlines_.empty()) due = std::min(due, *deadlines_.begin());
  return due;
}

void Model::advance(TimeMs now, Outputs& out) {
  if (now < now_) throw std::logic_error("time went back");
  // Time did not move: whatever was due up to now_ has fired, and nothing
  // created at now_ is due before a later instant.
  if (now == now_) return;
  for (auto due = next_due(); due && *due <= now; due = next_due()) {
    now_ = *due;
    // At one instant: wait timeouts first, then the sweep.
    if (bug_ == InjectedBug::sweep_before_timeouts) {
      sweep(out);
      fire_timeouts(out);
    } else {
      fire_timeouts(out);
      sweep(out);
    }
  }
  now_ = now;
}

void Model::fire_timeouts(Outputs& out) {
  // Every waiter whose deadline is now gets T; several at once go in queueing order.
  if (deadlines_.empty() || *deadlines_.begin() > now_) return;
  std::vector<std::pair<std::uint64_t, std::string>> due;  // (queued_order, key)
  for (const auto& [key, state] : keys_) {
    for (const auto& waiter : state.queue) {
      if (waiter.deadline <= now_) due.emplace_back(waiter.queued_order, key);
    }
  }
  std::sort(due.begin(), due.end());
  for (const auto& entry : due) {
    const std::uint64_t order = entry.first;
    const std::string& key = entry.second;
    auto& queue = keys_[key].queue;
    const auto waiter = std::find_if(queue.begin(), queue.end(),
                                     [&](const Waiter& w) { return w.queued_order == order; });
    out.push_back({waiter->connection, Response::timed_out(waiter->owner, key)});
    forget_deadline(waiter->deadline);
    queue.erase(waiter);
  }
}

void Model::sweep(Outputs& out) {
  // 8. Only at k * sweep_ms, k >= 1.
  if (now_.value == 0 || now_.value % limits_.sweep_ms.value != 0) return;
  // Every key whose holder is expired, visited in the order their tokens were issued.
  std::vector<std::pair<Token, std::string>> expired;
  for (const auto& [key, state] : keys_) {
    if (now_ >= state.expiry) expired.emplace_back(state.token, key);
  }
  std::sort(expired.begin(), expired.end());
  for (const auto& [token, key] : expired) {
    if (keys_[key].queue.empty()) {
      keys_.erase(key);  // no waiters: the key is deleted
    } else {
      give_to_head_waiter(key, /*from_release=*/false, out);  // waiters: the head acquires "through expiry"
    }
  }
}

void Model::give_to_head_waiter(const std::string& key, bool from_release, Outputs& out) {
  Key& state = keys_[key];
  if (tokens_exhausted_) {
    // Tokens: no token is left for the next holder. Every waiter hears T now,
    // in queue order, and the key is deleted.
    for (const auto& waiter : state.queue) {
      out.push_back({waiter.connection, Response::timed_out(waiter.owner, key)});
      forget_deadline(waiter.deadline);
    }
    keys_.erase(key);
    return;
  }
  const bool lifo = from_release && bug_ == InjectedBug::lifo_handoff;
  const Waiter waiter = lifo ? state.queue.back() : state.queue.front();
  forget_deadline(waiter.deadline);
  if (lifo) {
    state.queue.pop_back();
  } else {
    state.queue.erase(state.queue.begin());
  }
  state.holder = waiter.owner;
  state.token = new_token();
  state.granted_at = now_;
  state.expiry = now_ + waiter.lease_ms;
  out.push_back({waiter.connection, Response::granted(state.token, waiter.owner, key)});
}

Token Model::new_token() {
  if (tokens_exhausted_) throw std::logic_error("a token was issued after the last one");
  const Token token = next_token_;
  if (token.value == UINT64_MAX) {
    tokens_exhausted_ = true;
  } else {
    ++next_token_.value;
  }
  return token;
}

void Model::restore(TimeMs now, Token next_token, std::map<std::string, Key> keys) {
  now_ = now;
  next_token_ = next_token;
  tokens_exhausted_ = false;
  next_queued_order_ = 0;
  deadlines_.clear();
  for (const auto& [key, state] : keys) {
    for (const auto& waiter : state.queue) {
      next_queued_order_ = std::max(next_queued_order_, waiter.queued_order + 1);
      deadlines_.insert(waiter.deadline);
    }
  }
  keys_ = std::move(keys);
}

std::size_t Model::waiter_count() const {
  return deadlines_.size();
}

void Model::forget_deadline(TimeMs deadline) {
  const auto found = deadlines_.find(deadline);
  if (found == deadlines_.end()) throw std::logic_error("a waiter's deadline was not recorded");
  deadlines_.erase(found);
}

}  // namespace lockstep
