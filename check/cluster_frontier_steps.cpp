// Cluster mode's rules (cluster_frontier.cpp) for one operation applied at
// a visit: its instant placed after the cursor and the operation before it
// on its connection, then an acquire on a free or a held key, a waiter
// queued, a release, and a grant that nobody heard. Apart from the queue's
// moves (cluster_frontier_queue.cpp), which a step calls but which an
// Expire and a Timeout cause too.
#include "check/cluster_frontier_internal.hpp"

#include "impl/assert.hpp"

namespace lockstep::history::cluster_frontier {

bool ClusterFrontier::after_predecessor(Config& c, std::uint32_t var, std::uint32_t request) const {
  const auto previous = previous_[request];
  if (previous < 0) return true;
  const auto before = static_cast<std::uint32_t>(previous);
  if (const auto w = waiter_index(c, before); w >= 0) return c.zone.no_later(waiter_at(static_cast<std::size_t>(w)), var);
  if (const auto k = extra_index(c, "TN", previous); k >= 0) {
    return c.zone.no_later(extra_at(c, static_cast<std::size_t>(k)), var);
  }
  if (const auto k = extra_index(c, "f", std::int64_t{request}); k >= 0) {
    return c.zone.no_later(extra_at(c, static_cast<std::size_t>(k)), var);
  }
  return true;
}

void ClusterFrontier::drop_waiter(Config& c, std::size_t index, bool floor) const {
  const auto request = c.queue[index].request;
  const auto next = next_on_conn_[request];
  if (floor && next >= 0 && !c.handled.contains(static_cast<std::uint32_t>(next))) {
    const auto at = c.zone.add();
    c.zone.copy(at, waiter_at(index));
    c.extras.push_back(Extra{static_cast<std::uint32_t>(next), 'f'});
  }
  c.zone.remove(waiter_at(index));
  c.queue.erase(c.queue.begin() + static_cast<std::ptrdiff_t>(index));
}

// The cursor (a step's instant) comes no earlier than the Timeouts of
// waiters that left at this visit before its steps: the step found them
// gone.
bool ClusterFrontier::after_left(Config& c) const {
  for (std::size_t k = 0; k < c.extras.size(); ++k) {
    if (c.extras[k].kind == 'L' && !c.zone.no_later(extra_at(c, k), cursor_at)) return false;
  }
  return true;
}

// The operation's instant becomes the cursor, after the one before it (the
// cursor saved as an extra until the step ends, commit), within its span
// and after the operation before it on its connection.
void ClusterFrontier::handle(Config c, std::uint32_t request, Span when, Configs& out) const {
  c.handled.insert(request);
  const auto saved = c.zone.add();
  c.zone.copy(saved, cursor_at);
  c.extras.push_back(Extra{request, 'c'});
  c.zone.forget(cursor_at);
  if (!c.zone.no_later(saved, cursor_at) || !c.zone.within(cursor_at, when.lo, when.hi) ||
      !after_predecessor(c, cursor_at, request) || !after_left(c)) {
    return;
  }
  record(c, Step{c.zone.earliest(cursor_at), static_cast<std::int32_t>(request), -1, 'h'});
  if (in_.requests[request].acquire) {
    acquire(std::move(c), request, when, out);
  } else {
    release(std::move(c), request, out);
  }
}

bool ClusterFrontier::commit(Config& c) const {
  const auto k = extra_index(c, "chr");
  LOCKSTEP_ASSERT(k >= 0);
  const auto kind = c.extras[static_cast<std::size_t>(k)].kind;
  if (kind == 'r') c.zone.copy(cursor_at, extra_at(c, static_cast<std::size_t>(k)));
  remove_extra(c, static_cast<std::size_t>(k));
  // Found held at its instant: the holder's Expire had not come by then.
  if (kind == 'h' && c.held() &&
      !late(c, holder_at, cursor_at, lease_of(c.holder.request) + allowance_, c.holder.request, 'e',
            c.zone.earliest(cursor_at))) {
    return false;
  }
  return true;
}

void ClusterFrontier::float_step(Config& c, std::uint32_t request, char kind, std::int32_t observation) const {
  const auto k = static_cast<std::size_t>(extra_index(c, "chr"));
  const auto floating = c.zone.add();
  c.zone.copy(floating, cursor_at);
  c.extras.push_back(Extra{request, kind, observation});
  c.zone.copy(cursor_at, extra_at(c, k));
  remove_extra(c, k);
}

// Cluster mode: a free key is granted (or `B` when a new key would pass
// max_keys); a held key stays held until its Expire, however late.
void ClusterFrontier::acquire(Config c, std::uint32_t request, Span when, Configs& out) const {
  if (!c.held()) {
    if (oracles_.keys_may_be_full && oracles_.keys_may_be_full(c.zone.latest(cursor_at))) {
      emit(c, request, ResponseKind::busy, 0, cursor_at, Cause::request, {}, -1, out, true);
    }
    // The key may be held by a request nobody heard the answer of, granted
    // before (unheard_holder): unless its answer was a grant at once (a
    // waiting acquire's grant may be a hand-off once that holder is gone).
    if (!indeterminate(request) &&
        (observed_kind(c, request) != ResponseKind::granted || in_.requests[request].wait_ms > 0)) {
      for (auto& held : unheard_holder(c, request, 0)) {
        held.extras[static_cast<std::size_t>(extra_index(held, "c"))].kind = 'h';
        acquire_held(std::move(held), request, when, out);
      }
    }
    c.holder = Holder{static_cast<std::int32_t>(request), 0};
    c.zone.copy(holder_at, cursor_at);
    set_queue_floor(c, cursor_at);
    emit(std::move(c), request, ResponseKind::granted, 0, cursor_at, Cause::request, {}, -1, out);
    return;
  }
  c.extras[static_cast<std::size_t>(extra_index(c, "c"))].kind = 'h';
  acquire_held(std::move(c), request, when, out);
}

void ClusterFrontier::acquire_held(Config c, std::uint32_t request, Span when, Configs& out) const {
  const auto& asked = in_.requests[request];
  if (asked.wait_ms == 0) {
    emit(std::move(c), request, ResponseKind::timed_out, 0, cursor_at, Cause::request, {}, -1, out);
    return;
  }
  // `B`, when a limit on waiters is reached. Waiters join the queue lazily
  // (enqueue), so its size at an instant is not known: a `B` to a waiting
  // acquire on a held key is accepted, and a request whose answer was `B`
  // did not queue (a relaxation: a node that answers `B` below its limits,
  // or queues past them, is not seen).
  const auto seen = observed_kind(c, request);
  if (seen == ResponseKind::busy || class_shared_[request]) {
    emit(c, request, ResponseKind::busy, 0, cursor_at, Cause::request, {}, -1, out, seen != ResponseKind::busy);
    if (!class_shared_[request]) return;
  }
  enqueue(std::move(c), request, when, out);
}

// A waiting acquire on a held key joins the queue as soon as it may: at an
// instant from the cursor on, up to the latest it may be applied at (its
// answer), or not yet. Its instant stands for both, so that the waiters of
// a key whose leader is away are one configuration, not one per subset of
// them applied so far: a hand-off may grant it (then it was queued by the
// hand-off) or pass it by (then it was queued after the head), and the key
// going free un-applies it or makes it leave (pass_on_nobody). It takes no
// place among the visit's steps: the cursor comes back (commit).
void ClusterFrontier::enqueue(Config c, std::uint32_t request, Span when, Configs& out) const {
  const auto position = static_cast<std::size_t>(
      std::upper_bound(c.queue.begin(), c.queue.end(), request,
                       [](std::uint32_t r, const Waiter& w) { return r < w.request; }) -
      c.queue.begin());
  const auto var = c.zone.insert(waiter_at(position));
  c.queue.insert(c.queue.begin() + static_cast<std::ptrdiff_t>(position), Waiter{request, {}});
  const auto k = static_cast<std::size_t>(extra_index(c, "ch"));
  c.extras[k].kind = 'r';
  // Queued, it found the key held: granted no later (the cursor, which
  // held that, comes back at commit).
  if (!c.zone.no_later(extra_at(c, k), var) || !c.zone.within(var, when.lo, latest_[request]) ||
      !after_predecessor(c, var, request) || (c.held() && !c.zone.no_later(holder_at, var))) {
    return;
  }
  out.push_back(std::move(c));
}

// Simple mode points 6-7, without the sweep: the holder's token releases
// (until its Expire is applied, however late); any other token is `N`.
void ClusterFrontier::release(Config c, std::uint32_t request, Configs& out) const {
  const auto& asked = in_.requests[request];
  const auto found_held = [&](Config& held) {
    return late(held, holder_at, cursor_at, lease_of(held.holder.request) + allowance_, held.holder.request, 'e',
                held.zone.earliest(cursor_at));
  };
  if (c.held() && c.holder.token == asked.token) {
    if (found_held(c)) release_holder(std::move(c), request, out);
    return;
  }
  const bool unseen_token = asked.token > c.last_token && !(oracles_.token_was_seen && oracles_.token_was_seen(asked.token));
  if (c.held() && c.holder.token == 0 && unseen_token) {
    // The holder's grant was never heard: its token may be this one.
    Config same = c;
    same.holder.token = asked.token;
    if (found_held(same)) release_holder(std::move(same), request, out, true);
  }
  if (!c.held() && unseen_token && !indeterminate(request) && observed_kind(c, request) == ResponseKind::released) {
    // Free, as far as this configuration knows; but a request nobody heard
    // the answer of may hold it, with this token.
    for (auto& held : unheard_holder(c, request, asked.token)) {
      if (found_held(held)) release_holder(std::move(held), request, out, true);
    }
  }
  if (c.held()) c.extras[static_cast<std::size_t>(extra_index(c, "c"))].kind = 'h';
  emit(std::move(c), request, ResponseKind::not_held, asked.token, cursor_at, Cause::request, {}, -1, out);
}

// The free key granted, before the cursor, to a request no answer of which
// arrived (with `token`, when one is known): one configuration per such
// request not applied yet, granted at an instant after it was sent and
// after the key went free. Those requests are not applied on a free key as
// the frontier goes (inputs): a grant nobody heard matters only where a
// later request finds the key held, and is taken there.
Configs ClusterFrontier::unheard_holder(const Config& c, std::uint32_t request, std::uint64_t token) const {
  Configs made;
  for (const auto other : unanswered_) {
    if (other == request || c.handled.contains(other) || !in_.requests[other].acquire ||
        earliest_[other] > c.zone.latest(cursor_at)) {
      continue;
    }
    // Applied in the order sent on its connection (C5): not before the
    // request being applied now, which handle() has already marked handled.
    const auto previous = previous_[other];
    if (previous == static_cast<std::int32_t>(request)) continue;
    if (previous >= 0 && !c.handled.contains(static_cast<std::uint32_t>(previous))) continue;
    Config held = c;
    held.handled.insert(other);
    const auto grant = held.zone.add();
    if (!held.zone.no_later(holder_at, grant) || !held.zone.at_least(grant, earliest_[other]) ||
        !held.zone.no_later(grant, cursor_at) || !after_predecessor(held, grant, other)) {
      continue;
    }
    held.holder = Holder{static_cast<std::int32_t>(other), token};
    held.zone.copy(holder_at, grant);
    held.zone.remove(grant);
    set_queue_floor(held, holder_at);
    record(held, Step{held.zone.earliest(holder_at), static_cast<std::int32_t>(other), -1, 'h'});
    made.push_back(std::move(held));
  }
  return made;
}

void ClusterFrontier::release_holder(Config c, std::uint32_t request, Configs& out, bool optional) const {
  const auto& asked = in_.requests[request];
  Configs answered;
  const auto observed_before = c.observed;
  emit(std::move(c), request, ResponseKind::released, asked.token, cursor_at, Cause::request, {}, -1, answered, optional);
  // The hand-off is on time with the Release itself.
  for (auto& next : answered) {
    keep_grant(next);
    Configs passed;
    const auto read_us = answer_read_us(observed_before, next, request);
    pass_on(std::move(next), Cause::release, static_cast<std::int32_t>(request), OnTime{cursor_at, 0}, passed, read_us);
    for (auto& done : passed) {
      end_grant(done);
      out.push_back(std::move(done));
    }
  }
}

}  // namespace lockstep::history::cluster_frontier
