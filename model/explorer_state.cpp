#include "model/explorer_state.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "impl/assert.hpp"

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

bool contains(const std::vector<std::int64_t>& values, std::int64_t value) {
  return std::binary_search(values.begin(), values.end(), value);
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
  // The spec quantifies over every (connection, owner, key). One that no
  // waiter before or after the step and no deferred answer names has every
  // count 0 and passes, so only those named are tallied, in one pass over
  // each sequence, and checked in the spec's order (the first failure is the
  // one the full loops would report).
  struct Tally {
    std::uint32_t code = 0;  // connection << 16 | owner << 8 | key
    std::size_t waiting_before = 0, waiting_after = 0, answers = 0, timeouts = 0, due = 0;
  };
  thread_local std::vector<Tally> tallies;
  tallies.clear();
  const auto tally = [](std::uint8_t c, std::uint8_t o, std::uint8_t k) -> Tally& {
    const std::uint32_t code = std::uint32_t{c} << 16 | std::uint32_t{o} << 8 | k;
    for (auto& t : tallies) {
      if (t.code == code) return t;
    }
    return tallies.emplace_back(Tally{code});
  };
  for (const auto& w : before.waiters) {
    auto& t = tally(w.conn, w.owner, w.key);
    ++t.waiting_before;
    if (w.deadline_ms <= after.clock_ms) ++t.due;
  }
  // A step appends at most one waiter, its request's: it counts as waiting before.
  if (after.waiters.size() == before.waiters.size() + 1) {
    const auto& w = after.waiters.back();
    ++tally(w.conn, w.owner, w.key).waiting_before;
  }
  for (const auto& w : after.waiters) ++tally(w.conn, w.owner, w.key).waiting_after;
  for (const auto& s : deferred) {
    auto& t = tally(s.conn, s.owner, s.key);
    if (s.kind == 'A' || s.kind == 'T') ++t.answers;
    if (s.kind == 'T') ++t.timeouts;
  }
  std::sort(tallies.begin(), tallies.end(), [](const Tally& x, const Tally& y) { return x.code < y.code; });
  for (const auto& t : tallies) {
    const auto c = static_cast<std::uint8_t>(t.code >> 16);
    const auto o = static_cast<std::uint8_t>(t.code >> 8);
    const auto k = static_cast<std::uint8_t>(t.code);
    if (after.is_open(c)) {
      if (t.waiting_before != t.waiting_after + t.answers) {
        return failure("AnsweredAtMostOnce",
                       fmt::format("waiters of ({}, {}, {}) and their answers do not balance",
                                   b.conns[c], b.owners[o], b.keys[k]));
      }
    } else if (t.answers != 0) {
      return failure("AnsweredAtMostOnce", "an answer went to a closed connection");
    }
    if (t.timeouts != t.due) {
      return failure("AnsweredInTime",
                     fmt::format("({}, {}, {}): {} waiter(s) due at {} but {} T sent", b.conns[c],
                                 b.owners[o], b.keys[k], t.due, after.clock_ms, t.timeouts));
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

NameTable::NameTable(const SpecBounds& bounds)
    : bounds_(bounds), keys_(names_of(bounds.keys)), owners_(names_of(bounds.owners)) {}

NameTable::Name NameTable::name_of(const std::string& text) {
  Name name{text.size(), 0, &text};
  // Byte by byte: a call to memcpy of a variable length costs more than this.
  for (std::size_t i = 0; i < std::min<std::size_t>(text.size(), 8); ++i) {
    name.prefix |= std::uint64_t{static_cast<unsigned char>(text[i])} << (8 * i);
  }
  return name;
}

std::vector<NameTable::Name> NameTable::names_of(const std::vector<std::string>& texts) {
  std::vector<Name> names;
  for (const auto& text : texts) names.push_back(name_of(text));
  return names;
}

std::uint8_t NameTable::index_in(const std::vector<Name>& names, const std::string& text) {
  const Name name = name_of(text);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& candidate = names[i];
    if (candidate.size == name.size && candidate.prefix == name.prefix &&
        (name.size <= 8 || *candidate.text == text)) {
      return static_cast<std::uint8_t>(i);
    }
  }
  unknown_name(text);
}

void NameTable::unknown_name(const std::string& text) {
  throw std::logic_error("the model used a name outside the bounds: " + text);
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

// The widths of encode(): the bounds keep the clock, deadlines and tokens
// below 2^16 (MaxTime and MaxToken are at most 1000), leases and expiries
// below 2^32. A value that does not fit is a bug (TypeOK would fail on it
// too), and must not make two views one: encode() refuses it.
namespace widths {
constexpr int clock = 2, token = 2, lease = 4, count = 1, index = 1;
}

void encode(const StateView& v, std::string& bytes) {
  namespace w = widths;
  const std::size_t size = 2 * w::clock + 3 * w::count + 1 +
                           v.keys.size() * (2 * w::index + w::token + w::lease) +
                           v.waiters.size() * (3 * w::index + w::lease + w::clock) +
                           v.sent.size() * (4 * w::index + w::token);
  bytes.resize(size);
  char* at = bytes.data();
  const auto put = [&at](std::uint64_t value, int width) {
    if (width < 8 && value >> (8 * width) != 0) {
      throw std::logic_error(fmt::format("a view's value {} does not fit in {} bytes", value, width));
    }
    for (int i = 0; i < width; ++i) *at++ = static_cast<char>(value >> (8 * i) & 0xffu);
  };
  // nextSweep is not written: it is a function of the clock (view_of).
  put(static_cast<std::uint64_t>(v.clock_ms), w::clock);
  put(v.next_token, w::token);
  put(v.keys.size(), w::count);
  for (const auto& e : v.keys) {
    put(e.key, w::index);
    put(e.holder, w::index);
    put(e.token, w::token);
    put(static_cast<std::uint64_t>(e.expiry_ms), w::lease);
  }
  put(v.waiters.size(), w::count);
  for (const auto& x : v.waiters) {
    put(x.key, w::index);
    put(x.owner, w::index);
    put(static_cast<std::uint64_t>(x.lease_ms), w::lease);
    put(static_cast<std::uint64_t>(x.deadline_ms), w::clock);
    put(x.conn, w::index);
  }
  put(v.open, 1);
  put(v.sent.size(), w::count);
  for (const auto& s : v.sent) {
    put(static_cast<std::uint8_t>(s.kind), 1);
    put(s.conn, w::index);
    put(s.owner, w::index);
    put(s.key, w::index);
    put(s.token, w::token);
  }
  LOCKSTEP_ASSERT(at == bytes.data() + bytes.size());
}

void decode(std::string_view bytes, std::int64_t sweep_ms, StateView& v) {
  namespace w = widths;
  const char* at = bytes.data();
  const auto get = [&at](int width) {
    std::uint64_t value = 0;
    for (int i = 0; i < width; ++i) value |= std::uint64_t{static_cast<unsigned char>(*at++)} << (8 * i);
    return value;
  };
  const auto byte = [&get] { return static_cast<std::uint8_t>(get(1)); };
  v.clock_ms = static_cast<std::int64_t>(get(w::clock));
  v.next_token = get(w::token);
  v.next_sweep_ms = (v.clock_ms / sweep_ms + 1) * sweep_ms;
  v.keys.resize(get(w::count));
  for (auto& e : v.keys) {
    e.key = byte();
    e.holder = byte();
    e.token = get(w::token);
    e.expiry_ms = static_cast<std::int64_t>(get(w::lease));
  }
  v.waiters.resize(get(w::count));
  for (auto& x : v.waiters) {
    x.key = byte();
    x.owner = byte();
    x.lease_ms = static_cast<std::int64_t>(get(w::lease));
    x.deadline_ms = static_cast<std::int64_t>(get(w::clock));
    x.conn = byte();
  }
  v.open = byte();
  v.sent.resize(get(w::count));
  for (auto& s : v.sent) {
    s.kind = static_cast<char>(byte());
    s.conn = byte();
    s.owner = byte();
    s.key = byte();
    s.token = get(w::token);
  }
  LOCKSTEP_ASSERT(at == bytes.data() + bytes.size());
}

Model model_of(const StateView& v, const SpecBounds& bounds, InjectedBug bug) {
  std::map<std::string, Model::Key> keys;
  for (const auto& e : v.keys) {
    keys.emplace(bounds.keys[e.key], Model::Key{bounds.owners[e.holder], Token{e.token}, TimeMs{0},
                                               TimeMs{e.expiry_ms}, {}});
  }
  std::uint64_t order = 0;
  for (const auto& x : v.waiters) {
    keys.at(bounds.keys[x.key])
        .queue.push_back({bounds.owners[x.owner], DurationMs{x.lease_ms}, TimeMs{x.deadline_ms},
                          connection_of(x.conn), order++});
  }
  Model model(bounds.limits(), Token{1}, bug);
  model.restore(TimeMs{v.clock_ms}, Token{v.next_token}, std::move(keys));
  return model;
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
