#include "model/explorer_state.hpp"

#include <algorithm>
#include <array>
#include <span>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace lockstep {

namespace {

bool same_waiter(const StateView::Waiting& a, const StateView::Waiting& b) {
  return a.key == b.key && a.owner == b.owner && a.lease_ms == b.lease_ms &&
         a.deadline_ms == b.deadline_ms && a.conn == b.conn;
}

// Queue(w, k): key k's FIFO queue, head first.
std::vector<StateView::Waiting> queue_of(const std::vector<StateView::Waiting>& waiters,
                                         std::uint8_t key) {
  std::vector<StateView::Waiting> queue;
  for (const auto& w : waiters) {
    if (w.key == key) queue.push_back(w);
  }
  return queue;
}

using SentSpan = std::span<const StateView::Sent>;

// Deferred: what a step sent that answers waiters rather than its own request.
SentSpan deferred_of(const StateView& after, StepKind kind) {
  const SentSpan sent(after.sent);
  if (kind == StepKind::tick) return sent;
  if (kind == StepKind::release && !sent.empty()) return sent.subspan(1);
  return {};
}

std::size_t count_waiting(const std::vector<StateView::Waiting>& waiters, std::uint8_t conn,
                          std::uint8_t owner, std::uint8_t key) {
  return static_cast<std::size_t>(std::count_if(waiters.begin(), waiters.end(), [&](const auto& w) {
    return w.conn == conn && w.owner == owner && w.key == key;
  }));
}

std::size_t count_answers(SentSpan sent, std::string_view kinds,
                          std::uint8_t conn, std::uint8_t owner, std::uint8_t key) {
  return static_cast<std::size_t>(std::count_if(sent.begin(), sent.end(), [&](const auto& s) {
    return kinds.find(s.kind) != std::string_view::npos && s.conn == conn && s.owner == owner &&
           s.key == key;
  }));
}

bool contains(const std::vector<std::int64_t>& values, std::int64_t value) {
  return std::binary_search(values.begin(), values.end(), value);
}

void put(std::string& bytes, std::uint64_t value, int width) {
  for (int i = 0; i < width; ++i) bytes.push_back(static_cast<char>(value >> (8 * i) & 0xffu));
}

std::optional<PropertyFailure> failure(std::string property, std::string detail) {
  return PropertyFailure{std::move(property), std::move(detail)};
}

// ---- the state invariants, one function each, named as in the spec ---------

std::optional<PropertyFailure> type_ok(const StateView& v, const SpecBounds& b) {
  const auto n_keys = b.keys.size(), n_owners = b.owners.size(), n_conns = b.conns.size();
  if (v.clock_ms < 0 || v.clock_ms > b.max_time_ms) return failure("TypeOK", "clock out of range");
  if (v.next_token < 1 || v.next_token > b.token_bound()) {
    return failure("TypeOK", "nextToken out of range");
  }
  for (const auto& e : v.keys) {
    if (e.key >= n_keys || e.holder >= n_owners) return failure("TypeOK", "unknown key or holder");
    if (e.token < 1 || e.token >= v.next_token) return failure("TypeOK", "a key's token was not issued");
    if (e.expiry_ms < 1 || e.expiry_ms > b.max_time_ms + b.leases_ms.back()) {
      return failure("TypeOK", "expiry out of range");
    }
  }
  for (const auto& w : v.waiters) {
    if (w.key >= n_keys || w.owner >= n_owners || w.conn >= n_conns || !contains(b.leases_ms, w.lease_ms) ||
        w.deadline_ms < 1 || w.deadline_ms > b.max_time_ms) {
      return failure("TypeOK", "a waiter out of range");
    }
  }
  if (v.open >> n_conns != 0) return failure("TypeOK", "an unknown connection is open");
  for (const auto& s : v.sent) {
    if (std::string_view("ATBRN").find(s.kind) == std::string_view::npos || s.conn >= n_conns ||
        (s.owner != no_owner && s.owner >= n_owners) || s.key >= n_keys ||
        s.token > b.token_bound()) {
      return failure("TypeOK", fmt::format("a response out of range (kind {})", s.kind));
    }
  }
  return std::nullopt;
}

std::optional<PropertyFailure> at_most_one_holder(const StateView& v) {
  for (std::size_t i = 0; i < v.sent.size(); ++i) {
    if (v.sent[i].kind != 'A') continue;
    for (std::size_t j = i + 1; j < v.sent.size(); ++j) {
      if (v.sent[j].kind == 'A' && v.sent[j].key == v.sent[i].key) {
        return failure("AtMostOneHolder", "one step granted a key twice");
      }
    }
    const auto* entry = v.find(v.sent[i].key);
    if (entry == nullptr || entry->token != v.sent[i].token || entry->holder != v.sent[i].owner) {
      return failure("AtMostOneHolder", "a grant is not the key's holder after the step");
    }
  }
  return std::nullopt;
}

std::optional<PropertyFailure> tokens_unique(const StateView& v) {
  for (std::size_t i = 0; i < v.keys.size(); ++i) {
    if (v.keys[i].token >= v.next_token) return failure("TokensUnique", "a token not yet issued is held");
    for (std::size_t j = i + 1; j < v.keys.size(); ++j) {
      if (v.keys[i].token == v.keys[j].token) return failure("TokensUnique", "two keys share a token");
    }
  }
  for (std::size_t i = 0; i < v.sent.size(); ++i) {
    for (std::size_t j = i + 1; j < v.sent.size(); ++j) {
      if (v.sent[i].kind == 'A' && v.sent[j].kind == 'A' && v.sent[i].token == v.sent[j].token) {
        return failure("TokensUnique", "one step granted one token twice");
      }
    }
  }
  return std::nullopt;
}

std::optional<PropertyFailure> capacity_respected(const StateView& v, const SpecBounds& b) {
  if (v.keys.size() > b.max_keys) return failure("CapacityRespected", "more than MaxKeys keys");
  for (std::uint8_t k = 0; k < b.keys.size(); ++k) {
    if (v.queue_length(k) > b.max_waiters_per_key) {
      return failure("CapacityRespected", "a queue longer than MaxWaitersPerKey");
    }
  }
  if (v.waiters.size() > b.max_waiters) return failure("CapacityRespected", "more than MaxWaiters waiters");
  return std::nullopt;
}

// ---- the step properties --------------------------------------------------

std::optional<PropertyFailure> tokens_increase(const StateView& before, const StateView& after) {
  if (after.next_token < before.next_token) return failure("TokensIncrease", "nextToken went back");
  std::uint64_t last = 0;
  for (const auto& s : after.sent) {
    if (s.kind != 'A') continue;
    if (s.token < before.next_token || s.token >= after.next_token) {
      return failure("TokensIncrease", fmt::format("token {} was not newly issued", s.token));
    }
    if (s.token <= last) return failure("TokensIncrease", "a step's grants are not in token order");
    last = s.token;
  }
  for (const auto& e : after.keys) {
    const auto* old = before.find(e.key);
    if (e.token < before.next_token && (old == nullptr || old->token != e.token)) {
      return failure("TokensIncrease", fmt::format("key got an old token {}", e.token));
    }
  }
  return std::nullopt;
}

std::optional<PropertyFailure> fifo_handoff(const StateView& before, const StateView& after,
                                            SentSpan deferred) {
  for (const auto& grant : deferred) {
    if (grant.kind != 'A') continue;
    std::vector<StateView::Waiting> live;  // the key's queue once due waiters timed out
    for (const auto& w : queue_of(before.waiters, grant.key)) {
      if (w.deadline_ms > after.clock_ms) live.push_back(w);
    }
    if (live.empty()) return failure("FIFOHandoff", "a hand-off to nobody still waiting");
    if (live.front().conn != grant.conn || live.front().owner != grant.owner) {
      return failure("FIFOHandoff", "the key went to a waiter that is not the head");
    }
    const auto rest = queue_of(after.waiters, grant.key);
    if (!std::equal(rest.begin(), rest.end(), live.begin() + 1, live.end(), same_waiter)) {
      return failure("FIFOHandoff", "the queue after a hand-off is not the old queue minus its head");
    }
  }
  return std::nullopt;
}

std::optional<PropertyFailure> no_early_expiry(const StateView& before, const StateView& after) {
  for (const auto& e : before.keys) {
    if (e.expiry_ms <= after.clock_ms) continue;
    const auto* now = after.find(e.key);
    if (now != nullptr && now->token == e.token) continue;
    const bool released = std::any_of(after.sent.begin(), after.sent.end(), [&](const auto& s) {
      return s.kind == 'R' && s.key == e.key && s.token == e.token;
    });
    if (!released) return failure("NoEarlyExpiry", "a live holder lost its key without a release");
  }
  return std::nullopt;
}

std::optional<PropertyFailure> answered_once_and_in_time(const StateView& before,
                                                         const StateView& after,
                                                         SentSpan deferred,
                                                         const SpecBounds& b) {
  const bool grew = after.waiters.size() == before.waiters.size() + 1;
  for (std::uint8_t c = 0; c < b.conns.size(); ++c) {
    for (std::uint8_t o = 0; o < b.owners.size(); ++o) {
      for (std::uint8_t k = 0; k < b.keys.size(); ++k) {
        const auto answers = count_answers(deferred, "AT", c, o, k);
        if (after.is_open(c)) {
          const std::size_t appended =
              grew && after.waiters.back().conn == c && after.waiters.back().owner == o &&
                      after.waiters.back().key == k
                  ? 1
                  : 0;
          if (count_waiting(before.waiters, c, o, k) + appended !=
              count_waiting(after.waiters, c, o, k) + answers) {
            return failure("AnsweredAtMostOnce",
                           fmt::format("waiters of ({}, {}, {}) and their answers do not balance",
                                       b.conns[c], b.owners[o], b.keys[k]));
          }
        } else if (answers != 0) {
          return failure("AnsweredAtMostOnce", "an answer went to a closed connection");
        }
        const auto due = static_cast<std::size_t>(
            std::count_if(before.waiters.begin(), before.waiters.end(), [&](const auto& w) {
              return w.conn == c && w.owner == o && w.key == k && w.deadline_ms <= after.clock_ms;
            }));
        if (count_answers(deferred, "T", c, o, k) != due) {
          return failure("AnsweredInTime",
                         fmt::format("({}, {}, {}): {} waiter(s) due at {} but {} T sent",
                                     b.conns[c], b.owners[o], b.keys[k], due, after.clock_ms,
                                     count_answers(deferred, "T", c, o, k)));
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<PropertyFailure> busy_only_at_limit(const StateView& before, const StateView& after,
                                                  const SpecBounds& b) {
  for (const auto& s : after.sent) {
    if (s.kind != 'B') continue;
    const bool at_limit = before.find(s.key) == nullptr
                              ? before.keys.size() >= b.max_keys
                              : before.queue_length(s.key) >= b.max_waiters_per_key ||
                                    before.waiters.size() >= b.max_waiters;
    if (!at_limit) return failure("BusyOnlyAtLimit", "B below every limit");
  }
  return std::nullopt;
}

}  // namespace

const StateView::Entry* StateView::find(std::uint8_t key) const {
  for (const auto& e : keys) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

std::size_t StateView::queue_length(std::uint8_t key) const {
  return static_cast<std::size_t>(
      std::count_if(waiters.begin(), waiters.end(), [&](const Waiting& w) { return w.key == key; }));
}

std::uint8_t NameTable::index_in(const std::vector<std::string>& names, const std::string& name) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<std::uint8_t>(i);
  }
  throw std::logic_error("the model used a name outside the bounds: " + name);
}

void view_of(const Model& model, std::uint32_t open, const Outputs& sent, const NameTable& names,
             StateView& view) {
  view.clock_ms = model.now().value;
  view.next_token = model.next_token().value;
  const auto sweep_ms = model.limits().sweep_ms.value;
  view.next_sweep_ms = (view.clock_ms / sweep_ms + 1) * sweep_ms;
  view.open = open;
  view.keys.clear();
  view.waiters.clear();
  // Each key's queue is in queueing order already; merging them by the
  // model's queued_order gives the global order, of which the view keeps
  // the order only (not the numbers).
  const auto& keys = model.keys();
  std::array<std::pair<const Model::Key*, std::size_t>, 8> cursors{};  // (key, next waiter)
  std::size_t n = 0;
  for (const auto& [key, state] : keys) {
    view.keys.push_back({names.key(key), names.owner(state.holder), state.token.value,
                         state.expiry.value});
    cursors[n++] = {&state, 0};
  }
  while (true) {
    std::size_t best = n;
    for (std::size_t i = 0; i < n; ++i) {
      const auto& [state, next] = cursors[i];
      if (next == state->queue.size()) continue;
      if (best == n || state->queue[next].queued_order <
                           cursors[best].first->queue[cursors[best].second].queued_order) {
        best = i;
      }
    }
    if (best == n) break;
    const auto& w = cursors[best].first->queue[cursors[best].second++];
    view.waiters.push_back({view.keys[best].key, names.owner(w.owner), w.lease_ms.value,
                            w.deadline.value, static_cast<std::uint8_t>(w.connection.value - 1)});
  }
  view.sent.clear();
  for (const auto& out : sent) {
    const auto& r = out.response;
    view.sent.push_back({static_cast<char>(r.kind), static_cast<std::uint8_t>(out.connection.value - 1),
                         r.owner.empty() ? no_owner : names.owner(r.owner),
                         r.kind == ResponseKind::error ? std::uint8_t{0} : names.key(r.key),
                         r.token.value});
  }
}

void encode(const StateView& v, std::string& bytes) {
  bytes.clear();
  put(bytes, static_cast<std::uint64_t>(v.clock_ms), 4);
  put(bytes, v.next_token, 4);
  put(bytes, static_cast<std::uint64_t>(v.next_sweep_ms), 4);
  put(bytes, v.keys.size(), 1);
  for (const auto& e : v.keys) {
    put(bytes, e.key, 1);
    put(bytes, e.holder, 1);
    put(bytes, e.token, 4);
    put(bytes, static_cast<std::uint64_t>(e.expiry_ms), 4);
  }
  put(bytes, v.waiters.size(), 1);
  for (const auto& w : v.waiters) {
    put(bytes, w.key, 1);
    put(bytes, w.owner, 1);
    put(bytes, static_cast<std::uint64_t>(w.lease_ms), 4);
    put(bytes, static_cast<std::uint64_t>(w.deadline_ms), 4);
    put(bytes, w.conn, 1);
  }
  put(bytes, v.open, 1);
  put(bytes, v.sent.size(), 1);
  for (const auto& s : v.sent) {
    put(bytes, static_cast<std::uint8_t>(s.kind), 1);
    put(bytes, s.conn, 1);
    put(bytes, s.owner, 1);
    put(bytes, s.key, 1);
    put(bytes, s.token, 4);
  }
}

std::string describe(const StateView& v, const SpecBounds& b) {
  std::string text = fmt::format("clock={} nextToken={} nextSweep={} keys={{", v.clock_ms,
                                 v.next_token, v.next_sweep_ms);
  for (std::size_t i = 0; i < v.keys.size(); ++i) {
    const auto& e = v.keys[i];
    text += fmt::format("{}{}: {} token {} expiry {}", i == 0 ? "" : ", ", b.keys[e.key],
                        b.owners[e.holder], e.token, e.expiry_ms);
  }
  text += "} waiters=<<";
  for (std::size_t i = 0; i < v.waiters.size(); ++i) {
    const auto& w = v.waiters[i];
    text += fmt::format("{}{} {} lease {} deadline {} on {}", i == 0 ? "" : ", ", b.keys[w.key],
                        b.owners[w.owner], w.lease_ms, w.deadline_ms, b.conns[w.conn]);
  }
  text += ">> open={";
  bool first = true;
  for (std::uint8_t c = 0; c < b.conns.size(); ++c) {
    if (!v.is_open(c)) continue;
    text += fmt::format("{}{}", first ? "" : ", ", b.conns[c]);
    first = false;
  }
  return text + "}";
}

void count_step(const StateView& before, const StateView& after, StepKind kind,
                const SpecBounds& bounds, Coverage& coverage) {
  for (const auto& s : after.sent) {
    if (s.kind == 'T' && kind == StepKind::tick) ++coverage.timeouts;
    if (s.kind == 'A' && kind == StepKind::tick) ++coverage.sweep_handoffs;
    if (s.kind == 'A' && kind == StepKind::release) ++coverage.release_handoffs;
    if (s.kind == 'A' && kind == StepKind::acquire && before.find(s.key) != nullptr) {
      ++coverage.takeovers;
    }
    if (s.kind != 'B') continue;
    if (before.find(s.key) == nullptr) {
      ++coverage.busy_max_keys;
    } else {
      // Attributed to the per-key limit when both are reached.
      if (before.queue_length(s.key) >= bounds.max_waiters_per_key) {
        ++coverage.busy_max_waiters_per_key;
      } else if (before.waiters.size() >= bounds.max_waiters) {
        ++coverage.busy_max_waiters;
      }
    }
  }
  if (kind == StepKind::tick) {
    for (const auto& e : before.keys) {
      if (after.find(e.key) == nullptr) ++coverage.sweep_deletions;
    }
  }
  if (kind == StepKind::close && after.waiters.size() < before.waiters.size()) {
    ++coverage.closes_dropping_waiters;
  }
}

std::string describe(const Coverage& c) {
  return fmt::format(
      "takeovers {}, release hand-offs {}, sweep hand-offs {}, sweep deletions {}, timeouts {}, "
      "B at max_keys {}, B at max_waiters_per_key {}, B at max_waiters {}, closes dropping "
      "waiters {}",
      c.takeovers, c.release_handoffs, c.sweep_handoffs, c.sweep_deletions, c.timeouts,
      c.busy_max_keys, c.busy_max_waiters_per_key, c.busy_max_waiters, c.closes_dropping_waiters);
}

std::optional<PropertyFailure> check_state(const StateView& view, const SpecBounds& bounds) {
  if (auto f = type_ok(view, bounds)) return f;
  if (auto f = at_most_one_holder(view)) return f;
  if (auto f = tokens_unique(view)) return f;
  if (auto f = capacity_respected(view, bounds)) return f;
  for (const auto& w : view.waiters) {
    if (w.deadline_ms <= view.clock_ms) {
      return failure("WaitersBeforeDeadline", "a waiter is still queued at its deadline");
    }
  }
  if (view.clock_ms > 0 && view.clock_ms == view.next_sweep_ms - bounds.sweep_ms) {
    for (const auto& e : view.keys) {
      if (e.expiry_ms <= view.clock_ms) {
        return failure("ExpiredKeysSwept", fmt::format("{} is expired after a sweep", bounds.keys[e.key]));
      }
    }
  }
  // EveryWaiterAnswered, bounded: requests wait at most until MaxTime and time
  // is fair, so at MaxTime every waiter has had its answer.
  if (view.clock_ms == bounds.max_time_ms && !view.waiters.empty()) {
    return failure("EveryWaiterAnswered", "a waiter is left when the clock stops");
  }
  return std::nullopt;
}

std::optional<PropertyFailure> check_step(const StateView& before, const StateView& after,
                                          StepKind kind, const SpecBounds& bounds) {
  const auto deferred = deferred_of(after, kind);
  if (auto f = tokens_increase(before, after)) return f;
  if (auto f = fifo_handoff(before, after, deferred)) return f;
  if (auto f = no_early_expiry(before, after)) return f;
  if (auto f = answered_once_and_in_time(before, after, deferred, bounds)) return f;
  if (auto f = busy_only_at_limit(before, after, bounds)) return f;
  return std::nullopt;
}

}  // namespace lockstep
