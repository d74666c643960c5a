// Simple mode's rules for the per-key search (frontier_search.hpp carries
// the search itself, shared with cluster mode): what a configuration of one
// server is, and how it moves one server instant at a time. At each
// instant, in the contract's order, a configuration first fires what is due
// (wait timeouts, then the sweep, for the phases that sweep then), then
// handles any of its available requests and closes, in any order. Each
// response the contract gives must match an observation on its connection
// (or may go unseen); configurations that can no longer explain what was
// observed die. Between instants where nothing can happen, the frontier
// jumps ahead. Only these rules live here, so that what differs from
// cluster mode (sweep phases, closes, what is owed by when) reads apart
// from what both share.
#include "check/frontier.hpp"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "check/cluster_frontier.hpp"
#include "check/fingerprint.hpp"
#include "check/frontier_search.hpp"
#include "check/index_set.hpp"
#include "impl/assert.hpp"

namespace lockstep::history {

namespace {

// Answers looked at when asking whether a pending request can still be
// answered; past it the request is taken to be answerable.
constexpr std::size_t lookahead_max = 64;

struct Holder {
  std::int32_t request = -1;    // the grant's request; -1: the key is not registered
  std::uint64_t token = 0;      // 0: the grant's answer was not seen
  std::int64_t lo = 0, hi = 0;  // the grant's instant lies in [lo, hi]
  friend bool operator==(const Holder&, const Holder&) = default;
};

struct Waiter {
  std::uint32_t request = 0;
  std::int64_t lo = 0, hi = 0;  // queued at an instant of [lo, hi]
  friend bool operator==(const Waiter&, const Waiter&) = default;
};

// A configuration stands for every assignment of instants within its
// intervals and every phase of its set.
// Waiters are kept in queue order.
struct Config : ConfigCore<Holder, Waiter, PrefixSet> {
  PhaseSet phases;
};

using Configs = std::vector<Config>;

Fingerprint fingerprint(const Config& c, bool with_phases, bool blank) {
  FingerprintBuilder print;
  fingerprint_core(print, c, blank);
  if (with_phases) {
    for (const auto& [low, high] : c.phases.ranges()) {
      print.add(static_cast<std::uint64_t>(low));
      print.add(static_cast<std::uint64_t>(high));
    }
  }
  return print.finish();
}

// Simple mode's rules, for the search of frontier_search.hpp.
class Frontier : public FrontierSearch<Frontier, Config> {
 public:
  Frontier(const KeyInput& input, const KeyOracles& oracles, const PhaseSet& phases, const KeyCheckOptions& options)
      : FrontierSearch(input, oracles, options), initial_phases_(phases) {
    close_lo_.assign(in_.conns.size(), unbounded_ms);
    close_hi_.assign(in_.conns.size(), unbounded_ms);
    for (std::uint32_t conn = 0; conn < in_.conns.size(); ++conn) {
      const auto& connection = in_.conns[conn];
      for (std::size_t k = 1; k < connection.requests.size(); ++k) {
        previous_[connection.requests[k]] = static_cast<std::int32_t>(connection.requests[k - 1]);
      }
      if (!connection.closes) continue;
      if (connection.closed_by_server) {
        // The server ended it before the end was read.
        close_lo_[conn] = 0;
        close_hi_[conn] = latest_cause_ms(connection.end_us);
      } else {
        // The tester closed it: the server reads the close after the lines
        // before it, and drops the connection's waiters within the tolerance.
        close_lo_[conn] = floor_ms(connection.end_us);
        close_hi_[conn] = close_lo_[conn] + 1 + in_.tolerance_ms;
      }
      for (const auto request : connection.requests) latest_[request] = std::min(latest_[request], close_hi_[conn]);
    }
    find_later_latest();
  }

 private:
  friend class FrontierSearch<Frontier, Config>;

  std::uint32_t conn_of(std::uint32_t request) const { return in_.requests[request].conn; }
  std::int64_t lease_of(const Holder& holder) const {
    return in_.requests[static_cast<std::uint32_t>(holder.request)].lease_ms;
  }
  std::int64_t wait_of(const Waiter& waiter) const { return in_.requests[waiter.request].wait_ms; }

  // Whether the tester stopped watching `conn` before a response caused at
  // `at` had to arrive (docs/protocol.md, "Black box, in real time": each
  // request the rules answer gets an answer). A connection a prefix cut
  // may still have any answer given at once on its way; one the target's
  // stop ended, any answer caused within the tolerance of the stop. On a
  // connection the tester watched to its end (or the server closed), what
  // a request is answered at once is due within the tolerance of its
  // sending, and its wait's `T` within the tolerance of its deadline
  // counted from then: a server that handles a request later than that
  // does not escape by it (the silent pass of a server that answers
  // nothing).
  bool may_be_unseen(std::uint32_t conn, std::int64_t at, Cause cause, std::uint32_t request) const {
    const auto& connection = in_.conns[conn];
    const auto end_us = connection.end_us;
    const auto tolerance = in_.tolerance_ms;
    const bool deferred = cause != Cause::request;
    if (connection.cut && !deferred) return true;
    if (connection.cut || connection.stopped) return (at + 1 + tolerance) * 1000 > end_us;
    // Without a stated bound on how late a request is read, the tolerance
    // covers the whole way: the request's sending is the cause of what it
    // is answered at once, and its wait counts from then.
    const std::int64_t read_by = read_by_ms(request);
    if (!deferred) at = std::min(at, read_by);
    if (cause == Cause::deadline) at = std::min(at, read_by + in_.requests[request].wait_ms);
    return (at + 1 + tolerance) * 1000 > end_us;
  }

  // The instant a request counts as read by, for what it is owed: its
  // sending, or the stated bound on reading when the history gives one.
  std::int64_t read_by_ms(std::uint32_t request) const {
    return earliest_[request] + (in_.handled_within_ms >= 0 ? in_.handled_within_ms + 1 : 0);
  }
  // Whether a close read at `at` may drop `waiter`: not when its `T` was
  // owed, counted from when it was read (may_be_unseen), more than the
  // tolerance before. A server that queued it late does not escape its
  // answer by the close.
  bool may_drop(const Waiter& waiter, std::int64_t at) const {
    const auto& connection = in_.conns[conn_of(waiter.request)];
    if (connection.cut || connection.stopped) return true;
    const std::int64_t owed = std::min(waiter.hi, read_by_ms(waiter.request)) + wait_of(waiter);
    return owed + 1 + in_.tolerance_ms > at;
  }

  // The first observation of `conn` not yet explained, as a position in
  // the connection's list.
  std::vector<std::uint32_t>::const_iterator first_unexplained(const Config& c, std::uint32_t conn) const {
    const auto& list = in_.conns[conn].observations;
    auto it = std::lower_bound(list.begin(), list.end(), c.observed.mark);
    while (it != list.end() && c.observed.contains(*it)) ++it;
    return it;
  }

  void emit(Config c, std::uint32_t conn, ResponseKind kind, std::uint32_t owner, std::uint64_t token, std::int64_t at,
            Cause cause, std::uint32_t request, Configs& out, std::int32_t cause_request = -1,
            bool optional = false, std::uint64_t swept_holder = 0) const;
  void grant(Config c, std::uint32_t request, std::int64_t at, Cause cause, Configs& out,
             std::int32_t cause_request = -1) const;
  void handle(Config c, std::uint32_t request, std::int64_t at, Configs& out) const;
  void acquire(Config c, std::uint32_t request, std::int64_t at, Configs& out) const;
  void acquire_held(Config c, std::uint32_t request, std::int64_t at, Configs& out) const;
  void release(Config c, std::uint32_t request, std::int64_t at, Configs& out) const;
  void release_holder(Config c, std::uint32_t request, std::int64_t at, Configs& out, bool optional = false) const;
  void hand_off(Config c, std::int64_t at, Cause cause, std::int32_t cause_request, Configs& out) const;
  bool waiter_viable(const Config& c, std::uint32_t request, std::int64_t at) const;
  bool answer_possible(const Config& c, std::uint32_t request, std::int64_t from) const;

  void fire_timeouts(Config c, std::size_t from, std::int64_t at, Configs& out);
  void sweep(Config c, std::int64_t at, Configs& out) const;
  void inputs(Config c, std::int64_t at, Configs& out, std::size_t& orders);
  std::vector<std::uint32_t> available(const Config& c, std::int64_t at) const;
  bool pending_is_long(const Config& c, std::int64_t at) const;
  std::vector<std::uint32_t> closable(const Config& c, std::int64_t at) const;
  bool inert(const Config& before, const Config& after) const {
    return before.holder == after.holder && before.queue == after.queue && before.last_token == after.last_token &&
           before.phases == after.phases;
  }
  bool sole_claimant(const Config& c, std::uint32_t request, std::int64_t received_us) const;
  bool answer_is_its_own(const Config& c, std::uint32_t request, const Config& answered) const;

  bool alive(const Config& c, std::int64_t at) const;
  static std::uint64_t bytes_of(const Config& c);
  // What came instead of a failure kept (fail, in frontier_search.hpp).
  void explain_failure(const Config& c) const;
  std::int32_t same_class_pending(const Config& c, std::uint32_t conn, ResponseKind kind, std::uint32_t owner,
                                  std::uint64_t token) const;
  std::int64_t next_instant(const Configs& frontier, std::int64_t at) const;
  void bulk_sweep(Config c, std::int64_t first, std::int64_t last, Configs& out) const;
  bool is_final(const Config& c) const;

  std::string describe(const Config& c, std::int64_t at) const;
  std::string instead_of(const Config& c, std::uint32_t observation) const;

  // The search's hooks (frontier_search.hpp).
  void begin(Configs& frontier, std::int64_t) const { frontier.front().phases = initial_phases_; }
  void fire_due(Config c, std::int64_t at, Configs& out) { fire_timeouts(std::move(c), 0, at, out); }
  void settle(Configs&, std::int64_t) const {}
  std::int64_t advance(Configs& frontier, std::int64_t at) const;
  void add_final(const Config& c, Configs& finals) const { finals.push_back(c); }
  void explained(const Configs& finals, KeyVerdict& verdict) const;
  // Configurations equal but for their phases become one with both phase
  // sets (exact); a box keeps its phases (they are part of its key).
  Fingerprint merge_key(const Config& c) const { return fingerprint(c, false, blank_none); }
  Fingerprint box_key(const Config& c) const { return fingerprint(c, true, blank_all); }
  Fingerprint expansion_key(const Config& c) const { return fingerprint(c, true, blank_none); }
  static void merge_equal(Config& into, const Config& other) { into.phases.unite(other.phases); }
  static void merge_box(Config&, const Config&) {}
  // Boxes keep the order of the holder's grant and the waiters' queueing
  // (frontier_search.hpp): boxes that lost it passed histories the
  // reference rejects (tests/history/reference_regressions_test.cpp).
  static constexpr bool keep_order_in_boxes = true;

  PhaseSet initial_phases_;
  std::vector<std::int64_t> close_lo_, close_hi_;  // per connection: when the server drops its waiters
};

// The contract sends `kind` on `conn`, caused at `at`. Responses on one
// connection arrive in the order the server produced them, so an answer
// given at once can match only the first observation of this key on the
// connection not yet explained, or one read in the same millisecond (the
// order among the answers of one instant is free). A deferred answer (a
// hand-off, a timeout, a sweep's grant) arrives within 1 + tolerance ms of
// its cause, and within that time it may be overtaken by responses the
// server produced later (docs/protocol.md, "Black box, in real time"): it can
// match any observation not yet explained that arrived in time.
void Frontier::emit(Config c, std::uint32_t conn, ResponseKind kind, std::uint32_t owner, std::uint64_t token,
                    std::int64_t at, Cause cause, std::uint32_t request, Configs& out, std::int32_t cause_request,
                    bool optional, std::uint64_t swept_holder) const {
  const bool deferred = cause != Cause::request;
  const auto& list = in_.conns[conn].observations;
  const auto first = first_unexplained(c, conn);
  // Read no earlier than the grid's slack before its instant, and never
  // before the request it answers, or the release that caused it, was sent.
  std::int64_t from_us = std::max(at * 1000 - grid_slack_us, in_.requests[request].sent_us);
  if (cause_request >= 0) from_us = std::max(from_us, in_.requests[static_cast<std::uint32_t>(cause_request)].sent_us);
  const std::int64_t until_us = deferred ? (at + 1 + in_.tolerance_ms) * 1000 : unbounded_ms;
  bool any = false;
  if (first != list.end()) {
    const std::int64_t first_ms = floor_ms(in_.observations[*first].received_us);
    for (auto it = first; it != list.end(); ++it) {
      const auto& seen = in_.observations[*it];
      // Arrival times on one connection only grow (build.cpp): past the
      // tolerance, nothing later can be this answer.
      if (seen.arrived_from_us > until_us) break;
      if (!deferred && floor_ms(seen.received_us) != first_ms) break;
      if (seen.received_us < from_us || c.observed.contains(*it) || !matches(c, seen, kind, owner, token)) continue;
      Config matched = c;
      matched.observed.insert(*it);
      ++matched.explained;
      if (kind == ResponseKind::granted) {
        matched.holder.token = seen.token;
        matched.last_token = seen.token;
        note_grant(*it, at, at, swept_holder);
      }
      record(matched, Step{at, static_cast<std::int32_t>(request), static_cast<std::int32_t>(*it), 'a'});
      out.push_back(std::move(matched));
      any = true;
    }
  }
  // Unseen when the connection's observation ended before it could have
  // arrived; an answer given at once only when nothing of this key arrives
  // after it (what arrives later was produced later, and so behind it).
  if (may_be_unseen(conn, at, cause, request) && (deferred || first == list.end())) {
    out.push_back(std::move(c));
    return;
  }
  // An alternative that only may apply (a `B` a global limit may explain, a
  // release with a token no grant showed) failing says nothing.
  if (any || optional) return;
  KeyFailure failure;
  failure.kind = KeyFailure::Kind::missing;
  failure.cause = cause;
  failure.response = kind;
  failure.conn = conn;
  failure.owner = owner;
  failure.token = token;
  failure.at_ms = at;
  failure.due_by_us = deferred ? until_us : -1;
  failure.request = static_cast<std::int32_t>(request);
  failure.cause_request = cause_request;
  fail(c, failure);
}

// The first observation on `conn` not yet explained that answers the same
// owner (A, T, B) or token (R, N) as `kind` would: what came instead.
std::int32_t Frontier::same_class_pending(const Config& c, std::uint32_t conn, ResponseKind kind, std::uint32_t owner,
                                          std::uint64_t token) const {
  const auto& list = in_.conns[conn].observations;
  for (auto it = first_unexplained(c, conn); it != list.end(); ++it) {
    if (c.observed.contains(*it)) continue;
    const auto& seen = in_.observations[*it];
    if (names_owner(kind) ? names_owner(seen.kind) && seen.owner == owner
                          : !names_owner(seen.kind) && seen.token == token) {
      return static_cast<std::int32_t>(*it);
    }
  }
  return -1;
}

void Frontier::explain_failure(const Config& c) const {
  if (failure_.kind == KeyFailure::Kind::unexplained && failure_.observation >= 0) {
    failure_.instead = instead_of(c, static_cast<std::uint32_t>(failure_.observation));
  }
  if (failure_.kind == KeyFailure::Kind::missing) {
    failure_.got = same_class_pending(c, failure_.conn, failure_.response, failure_.owner, failure_.token);
  }
}

void Frontier::grant(Config c, std::uint32_t request, std::int64_t at, Cause cause, Configs& out,
                     std::int32_t cause_request) const {
  // A sweep's hand-off: the expired holder's token, for the order of one
  // sweep across keys (tokens.cpp).
  const std::uint64_t swept_holder = cause == Cause::sweep ? c.holder.token : 0;
  c.holder = Holder{static_cast<std::int32_t>(request), 0, at, at};
  emit(std::move(c), conn_of(request), ResponseKind::granted, in_.requests[request].owner, 0, at, cause, request, out,
       cause_request, false, swept_holder);
}

void Frontier::handle(Config c, std::uint32_t request, std::int64_t at, Configs& out) const {
  c.handled.insert(request);
  record(c, Step{at, static_cast<std::int32_t>(request), -1, 'h'});
  if (in_.requests[request].acquire) {
    acquire(std::move(c), request, at, out);
  } else {
    release(std::move(c), request, at, out);
  }
}

// Simple mode points 1-5: a free key is granted (or `B` when a new key would pass
// max_keys); an expired holder is taken over in place, waiters or not.
void Frontier::acquire(Config c, std::uint32_t request, std::int64_t at, Configs& out) const {
  const auto& asked = in_.requests[request];
  if (!c.held()) {
    if (oracles_.keys_may_be_full && oracles_.keys_may_be_full(at)) {
      emit(c, asked.conn, ResponseKind::busy, asked.owner, 0, at, Cause::request, request, out, -1, true);
    }
    grant(std::move(c), request, at, Cause::request, out);
    return;
  }
  // Expired at `at` when granted at or before at - lease.
  const std::int64_t expired_by = at - lease_of(c.holder);
  if (c.holder.lo <= expired_by) {
    Config taken = c;
    grant(std::move(taken), request, at, Cause::request, out);
  }
  if (c.holder.hi > expired_by) {
    c.holder.lo = std::max(c.holder.lo, expired_by + 1);
    acquire_held(std::move(c), request, at, out);
  }
}

void Frontier::acquire_held(Config c, std::uint32_t request, std::int64_t at, Configs& out) const {
  const auto& asked = in_.requests[request];
  if (asked.wait_ms == 0) {
    emit(std::move(c), asked.conn, ResponseKind::timed_out, asked.owner, 0, at, Cause::request, request, out);
    return;
  }
  if (c.queue.size() >= in_.limits.max_waiters_per_key) {
    emit(std::move(c), asked.conn, ResponseKind::busy, asked.owner, 0, at, Cause::request, request, out);
    return;
  }
  if (oracles_.waiters_may_be_full && oracles_.waiters_may_be_full(at)) {
    emit(c, asked.conn, ResponseKind::busy, asked.owner, 0, at, Cause::request, request, out, -1, true);
  }
  if (!waiter_viable(c, request, at)) return;
  // Kept in request order, not queue order: the queue order is what the
  // waiters' instants allow, decided at each hand-off (hand_off). Two
  // configurations that differ only in the order of waiters queued at
  // overlapping instants are then one.
  c.queue.insert(std::upper_bound(c.queue.begin(), c.queue.end(), request,
                                  [](std::uint32_t r, const Waiter& w) { return r < w.request; }),
                 Waiter{request, at, at});
  out.push_back(std::move(c));
}

// A waiter queued at `at` is owed a `T` at its deadline or an `A` before;
// it is queued only if its connection shows such an answer not yet
// explained, or may have ended before one arrived, or drops it first; and
// never when a `B` for its owner is read that only it can have caused.
bool Frontier::waiter_viable(const Config& c, std::uint32_t request, std::int64_t at) const {
  const auto& asked = in_.requests[request];
  const std::int64_t deadline = at + asked.wait_ms;
  // A `B` for its owner that no other request can have caused is its
  // answer: queued, it would leave that `B` unexplained for good.
  const auto& seen_on_conn = in_.conns[asked.conn].observations;
  for (auto it = first_unexplained(c, asked.conn); it != seen_on_conn.end(); ++it) {
    const auto& seen = in_.observations[*it];
    if (c.observed.contains(*it) || seen.kind != ResponseKind::busy || seen.owner != asked.owner) continue;
    if (sole_claimant(c, request, seen.received_us)) return false;
    break;
  }
  if (may_be_unseen(asked.conn, deadline, Cause::deadline, request) ||
      (close_lo_[asked.conn] < deadline && may_drop(Waiter{request, at, at}, close_lo_[asked.conn]))) {
    return true;
  }
  const std::int64_t until_us = (deadline + 1 + in_.tolerance_ms) * 1000;
  const auto& list = in_.conns[asked.conn].observations;
  for (auto it = first_unexplained(c, asked.conn); it != list.end(); ++it) {
    const auto& seen = in_.observations[*it];
    if (seen.arrived_from_us > until_us) break;
    if (seen.owner != asked.owner || c.observed.contains(*it)) continue;
    if (seen.kind == ResponseKind::timed_out && seen.received_us >= deadline * 1000 - grid_slack_us) return true;
    if (seen.kind == ResponseKind::granted && seen.received_us >= at * 1000 - grid_slack_us &&
        seen.arrived_from_us <= deadline * 1000 + in_.tolerance_ms * 1000) {
      return true;
    }
  }
  // Queued here, it is owed a `T` at its deadline at the latest.
  KeyFailure failure;
  failure.kind = KeyFailure::Kind::missing;
  failure.cause = KeyFailure::Cause::deadline;
  failure.response = ResponseKind::timed_out;
  failure.conn = asked.conn;
  failure.owner = asked.owner;
  failure.at_ms = deadline;
  failure.due_by_us = until_us;
  failure.request = static_cast<std::int32_t>(request);
  fail(c, failure);
  return false;
}

// Simple mode points 6-7: the holder's token releases (even an expired holder's, on a
// key not yet swept); any other token, or a free key, is `N`.
void Frontier::release(Config c, std::uint32_t request, std::int64_t at, Configs& out) const {
  const auto& asked = in_.requests[request];
  if (c.held() && c.holder.token == asked.token) {
    release_holder(std::move(c), request, at, out);
    return;
  }
  if (c.held() && c.holder.token == 0 && asked.token > c.last_token &&
      !(oracles_.token_was_seen && oracles_.token_was_seen(asked.token))) {
    // The holder's grant was never seen: its token may be this one, if no
    // grant seen anywhere carried it and it is above the key's tokens so far.
    // Issued then, it is the key's last token so far: a later grant must
    // carry a larger one.
    Config same = c;
    same.holder.token = asked.token;
    same.last_token = asked.token;
    release_holder(std::move(same), request, at, out, true);
  }
  emit(std::move(c), asked.conn, ResponseKind::not_held, 0, asked.token, at, Cause::request, request, out);
}

void Frontier::release_holder(Config c, std::uint32_t request, std::int64_t at, Configs& out, bool optional) const {
  const auto& asked = in_.requests[request];
  Configs answered;
  emit(std::move(c), asked.conn, ResponseKind::released, 0, asked.token, at, Cause::request, request, answered, -1,
       optional);
  for (auto& next : answered) {
    if (next.queue.empty()) {
      next.holder = Holder{};
      out.push_back(std::move(next));
    } else {
      hand_off(std::move(next), at, Cause::release, static_cast<std::int32_t>(request), out);
    }
  }
}

// The head waiter gets the key at `at`, with a new token (FIFO: timeouts due
// at `at` fired before, so every waiter is still waiting). The queue is kept
// in request order, and the head is any waiter that may have been queued
// first: no other was certainly queued before it (its whole interval
// earlier), and none sent before it on its connection is still waiting.
// Choosing heads this way one hand-off after another always leaves an order
// of instants inside the intervals (each choice narrows the others: they
// were queued no earlier than the head), so FIFO is judged exactly.
void Frontier::hand_off(Config c, std::int64_t at, Cause cause, std::int32_t cause_request, Configs& out) const {
  for (std::size_t h = 0; h < c.queue.size(); ++h) {
    const Waiter head = c.queue[h];
    LOCKSTEP_ASSERT(head.lo + wait_of(head) > at);
    const bool may_be_first = std::none_of(c.queue.begin(), c.queue.end(), [&](const Waiter& other) {
      return other.hi < head.lo ||
             (other.request < head.request && conn_of(other.request) == conn_of(head.request));
    });
    if (!may_be_first) continue;
    Config next = c;
    next.queue.erase(next.queue.begin() + static_cast<std::ptrdiff_t>(h));
    for (auto& other : next.queue) other.lo = std::max(other.lo, head.lo);
    grant(std::move(next), head.request, at, cause, out, cause_request);
  }
}

// Wait timeouts due at `at` fire in queue order: a waiter whose deadline
// interval holds `at` either times out now or, where its deadline is later,
// waits on.
void Frontier::fire_timeouts(Config c, std::size_t from, std::int64_t at, Configs& out) {
  if (!spend(c)) return;
  for (std::size_t j = from; j < c.queue.size(); ++j) {
    const auto wait = wait_of(c.queue[j]);
    LOCKSTEP_ASSERT(c.queue[j].hi + wait >= at);
    if (c.queue[j].lo + wait > at) continue;
    if (c.queue[j].hi + wait > at) {
      Config later = c;
      later.queue[j].lo = at - wait + 1;
      fire_timeouts(std::move(later), j + 1, at, out);
    }
    const Waiter due = c.queue[j];
    c.queue.erase(c.queue.begin() + static_cast<std::ptrdiff_t>(j));
    record(c, Step{at, static_cast<std::int32_t>(due.request), -1, 't'});
    Configs answered;
    const auto& asked = in_.requests[due.request];
    emit(std::move(c), asked.conn, ResponseKind::timed_out, asked.owner, 0, at, Cause::deadline, due.request, answered);
    for (auto& next : answered) fire_timeouts(std::move(next), j, at, out);
    return;
  }
  sweep(std::move(c), at, out);
}

// Simple mode point 8: for the phases that sweep at `at`, an expired holder goes:
// the key to the head waiter, or deleted. A holder whose grant interval
// straddles its expiry splits into the part still valid and the expired.
void Frontier::sweep(Config c, std::int64_t at, Configs& out) const {
  if (!c.held() || !c.phases.contains_instant(at)) {
    out.push_back(std::move(c));
    return;
  }
  const std::int64_t expired_by = at - lease_of(c.holder);
  if (c.holder.lo > expired_by) {
    out.push_back(std::move(c));
    return;
  }
  if (c.holder.hi > expired_by) {
    Config valid = c;
    valid.holder.lo = expired_by + 1;
    out.push_back(std::move(valid));
    c.holder.hi = expired_by;
  }
  Config unswept = c;
  unswept.phases.forbid_instants(at, at);
  if (!unswept.phases.empty()) out.push_back(std::move(unswept));
  c.phases.require_one_of(at, at);
  record(c, Step{at, -1, -1, 's'});
  if (c.queue.empty()) {
    c.holder = Holder{};
    out.push_back(std::move(c));
    return;
  }
  hand_off(std::move(c), at, Cause::sweep, -1, out);
}

std::vector<std::uint32_t> Frontier::available(const Config& c, std::int64_t at) const {
  std::vector<std::uint32_t> found;
  if (pending_is_long(c, at)) {
    // Many requests sent and not handled (a server that answers nothing):
    // the first unhandled request of each connection, found per connection.
    for (const auto& connection : in_.conns) {
      const auto& list = connection.requests;
      auto it = std::lower_bound(list.begin(), list.end(), c.handled.mark);
      while (it != list.end() && c.handled.contains(*it)) ++it;
      if (it != list.end() && earliest_[*it] <= at) found.push_back(*it);
    }
    std::sort(found.begin(), found.end());
    return found;
  }
  return ready(c, at);
}

// Whether more requests were sent and not handled than there are
// connections: then visiting the first unhandled request of each connection
// is cheaper than visiting every unhandled one.
bool Frontier::pending_is_long(const Config& c, std::int64_t at) const {
  const auto sent = static_cast<std::size_t>(std::upper_bound(earliest_.begin(), earliest_.end(), at) - earliest_.begin());
  return sent > c.handled.mark && sent - c.handled.mark > 2 * in_.conns.size() + 16;
}

// Connections whose close the server may read at `at`: all their requests
// handled, waiters of theirs queued (a close that drops nothing changes
// nothing), inside the close's window.
std::vector<std::uint32_t> Frontier::closable(const Config& c, std::int64_t at) const {
  std::vector<std::uint32_t> found;
  for (const auto& waiter : c.queue) {
    const auto conn = conn_of(waiter.request);
    if (close_lo_[conn] > at || std::find(found.begin(), found.end(), conn) != found.end()) continue;
    const auto& requests = in_.conns[conn].requests;
    if (!requests.empty() && !c.handled.contains(requests.back())) continue;
    found.push_back(conn);
  }
  std::sort(found.begin(), found.end());
  return found;
}

// Whether `request` is the only request that can be answered by an
// observation read at `received_us` on its connection: no other request of
// the same class (the owner of an acquire, the token of a release) on that
// connection waits in the queue, nor is still to be handled and could have
// caused it (sent before it arrived, within the grid's slack).
bool Frontier::sole_claimant(const Config& c, std::uint32_t request, std::int64_t received_us) const {
  const auto& asked = in_.requests[request];
  const auto same_class = [&](const KeyRequest& other) {
    return other.conn == asked.conn && other.acquire == asked.acquire &&
           (asked.acquire ? other.owner == asked.owner : other.token == asked.token);
  };
  if (asked.acquire && std::any_of(c.queue.begin(), c.queue.end(), [&](const Waiter& waiter) {
        return waiter.request != request && same_class(in_.requests[waiter.request]);
      })) {
    return false;
  }
  const auto& requests = in_.conns[asked.conn].requests;
  for (auto it = std::lower_bound(requests.begin(), requests.end(), c.handled.mark); it != requests.end(); ++it) {
    const auto other = *it;
    if (other == request || c.handled.contains(other)) continue;
    // Matched as the search matches (an answer may be read up to the grid's
    // slack before the instant that caused it); sent in order, none later
    // can claim it.
    if (earliest_[other] * 1000 - grid_slack_us > received_us) break;
    if (same_class(in_.requests[other])) return false;
  }
  return true;
}

// Whether the observation that `answered` (c with `request` handled) newly
// explains can be no other request's answer. Otherwise a later request may
// be the one it answers, and `request`, handled later, may get another
// answer (queued rather than `B` once a timeout frees a place).
bool Frontier::answer_is_its_own(const Config& c, std::uint32_t request, const Config& answered) const {
  const auto& observations = in_.conns[in_.requests[request].conn].observations;
  for (auto it = first_unexplained(c, in_.requests[request].conn); it != observations.end(); ++it) {
    if (answered.observed.contains(*it) && !c.observed.contains(*it)) {
      return sole_claimant(c, request, in_.observations[*it].received_us);
    }
  }
  return false;
}

// The requests and closes handled at `at`, in every order. A request whose
// handling now changes nothing but the observation it explains (an inert
// answer: a `T` on a held key, an `N`, a `B`), and has no other outcome, is
// handled now without a branch when the observation it explains can be no
// other request's answer: handling it later then reaches the same
// configurations or fewer (its answer must be that observation, and later
// it changes nothing either).
void Frontier::inputs(Config c, std::int64_t at, Configs& out, std::size_t& orders) {
  const bool idle = (c.handled.mark >= in_.requests.size() || earliest_[c.handled.mark] > at) &&
                    std::all_of(c.queue.begin(), c.queue.end(),
                                [&](const Waiter& waiter) { return close_lo_[conn_of(waiter.request)] > at; });
  if (idle) {
    out.push_back(std::move(c));  // nothing to handle at this instant
    return;
  }
  if (!expand(c, orders, "requests")) return;
  std::vector<std::pair<std::uint32_t, Configs>> moves;
  for (bool again = true; again;) {
    again = false;
    moves.clear();
    for (const auto request : available(c, at)) {
      Configs next;
      handle(c, request, at, next);
      if (next.size() == 1 && next.front().explained > c.explained && inert(c, next.front()) &&
          answer_is_its_own(c, request, next.front())) {
        c = std::move(next.front());
        again = true;
        break;
      }
      moves.emplace_back(request, std::move(next));
    }
  }
  for (auto& [request, next] : moves) {
    for (auto& config : next) inputs(std::move(config), at, out, orders);
  }
  for (const auto conn : closable(c, at)) {
    if (std::any_of(c.queue.begin(), c.queue.end(),
                    [&](const Waiter& waiter) { return conn_of(waiter.request) == conn && !may_drop(waiter, at); })) {
      continue;
    }
    Config closed = c;
    std::erase_if(closed.queue, [&](const Waiter& waiter) { return conn_of(waiter.request) == conn; });
    record(closed, Step{at, -1, -1, 'c'});
    inputs(std::move(closed), at, out, orders);
  }
  out.push_back(std::move(c));  // nothing more at this instant
}

std::uint64_t Frontier::bytes_of(const Config& c) {
  return sizeof(Config) + c.queue.capacity() * sizeof(Waiter) +
         (c.handled.extra.capacity() + c.observed.extra.capacity()) * sizeof(std::uint32_t) +
         c.phases.ranges().capacity() * sizeof(std::pair<std::int64_t, std::int64_t>);
}

// Whether a request not yet handled after `from - 1` can still get its
// answer: an observation of its class not yet explained that late enough a
// handling explains, or a connection that may end before the answer.
bool Frontier::answer_possible(const Config& c, std::uint32_t request, std::int64_t from) const {
  const auto& asked = in_.requests[request];
  const auto& connection = in_.conns[asked.conn];
  if (connection.cut || connection.stopped) return true;
  // Handled as late as it may be, its answer given at once may not be due
  // before the observation ended.
  const std::int64_t last = std::max(from, latest_[request]);
  if (may_be_unseen(asked.conn, last, Cause::request, request)) return true;
  // Queued, it may be dropped when its connection closes before its `T` is
  // owed, or time out unseen.
  if (asked.acquire && asked.wait_ms > 0 &&
      (close_lo_[asked.conn] < std::min(last, read_by_ms(request)) + asked.wait_ms + 1 + in_.tolerance_ms ||
       may_be_unseen(asked.conn, last + asked.wait_ms, Cause::deadline, request))) {
    return true;
  }
  std::size_t looked = 0;
  const auto& list = connection.observations;
  for (auto it = first_unexplained(c, asked.conn); it != list.end(); ++it) {
    if (++looked > lookahead_max) return true;
    const auto& seen = in_.observations[*it];
    if (c.observed.contains(*it)) continue;
    const bool same = asked.acquire ? names_owner(seen.kind) && seen.owner == asked.owner
                                    : (seen.kind == ResponseKind::released || seen.kind == ResponseKind::not_held) &&
                                          seen.token == asked.token;
    if (!same) continue;
    const std::int64_t delay = seen.kind == ResponseKind::timed_out ? asked.wait_ms : 0;
    if (latest_cause_ms(seen.received_us) - delay >= from) return true;
  }
  return false;
}

// After instant `at`: every observation that nothing later can cause is
// explained, every request that had to be handled by now is, and every
// pending request can still be answered.
bool Frontier::alive(const Config& c, std::int64_t at) const {
  if (c.observed.mark < in_.observations.size() &&
      latest_cause_ms(in_.observations[c.observed.mark].received_us) <= at) {
    return die(c, at, KeyFailure::Kind::unexplained, -1, static_cast<std::int32_t>(c.observed.mark));
  }
  std::uint32_t i = c.handled.mark;
  if (pending_is_long(c, at)) {
    // Only the first unhandled request of each connection: the later ones
    // have later latest instants (requests of a connection are handled in
    // order), and whether they can be answered is asked when they are first.
    for (const auto first : available(c, at)) {
      if (latest_[first] <= at || !answer_possible(c, first, at + 1)) {
        return die(c, at, KeyFailure::Kind::unhandled, static_cast<std::int32_t>(first), -1);
      }
    }
    i = static_cast<std::uint32_t>(std::upper_bound(earliest_.begin(), earliest_.end(), at) - earliest_.begin());
  }
  for (; i < in_.requests.size() && earliest_[i] <= at; ++i) {
    if (c.handled.contains(i)) continue;
    if (latest_[i] <= at || !answer_possible(c, i, at + 1)) {
      return die(c, at, KeyFailure::Kind::unhandled, static_cast<std::int32_t>(i), -1);
    }
  }
  if (later_latest_[i] <= at) {
    while (latest_[i] > at) ++i;
    return die(c, at, KeyFailure::Kind::unhandled, static_cast<std::int32_t>(i), -1);
  }
  for (const auto& waiter : c.queue) {
    if (close_hi_[conn_of(waiter.request)] <= at) {
      return die(c, at, KeyFailure::Kind::unhandled, static_cast<std::int32_t>(waiter.request), -1);
    }
  }
  return true;
}

// The next instant at which some configuration may act: a request sent,
// one pending, a deadline, a close, or a sweep that hands the key over.
std::int64_t Frontier::next_instant(const Configs& frontier, std::int64_t at) const {
  const std::int64_t soon = at + 1;
  std::int64_t next = next_sent(at);
  for (const auto& c : frontier) {
    if (c.handled.mark < in_.requests.size() && earliest_[c.handled.mark] <= at) return soon;
    for (const auto& waiter : c.queue) {
      next = std::min(next, std::max(soon, waiter.lo + wait_of(waiter)));
      next = std::min(next, std::max(soon, close_lo_[conn_of(waiter.request)]));
    }
    if (c.held() && !c.queue.empty()) {
      next = std::min(next, c.phases.next_instant(std::max(soon, c.holder.lo + lease_of(c.holder)), next));
    }
    if (next <= soon) return soon;
  }
  return std::max(soon, next);
}

// The next instant; the instants jumped over may see a sweep (bulk_sweep).
std::int64_t Frontier::advance(Configs& frontier, std::int64_t at) const {
  const std::int64_t next = next_instant(frontier, at);
  if (next > at + 1) {
    Configs passed;
    for (auto& c : frontier) bulk_sweep(std::move(c), at + 1, next - 1, passed);
    merge(passed);
    frontier = std::move(passed);
  }
  return next;
}

// Instants [first, last] pass with nothing handled: a holder without waiters
// that expires there may be swept, which deletes the key. Where the sweep
// is ruled out, it is ruled out only at instants where the holder is
// certainly expired (forbidding less never refuses an explanation).
void Frontier::bulk_sweep(Config c, std::int64_t first, std::int64_t last, Configs& out) const {
  if (!c.held() || !c.queue.empty()) {
    out.push_back(std::move(c));
    return;
  }
  const std::int64_t lease = lease_of(c.holder);
  const std::int64_t may_from = std::max(first, c.holder.lo + lease);
  if (may_from > last) {
    out.push_back(std::move(c));
    return;
  }
  Config swept = c;
  swept.phases.require_one_of(may_from, last);
  if (!swept.phases.empty()) {
    record(swept, Step{may_from, -1, -1, 's'});
    swept.holder = Holder{};
    out.push_back(std::move(swept));
  }
  c.phases.forbid_instants(std::max(first, c.holder.hi + lease), last);
  if (!c.phases.empty()) out.push_back(std::move(c));
}

// At the end of the history: every observation explained, every request
// left unhandled allowed to be handled after the end, and every waiter
// left queued allowed an answer that was not seen.
bool Frontier::is_final(const Config& c) const {
  if (!explains_all(c)) return false;
  KeyFailure failure;
  failure.at_ms = in_.horizon_ms;
  for (auto i = c.handled.mark; i < in_.requests.size(); ++i) {
    if (!c.handled.contains(i) && (latest_[i] < in_.horizon_ms || !answer_possible(c, i, in_.horizon_ms))) {
      failure.kind = KeyFailure::Kind::unhandled;
      failure.request = static_cast<std::int32_t>(i);
      failure.conn = conn_of(i);
      fail(c, failure);
      return false;
    }
  }
  for (const auto& waiter : c.queue) {
    const auto conn = conn_of(waiter.request);
    if (may_be_unseen(conn, waiter.hi + wait_of(waiter), Cause::deadline, waiter.request) ||
        (close_lo_[conn] < unbounded_ms && may_drop(waiter, close_lo_[conn]))) {
      continue;
    }
    failure.kind = KeyFailure::Kind::missing;
    failure.cause = KeyFailure::Cause::deadline;
    failure.response = ResponseKind::timed_out;
    failure.conn = conn;
    failure.owner = in_.requests[waiter.request].owner;
    failure.at_ms = waiter.hi + wait_of(waiter);
    failure.due_by_us = (failure.at_ms + 1 + in_.tolerance_ms) * 1000;
    failure.request = static_cast<std::int32_t>(waiter.request);
    fail(c, failure);
    return false;
  }
  return true;
}

std::string Frontier::describe(const Config& c, std::int64_t at) const {
  if (!c.held()) return fmt::format("at {} the key is free", instant_text(at));
  const auto& holder = in_.requests[static_cast<std::uint32_t>(c.holder.request)];
  std::string text = fmt::format(
      "at {} the key is held by `{}` (token {}, granted {}, lease {} ms, expiring {})", instant_text(at),
      in_.owners[holder.owner], c.holder.token == 0 ? std::string("unseen") : std::to_string(c.holder.token),
      span_text(c.holder.lo, c.holder.hi), holder.lease_ms, span_text(c.holder.lo + holder.lease_ms, c.holder.hi + holder.lease_ms));
  if (c.queue.empty()) return text + ", no waiters";
  text += ", waiters:";
  for (const auto& waiter : c.queue) {
    const auto& asked = in_.requests[waiter.request];
    text += fmt::format(" `{}` on c{} (deadline {})", in_.owners[asked.owner], in_.conns[asked.conn].id,
                        span_text(waiter.lo + asked.wait_ms, waiter.hi + asked.wait_ms));
  }
  return text;
}

// What configuration `c` says of the owner (A, T, B) or token (R, N) of an
// observation it cannot explain: where that owner stands, and the answer
// the contract gives there instead.
std::string Frontier::instead_of(const Config& c, std::uint32_t observation) const {
  const auto& seen = in_.observations[observation];
  const auto& key = in_.key;
  if (!names_owner(seen.kind)) {
    if (c.held() && c.holder.token != 0 && c.holder.token == seen.token) {
      return fmt::format("token {} is the holder's: a release with it is answered `R {} {}`", seen.token, seen.token, key);
    }
    return fmt::format("no release of token {} awaits an answer there", seen.token);
  }
  const std::string& owner = in_.owners[seen.owner];
  const auto conn_id = in_.conns[seen.conn].id;
  for (std::size_t position = 0; position < c.queue.size(); ++position) {
    const auto& waiter = c.queue[position];
    const auto& asked = in_.requests[waiter.request];
    if (asked.owner != seen.owner || asked.conn != seen.conn) continue;
    const auto deadline = span_text(waiter.lo + asked.wait_ms, waiter.hi + asked.wait_ms);
    if (position > 0) {
      const auto& head = in_.requests[c.queue.front().request];
      return fmt::format("`{}` waits in place {} of the queue, behind `{}` on c{}: a hand-off goes to the head waiter "
                         "first (`A <token> {} {}` on connection {}), and `{}` is answered `T {} {}` at its deadline {} "
                         "if none reaches it",
                         owner, position + 1, in_.owners[head.owner], in_.conns[head.conn].id, in_.owners[head.owner],
                         key, in_.conns[head.conn].id, owner, owner, key, deadline);
    }
    if (c.held()) {
      const auto& holder = in_.requests[static_cast<std::uint32_t>(c.holder.request)];
      return fmt::format("`{}` is the head waiter, but `{}` holds the key until {} at least: `{}` gets `A <token> {} {}` "
                         "at a release or a sweep after that, or `T {} {}` at its deadline {}",
                         owner, in_.owners[holder.owner], instant_text(c.holder.lo + holder.lease_ms), owner, owner, key, owner,
                         key, deadline);
    }
    return fmt::format("`{}` is the head waiter of a free key, its deadline {}", owner, deadline);
  }
  if (c.held()) {
    const auto& holder = in_.requests[static_cast<std::uint32_t>(c.holder.request)];
    if (holder.owner == seen.owner && holder.conn == seen.conn) {
      return fmt::format("`{}` already holds the key there (granted {}), and its grant was answered once", owner,
                         instant_text(c.holder.lo));
    }
  }
  return fmt::format("no request of `{}` on connection {} awaits an answer there", owner, conn_id);
}

// The key is explained by the phases of every final configuration.
void Frontier::explained(const Configs& finals, KeyVerdict& verdict) const {
  verdict.phases = finals.front().phases;
  for (const auto& c : finals) verdict.phases.unite(c.phases);
}

}  // namespace

KeyVerdict check_key(const KeyInput& input, const KeyOracles& oracles, const PhaseSet& phases,
                     const KeyCheckOptions& options) {
  if (input.cluster.on) return check_cluster_key(input, oracles, options);
  return Frontier(input, oracles, phases, options).run();
}

}  // namespace lockstep::history
