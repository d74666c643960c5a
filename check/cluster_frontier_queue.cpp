// Cluster mode's rules (cluster_frontier.cpp) for the queue: the key
// passing on at a release or an Expire (to the head waiter, or nobody), the
// key going free, waiters leaving with their `T` by a Timeout or a Close,
// what is due at a visit, and the Expire. A file of its own: the hand-off
// branches over every waiter that may have left, the largest of the rules.
#include "check/cluster_frontier_internal.hpp"

#include "impl/assert.hpp"

namespace lockstep::history::cluster_frontier {

bool ClusterFrontier::may_leave_by(const Config& c, std::size_t index, std::uint32_t by, std::int64_t gap) const {
  const auto request = c.queue[index].request;
  const auto latest_by = c.zone.latest(by);
  const auto by_ms = latest_by >= Zone::open ? unbounded_ms : latest_by + gap;
  return c.zone.allows_no_later(waiter_at(index), by, gap + allowance_ - wait_of(request)) ||
         leave_by_close_[request] <= by_ms;
}

// The head waiter gets the key, with a new token. The queue is kept in
// request order, and the head is any waiter queued by the hand-off whose
// deadline had not certainly come by then (the hand-off less than its wait
// and the allowance after its queueing): every waiter certainly queued
// before it (by its instant, or sent before it on its connection) must have
// left by now, with its `T` (leave); one that may have been queued before
// it either left by now or was queued after it. The hand-off is at the
// cursor's instant.
void ClusterFrontier::pass_on(Config c, Cause why, std::int32_t cause_request, OnTime on_time, Configs& out,
                              std::int64_t cause_read_us) const {
  if (!unapply_sent_after(c, cause_read_us)) return;
  if (c.queue.empty() && std::none_of(unanswered_.begin(), unanswered_.end(), [&](std::uint32_t u) {
        return !c.handled.contains(u) && in_.requests[u].acquire && in_.requests[u].wait_ms > 0;
      })) {
    c.holder = Holder{};
    free_key(std::move(c), 0, out);
    return;
  }
  // A waiter of the queue: queued by the hand-off, its deadline not
  // certainly come, queued after the head of every hand-off that passed it.
  for (std::size_t h = 0; h < c.queue.size(); ++h) {
    if (!may_be_granted(c, c.queue[h].request)) continue;
    Config base = c;
    const auto head = base.queue[h].request;
    const auto head_at = waiter_at(h);
    if (!base.zone.no_later(head_at, cursor_at) ||
        !base.zone.constrain(head_at, cursor_at, wait_of(head) + allowance_ - 1)) {
      continue;
    }
    const auto queued = base.zone.add();
    base.zone.copy(queued, head_at);
    base.extras.push_back(Extra{head, 'u'});
    drop_waiter(base, h, false);
    hand_to(std::move(base), head, why, cause_request, on_time, out);
  }
  // Or a waiting acquire nobody heard the answer of, queued by now (after
  // the key became held, and after the head of the last hand-off since),
  // not applied as the frontier went (inputs).
  for (const auto other : unanswered_) {
    const auto& asked = in_.requests[other];
    if (c.handled.contains(other) || !asked.acquire || asked.wait_ms == 0 || earliest_[other] > c.zone.latest(cursor_at)) {
      continue;
    }
    const auto previous = previous_[other];
    if (previous >= 0 && !c.handled.contains(static_cast<std::uint32_t>(previous))) continue;
    if (!may_be_granted(c, other)) continue;
    Config base = c;
    const auto queued = base.zone.add();
    base.extras.push_back(Extra{other, 'u'});
    const auto floor = extra_index(base, "Q");
    if (!base.zone.at_least(queued, earliest_[other]) || !base.zone.no_later(queued, cursor_at) ||
        !base.zone.constrain(queued, cursor_at, asked.wait_ms + allowance_ - 1) ||
        (floor >= 0 && !base.zone.no_later(extra_at(base, static_cast<std::size_t>(floor)), queued)) ||
        !after_predecessor(base, queued, other)) {
      continue;
    }
    base.handled.insert(other);
    hand_to(std::move(base), other, why, cause_request, on_time, out);
  }
  // Or nobody, and the key is deleted: each waiter left by now (its
  // deadline had come by the table's clock, or its Close), or was not
  // applied yet (enqueue): it is a request still to apply.
  c.holder = Holder{};
  const auto waiting = c.queue.size();
  pass_on_nobody(std::move(c), waiting, out);
}

// The key goes to `head` at the cursor's instant, the head's queueing in
// the extra 'u'. Every waiter certainly queued before it (by its instant,
// or sent before it on its connection) left by now, with its `T` (leave);
// one that may have been queued before it and may have left by now did one
// or the other (a branch each); the others were queued after it.
void ClusterFrontier::hand_to(Config base, std::uint32_t head, Cause why, std::int32_t cause_request, OnTime on_time,
                              Configs& out) const {
  HandOff hand_off;
  if (!sort_waiters(base, head, hand_off)) return;
  std::erase_if(hand_off.undecided, [&](std::uint32_t other) { return settles_alone(base, other, hand_off); });
  for (auto& [option, leaving] : branch_undecided(std::move(base), hand_off)) {
    const auto before = option.lateness;
    Configs left;
    leave_all(std::move(option), std::move(leaving), left);
    for (auto& next : left) {
      if (hand_off.dominated && std::max(before, hand_off.stay_floor) < next.lateness) {
        next.lateness = std::max(before, hand_off.stay_floor);
        next.late_request = -1;  // a bound of two readings: no one step to name
      }
      grant_head(std::move(next), head, why, cause_request, on_time, out);
    }
  }
}

// The waiters against the head: ahead of it, undecided, or queued after it.
// False when one was queued after the head although it cannot have been
// (the head cannot be).
bool ClusterFrontier::sort_waiters(Config& base, std::uint32_t head, HandOff& hand_off) const {
  const auto head_at = extra_at(base, static_cast<std::size_t>(extra_index(base, "u")));
  for (std::size_t j = 0; j < base.queue.size(); ++j) {
    const auto other = base.queue[j].request;
    bool earlier = base.zone.certainly_before(waiter_at(j), head_at);
    for (auto p = previous_[head]; p >= 0 && !earlier; p = previous_[static_cast<std::uint32_t>(p)]) {
      earlier = static_cast<std::uint32_t>(p) == other;
    }
    if (earlier) {
      hand_off.ahead.push_back(other);
    } else if (base.zone.maybe_before(waiter_at(j), head_at) && may_leave_by(base, j, cursor_at, 0) &&
               (class_shared_[other] || observed_kind(base, other) != ResponseKind::granted)) {
      hand_off.undecided.push_back(other);
    } else if (!base.zone.no_later(head_at, waiter_at(j))) {  // queued after the head
      return false;
    }
  }
  return true;
}

// An undecided one that cannot have left by now (with its `T` as it was
// heard) was queued after the head; one whose leaving tells nothing more of
// the other instants left (finished: that stands for staying too). Both
// hold alike whatever the others do, which constrains only their own
// instants. True when `other` is so settled (and no longer undecided).
bool ClusterFrontier::settles_alone(Config& base, std::uint32_t other, HandOff& hand_off) const {
  const auto head_at = extra_at(base, static_cast<std::size_t>(extra_index(base, "u")));
  const auto j = static_cast<std::size_t>(waiter_index(base, other));
  Configs gone;
  leave(base, j, cursor_at, 0, gone);
  if (gone.empty()) {
    if (!base.zone.no_later(head_at, waiter_at(j))) hand_off.ahead.push_back(other);  // neither: the head cannot be
    return true;
  }
  Config without = base;
  without.zone.remove(waiter_at(j));
  without.queue.erase(without.queue.begin() + static_cast<std::ptrdiff_t>(j));
  if (std::none_of(gone.begin(), gone.end(),
                   [&](const Config& g) { return finished(without, g) && !drops_heard_answer(without, g, other); })) {
    return false;
  }
  hand_off.ahead.push_back(other);
  // Its leaving is done with the others' (leave_all): what staying could
  // have been late by is kept for it (stands_for).
  Config probe = base;
  probe.lateness = std::numeric_limits<std::int64_t>::max();
  stands_for(probe, base, other, base.zone.latest(waiter_at(j)));
  hand_off.stay_floor = std::max(hand_off.stay_floor, probe.lateness);
  hand_off.dominated = true;
  return true;
}

// Each undecided one: queued after the head, or gone by now. Every choice,
// with the waiters that leave in it.
auto ClusterFrontier::branch_undecided(Config base, HandOff& hand_off) const
    -> std::vector<std::pair<Config, std::vector<std::uint32_t>>> {
  std::vector<std::pair<Config, std::vector<std::uint32_t>>> chosen;
  chosen.emplace_back(std::move(base), std::move(hand_off.ahead));
  for (const auto other : hand_off.undecided) {
    std::vector<std::pair<Config, std::vector<std::uint32_t>>> next;
    for (auto& [option, leaving] : chosen) {
      Config stays = option;
      const auto j = static_cast<std::size_t>(waiter_index(stays, other));
      const auto at = extra_at(stays, static_cast<std::size_t>(extra_index(stays, "u")));
      if (stays.zone.no_later(at, waiter_at(j))) next.emplace_back(std::move(stays), leaving);
      leaving.push_back(other);
      next.emplace_back(std::move(option), std::move(leaving));
    }
    chosen = std::move(next);
  }
  return chosen;
}

// The key goes to `head`, the waiters left behind passed by (for reports),
// once the waiters ahead of it have left.
void ClusterFrontier::grant_head(Config next, std::uint32_t head, Cause why, std::int32_t cause_request,
                                 OnTime on_time, Configs& out) const {
  const auto k = static_cast<std::size_t>(extra_index(next, "u"));
  const auto pass_lo = next.zone.earliest(cursor_at), pass_hi = next.zone.latest(cursor_at);
  for (auto& waiter : next.queue) {
    waiter.passed_by = static_cast<std::int32_t>(head);
    waiter.pass_request = cause_request;
    waiter.pass_cause = why == Cause::release ? 'r' : 'e';
    waiter.pass_lo = pass_lo;
    waiter.pass_hi = pass_hi;
  }
  set_queue_floor(next, extra_at(next, k));
  remove_extra(next, k);
  next.holder = Holder{static_cast<std::int32_t>(head), 0};
  // The grant's on-time instant is read before the holder's instant
  // becomes the hand-off's.
  Configs granted;
  emit(std::move(next), head, ResponseKind::granted, 0, cursor_at, why, on_time, cause_request, granted);
  for (auto& g : granted) {
    g.zone.copy(holder_at, cursor_at);
    out.push_back(std::move(g));
  }
}

// A waiter joins the queue lazily (enqueue: its instant also stands for
// "not applied yet"); one sent after the answer of the release now passing
// the key on was read comes after that release (C18): it was not applied
// yet, nor the operations after it on its connection.
bool ClusterFrontier::unapply_sent_after(Config& c, std::int64_t read_us) const {
  for (std::size_t index = c.queue.size(); index-- > 0;) {
    const auto request = c.queue[index].request;
    if (in_.requests[request].sent_us <= read_us) break;  // the queue is in request order
    if (!floats_after(c, request)) return false;
    unapply_waiter(c, index);
  }
  return true;
}

void ClusterFrontier::pass_on_nobody(Config c, std::size_t upto, Configs& out) const {
  if (upto == 0) {
    free_key(std::move(c), 0, out);
    return;
  }
  const auto index = upto - 1;
  const auto request = c.queue[index].request;
  const auto seen = class_shared_[request] ? ResponseKind::error : observed_kind(c, request);
  // Gone with its `T` (not when its answer was an `A`: that reading dies
  // at once).
  const bool may_leave = may_leave_by(c, index, cursor_at, 0) && seen != ResponseKind::granted;
  // Or not applied yet: queued no earlier than the key went free, so
  // applied again after it (the cursor; at its instant too, later in the
  // order), unless it certainly was applied before that instant or an
  // operation after it on its connection was applied already (one that
  // floats among this visit's steps is taken back with it, to apply again).
  const bool may_wait = c.zone.allows_no_later(cursor_at, waiter_at(index)) && floats_after(c, request);
  Configs left;
  if (may_leave) leave(c, index, cursor_at, 0, left);
  bool dominated = false;
  if (may_wait) {
    unapply_waiter(c, index);
    // Not applied yet, when leaving by now tells nothing more of the other
    // instants, only leaves it to apply and to leave later (finished).
    for (auto& gone : left) {
      if (!finished(c, gone) || drops_heard_answer(c, gone, request)) continue;
      stands_for(gone, c, request, latest_[request]);
      dominated = true;
    }
  }
  for (auto& after : left) pass_on_nobody(std::move(after), index, out);
  if (may_wait && !dominated) pass_on_nobody(std::move(c), index, out);
}

// The key goes free at the cursor's instant, and stays free since then
// (the holder's variable). A try-lock answered `T` that floats among this
// visit's steps (float_step) needed the key held: it came before, or it is
// applied again later.
void ClusterFrontier::free_key(Config c, std::size_t from, Configs& out) const {
  for (std::size_t k = from; k < c.extras.size(); ++k) {
    if (c.extras[k].kind != 'T') continue;
    const auto var = extra_at(c, k);
    // Before, when that tells nothing of the other instants (taking it
    // after, and applying it again later, then explains nothing more).
    Zone before = c.zone;
    if (before.no_later(var, cursor_at)) {
      Zone told = before, untold = c.zone;
      told.remove(var);
      untold.remove(var);
      if (told == untold) {
        c.zone = std::move(before);
        continue;
      }
    }
    if (c.zone.maybe_before(cursor_at, var)) {
      // Applied after the key went free (and again, later).
      Config again = c;
      again.zone.constrain(var, cursor_at, -1);
      const auto& extra = again.extras[k];
      again.handled.erase(extra.request);
      if (extra.observation >= 0) {
        again.observed.erase(static_cast<std::uint32_t>(extra.observation));
        --again.explained;
      }
      remove_extra(again, k);
      free_key(std::move(again), k, out);
    }
    if (!c.zone.no_later(var, cursor_at)) return;
  }
  c.zone.copy(holder_at, cursor_at);
  if (const auto k = extra_index(c, "Q"); k >= 0) remove_extra(c, static_cast<std::size_t>(k));
  out.push_back(std::move(c));
}

// Waiter `index` leaves the queue, at an instant t after it joined and no
// later than x_by + gap, with its `T`, which may arrive any time after (the
// node holding its connection answers when it applies the Timeout). By its
// Timeout: t no earlier than its queueing plus the wait less the allowance,
// late past the wait plus the allowance. By the Close of one of its
// connections, once read (when that can be earlier than its Timeout): that
// connection does not hear its `T` (emit).
void ClusterFrontier::leave(Config c, std::size_t index, std::uint32_t by, std::int64_t gap, Configs& out,
                            bool floats) const {
  const auto gone = c.queue[index].request;
  const auto w = waiter_at(index);
  const auto t = c.zone.add();
  if (!c.zone.no_later(w, t) || !c.zone.no_later(t, by, gap)) return;
  Configs left;
  leave_at(std::move(c), index, t, left);
  for (auto& next : left) {
    if (floats) {
      // Its instant is not the cursor's: the visit's later steps, which
      // find it gone, come no earlier (after_left). It is the last
      // variable, where the next extra's goes.
      next.extras.push_back(Extra{gone, 'L'});
    } else {
      next.zone.remove(t);
    }
    drop_waiter(next, static_cast<std::size_t>(waiter_index(next, gone)), true);
  }
  // The ways it left that reach one configuration (by its Timeout or by a
  // Close) are one.
  merge_same(left);
  for (auto& next : left) out.push_back(std::move(next));
}

// Waiter `index` leaves at x_t: by its Timeout, or by a Close.
void ClusterFrontier::leave_at(Config c, std::size_t index, std::uint32_t t, Configs& left) const {
  const auto gone = c.queue[index].request;
  const auto w = waiter_at(index);
  const auto wait = wait_of(gone);
  {
    Config timed = c;
    if (timed.zone.constrain(t, w, allowance_ - wait) &&
        late(timed, w, t, wait + allowance_, static_cast<std::int32_t>(gone), 't', timed.zone.earliest(t))) {
      record(timed, Step{timed.zone.earliest(t), static_cast<std::int32_t>(gone), -1, 't'});
      emit(std::move(timed), gone, ResponseKind::timed_out, 0, t, Cause::deadline, OnTime{w, wait + allowance_}, -1, left);
    }
  }
  // By a Close, when one may have come earlier than its Timeout's window.
  const auto closed = leave_by_close_[gone];
  if (closed < unbounded_ms && closed <= c.zone.latest(t) &&
      (c.zone.latest(w) >= Zone::open || closed < c.zone.latest(w) + wait - allowance_)) {
    Config dropped = c;
    if (dropped.zone.at_least(t, closed)) {
      record(dropped, Step{dropped.zone.earliest(t), static_cast<std::int32_t>(gone), -1, 'c'});
      emit(std::move(dropped), gone, ResponseKind::timed_out, 0, t, Cause::deadline, OnTime{w, wait + allowance_}, -1, left,
           false, true);
    }
  }
}

void ClusterFrontier::leave_all(Config c, std::vector<std::uint32_t> requests, Configs& out) const {
  if (requests.empty()) {
    out.push_back(std::move(c));
    return;
  }
  const auto request = requests.back();
  requests.pop_back();
  const auto index = waiter_index(c, request);
  LOCKSTEP_ASSERT(index >= 0);
  Configs left;
  leave(std::move(c), static_cast<std::size_t>(index), cursor_at, 0, left);
  for (auto& next : left) leave_all(std::move(next), requests, out);
}

// Whether `at` is the last instant that can cause an unexplained `T` of
// the waiter's owner on one of its connections.
bool ClusterFrontier::observed_timeout_ends_now(const Config& c, std::uint32_t request, std::int64_t at) const {
  const auto owner = owner_of(request);
  for (const auto& copy : copies_[request]) {
    for (const auto index : unexplained_on(c, copy.conn)) {
      if (c.observed.contains(index)) continue;
      const auto& seen = in_.observations[index];
      if (seen.kind == ResponseKind::timed_out && seen.owner == owner && latest_cause_ms(seen.received_us) == at) {
        return true;
      }
    }
  }
  return false;
}

// What is due at `at`: with a stated maximum lateness, a waiter whose
// Timeout that late must have come has left; a waiter whose observed `T`
// can be caused no later than now may leave now.
void ClusterFrontier::due_waiters(Config c, std::size_t from, std::int64_t at, Configs& out) {
  if (!spend(c)) return;
  for (std::size_t j = from; j < c.queue.size(); ++j) {
    const auto request = c.queue[j].request;
    const auto latest = c.zone.latest(waiter_at(j));
    if (max_late_ >= 0 && latest < Zone::open && at > latest + wait_of(request) + allowance_ + max_late_) {
      // Gone by now.
      Configs left;
      leave(std::move(c), j, origin, at, left, true);
      for (auto& next : left) due_waiters(std::move(next), j, at, out);
      return;
    }
    if (may_leave_by(c, j, origin, at) && observed_timeout_ends_now(c, request, at)) {
      Configs left;
      leave(c, j, origin, at, left, true);
      for (auto& next : left) due_waiters(std::move(next), j, at, out);
    }
  }
  out.push_back(std::move(c));
}

// The holder's Expire at an instant of the visit's span, after the cursor,
// no earlier than its grant plus the lease less the allowance: the key
// passes on, to the head waiter or nobody. It is late past the grant plus
// the lease and the allowance, and so is a hand-off it causes.
void ClusterFrontier::expire(Config c, std::int64_t at, Configs& out) const {
  const Holder gone = c.holder;
  const auto lease = lease_of(gone.request);
  const auto saved = c.zone.add();
  c.zone.copy(saved, cursor_at);
  c.extras.push_back(Extra{static_cast<std::uint32_t>(gone.request), 'c'});
  c.zone.forget(cursor_at);
  if (!c.zone.no_later(saved, cursor_at) || !c.zone.within(cursor_at, visit_from_, at) || !after_left(c) ||
      !c.zone.constrain(cursor_at, holder_at, allowance_ - lease) ||
      !late(c, holder_at, cursor_at, lease + allowance_, gone.request, 'e', std::max(visit_from_, c.zone.earliest(cursor_at)))) {
    return;
  }
  record(c, Step{c.zone.earliest(cursor_at), gone.request, -1, 'e'});
  keep_grant(c);
  Configs passed;
  pass_on(std::move(c), Cause::expire, gone.request, OnTime{holder_at, lease + allowance_}, passed);
  for (auto& next : passed) {
    end_grant(next);
    if (commit(next)) out.push_back(std::move(next));
  }
}

}  // namespace lockstep::history::cluster_frontier
