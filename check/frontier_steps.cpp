// Simple mode's rules (frontier.cpp) for one step of the server at an
// instant: a response emitted and matched to what was observed, a request
// handled (an acquire on a free or a held key, a release), the key handed
// off, the wait timeouts and the sweep. Apart from the instants they are
// taken at (frontier.cpp), which decide only when and in what order.
#include "check/frontier_internal.hpp"

#include "impl/assert.hpp"

namespace lockstep::history::simple_frontier {

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

}  // namespace lockstep::history::simple_frontier
