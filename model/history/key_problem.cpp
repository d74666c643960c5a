// The moves of the per-key search. Each move is one thing the server may
// have done next: handle the next request of a connection at an instant of
// its window, run a sweep that hands the key to the head waiter, or handle a
// connection's close. Between moves, time advances deterministically: wait
// deadlines fire their `T`, and wherever the key is expired with waiters and
// no sweep move was taken, the phases that would have swept are ruled out.
// Every response the contract gives must match an observation on its
// connection inside its window, or be allowed to go unseen (the connection's
// observation ended before it could arrive).
#include "model/history/key_problem.hpp"

#include <algorithm>

#include "impl/assert.hpp"

namespace lockstep::history {

namespace {

std::int64_t floor_ms(std::int64_t us) { return us / 1000; }

// The server's millisecond grid is not aligned with the tester's: an answer
// caused at instant n may be read up to 1 ms before n on the tester's clock
// (CONTRACT.md: instant n stands for a real interval of 1 ms).
constexpr std::int64_t grid_slack_us = 1000;

// The latest instant that can cause a response read at `received_us`.
std::int64_t latest_cause_ms(std::int64_t received_us) { return floor_ms(received_us + grid_slack_us); }

}  // namespace

KeyProblem::KeyProblem(const KeyInput& input, KeyOracles oracles, PhaseSet phases)
    : in_(input), oracles_(std::move(oracles)), phases_(std::move(phases)) {
  for (const auto& seen : in_.observations) {
    if (seen.kind == ResponseKind::granted) grant_tokens_.push_back(seen.token);
  }
  std::sort(grant_tokens_.begin(), grant_tokens_.end());
}

std::vector<KeyProblem::Step> KeyProblem::steps_of(const State& state) {
  std::vector<Step> steps;
  for (const StepNode* node = state.steps.get(); node != nullptr; node = node->previous.get()) {
    steps.push_back(node->step);
  }
  std::reverse(steps.begin(), steps.end());
  return steps;
}

namespace {

void record(KeyProblem::State& state, KeyProblem::Step step) {
  state.steps = std::make_shared<const KeyProblem::StepNode>(KeyProblem::StepNode{step, state.steps});
}

}  // namespace

KeyProblem::State KeyProblem::initial() const {
  State state;
  state.next_request.assign(in_.conns.size(), 0);
  state.closed.assign(in_.conns.size(), false);
  state.phases = phases_;
  return state;
}

std::int64_t KeyProblem::earliest_unexplained_ms(const State& state) const {
  if (state.observed_mark >= in_.observations.size()) return unbounded_ms;
  return latest_cause_ms(in_.observations[state.observed_mark].received_us);
}

bool KeyProblem::explained(const State& state, std::uint32_t observation) const {
  return observation < state.observed_mark ||
         std::binary_search(state.observed_extra.begin(), state.observed_extra.end(), observation);
}

void KeyProblem::explain(State& state, std::uint32_t observation) const {
  LOCKSTEP_ASSERT(!explained(state, observation));
  ++state.explained;
  if (observation == state.observed_mark) {
    ++state.observed_mark;
    while (!state.observed_extra.empty() && state.observed_extra.front() == state.observed_mark) {
      state.observed_extra.erase(state.observed_extra.begin());
      ++state.observed_mark;
    }
    return;
  }
  state.observed_extra.insert(
      std::upper_bound(state.observed_extra.begin(), state.observed_extra.end(), observation), observation);
}

// A response caused at `cause_ms` may arrive up to 1 + tolerance ms later;
// if the connection's observation ended before that, it may go unseen.
bool KeyProblem::may_be_unseen(std::uint32_t conn, std::int64_t cause_ms, bool deferred) const {
  if (!deferred && in_.conns[conn].cut) return true;
  return (cause_ms + 1 + in_.tolerance_ms) * 1000 > in_.conns[conn].end_us;
}

// Rules out the phases that would have swept the key, at the instants up to
// `last_ms` not yet passed, while it is expired with waiters: such a sweep
// hands the key to the head waiter, which is a move of its own.
bool KeyProblem::forbid_sweeps_until(State& state, std::int64_t last_ms) const {
  if (!state.held || state.queue.empty()) return true;
  // Only where it is certainly expired: forbidding less never refuses an
  // explanation.
  const std::int64_t first = std::max(state.holder.expiry_late_ms(), state.sweep_passed ? state.now_ms + 1 : state.now_ms);
  if (first > last_ms) return true;
  state.phases.forbid_instants(first, last_ms);
  return !state.phases.empty();
}

void KeyProblem::advance(State state, std::int64_t to_ms, bool then_requests, const Sink& sink) const {
  LOCKSTEP_ASSERT(to_ms >= state.now_ms);
  while (true) {
    std::int64_t deadline = unbounded_ms;
    for (const auto& waiter : state.queue) deadline = std::min(deadline, waiter.deadline_ms);
    if (deadline > to_ms) {
      if (!forbid_sweeps_until(state, then_requests ? to_ms : to_ms - 1)) return;
      if (to_ms > state.now_ms) {
        state.now_ms = to_ms;
        state.sweep_passed = false;
      }
      if (then_requests) state.sweep_passed = true;
      if (earliest_unexplained_ms(state) < state.now_ms) return;
      sink(std::move(state));
      return;
    }
    if (!forbid_sweeps_until(state, deadline - 1)) return;
    state.now_ms = deadline;
    state.sweep_passed = false;
    if (earliest_unexplained_ms(state) < state.now_ms) return;
    // Every waiter due now is answered `T`, in queue order; each answer may
    // match more than one observation, so the rest continues per match.
    std::vector<Waiter> due;
    std::erase_if(state.queue, [&](const Waiter& waiter) {
      if (waiter.deadline_ms != deadline) return false;
      due.push_back(waiter);
      return true;
    });
    std::function<void(State&&, std::size_t)> fire = [&](State&& fired, std::size_t index) {
      if (index == due.size()) {
        advance(std::move(fired), to_ms, then_requests, sink);
        return;
      }
      const auto& request = in_.requests[due[index].request];
      record(fired, Step{deadline, static_cast<std::int32_t>(due[index].request), -1, 't'});
      answer(std::move(fired), request.conn, ResponseKind::timed_out, request.owner, 0, deadline, true,
             static_cast<std::int32_t>(due[index].request),
             [&](State&& next) { fire(std::move(next), index + 1); });
    };
    fire(std::move(state), 0);
    return;
  }
}

// The contract gives `kind` on `conn`, caused at `cause_ms`: deferred
// answers arrive within 1 + tolerance ms of their cause, immediate ones any
// time after. Responses on one connection arrive in the order the server
// produced them, so only the first response of this key on the connection
// not yet explained can match (or one that arrived in the same millisecond,
// since the order among answers of one instant is not fixed).
void KeyProblem::answer(State state, std::uint32_t conn, ResponseKind kind, std::uint32_t owner, std::uint64_t token,
                        std::int64_t cause_ms, bool deferred, std::int32_t request, const Sink& sink) const {
  const auto& list = in_.conns[conn].observations;
  const std::int64_t from_us = cause_ms * 1000 - grid_slack_us;
  // A grant's cause is the holder's grant interval, which may be wider.
  const std::int64_t cause_late_ms =
      kind == ResponseKind::granted ? std::max(cause_ms, state.holder.granted_late_ms) : cause_ms;
  const std::int64_t until_us = deferred ? (cause_late_ms + 1 + in_.tolerance_ms) * 1000 : unbounded_ms;
  auto it = list.begin();
  while (it != list.end() && explained(state, *it)) ++it;
  const std::int64_t first_ms = it == list.end() ? 0 : floor_ms(in_.observations[*it].received_us);
  for (; it != list.end(); ++it) {
    const auto& seen = in_.observations[*it];
    if (floor_ms(seen.received_us) != first_ms || seen.received_us > until_us) break;
    if (seen.received_us < from_us || explained(state, *it) || seen.kind != kind) continue;
    const bool named = kind == ResponseKind::granted || kind == ResponseKind::timed_out || kind == ResponseKind::busy;
    if (named && seen.owner != owner) continue;
    // Tokens increase in the order issued: the next grant seen on this key
    // must carry the smallest token not yet explained.
    if (kind == ResponseKind::granted) {
      const auto next = std::upper_bound(grant_tokens_.begin(), grant_tokens_.end(), state.last_token);
      if (next == grant_tokens_.end() || *next != seen.token) continue;
    }
    if ((kind == ResponseKind::released || kind == ResponseKind::not_held) && seen.token != token) continue;
    State next = state;
    if (kind == ResponseKind::granted && !fit_grant(next, seen.received_us, deferred)) continue;
    explain(next, *it);
    if (kind == ResponseKind::granted) {
      next.holder.token = seen.token;
      next.last_token = seen.token;
    }
    record(next, Step{cause_ms, request, static_cast<std::int32_t>(*it), 'a'});
    sink(std::move(next));
  }
  if (may_be_unseen(conn, cause_late_ms, deferred)) sink(std::move(state));
}

bool KeyProblem::fit_grant(State& state, std::int64_t received_us, bool deferred) const {
  auto& holder = state.holder;
  holder.granted_late_ms = std::min(holder.granted_late_ms, latest_cause_ms(received_us));
  if (deferred) {
    const std::int64_t earliest = (received_us + 999) / 1000 - 1 - in_.tolerance_ms;
    holder.granted_ms = std::max(holder.granted_ms, earliest);
  }
  return holder.granted_ms <= holder.granted_late_ms;
}

void KeyProblem::by_expiry(State state, std::int64_t at_ms, const std::function<void(State&&, bool)>& then) const {
  const auto lease = state.holder.lease_ms;
  if (at_ms >= state.holder.expiry_late_ms()) {
    then(std::move(state), true);
  } else if (at_ms < state.holder.expiry_ms()) {
    then(std::move(state), false);
  } else {
    State expired = state;
    expired.holder.granted_late_ms = at_ms - lease;
    then(std::move(expired), true);
    state.holder.granted_ms = at_ms - lease + 1;
    then(std::move(state), false);
  }
}

void KeyProblem::grant(State state, std::uint32_t request, std::int64_t at_ms, bool deferred, const Sink& sink,
                       std::int64_t late_ms) const {
  const auto& asked = in_.requests[request];
  state.held = true;
  state.holder = Holder{static_cast<std::int32_t>(request), asked.conn, asked.owner, 0, at_ms,
                        std::max(at_ms, late_ms), asked.lease_ms};
  answer(std::move(state), asked.conn, ResponseKind::granted, asked.owner, 0, at_ms, deferred,
         static_cast<std::int32_t>(request), sink);
}

void KeyProblem::handle(State state, std::uint32_t conn, std::int64_t at_ms, const Sink& sink) const {
  const std::uint32_t request = in_.conns[conn].requests[state.next_request[conn]];
  advance(std::move(state), at_ms, true, [&](State&& now) {
    ++now.next_request[conn];
    record(now, Step{at_ms, static_cast<std::int32_t>(request), -1, 'h'});
    if (in_.requests[request].acquire) {
      handle_acquire(std::move(now), request, at_ms, sink);
    } else {
      handle_release(std::move(now), request, at_ms, sink);
    }
  });
}

// Whether a waiter queued now can get the answer the contract owes it: a
// `T` at its deadline, or an `A` from a hand-off before it, among the
// observations of its connection (or it may go unseen). A waiter for whom
// neither arrived is pruned at once instead of at its deadline.
bool KeyProblem::waiter_can_be_answered(const State& state, const Waiter& waiter) const {
  const auto& asked = in_.requests[waiter.request];
  if (may_be_unseen(asked.conn, waiter.deadline_ms)) return true;
  const std::int64_t tolerance_us = (1 + in_.tolerance_ms) * 1000;
  for (const auto index : in_.conns[asked.conn].observations) {
    const auto& seen = in_.observations[index];
    if (seen.owner != asked.owner || explained(state, index)) continue;
    if (seen.kind == ResponseKind::timed_out && seen.received_us >= waiter.deadline_ms * 1000 - grid_slack_us &&
        seen.received_us <= waiter.deadline_ms * 1000 + tolerance_us) {
      return true;
    }
    if (seen.kind == ResponseKind::granted && seen.received_us >= waiter.queued_ms * 1000 - grid_slack_us &&
        seen.received_us <= (waiter.deadline_ms - 1) * 1000 + tolerance_us) {
      return true;
    }
  }
  return false;
}

void KeyProblem::handle_acquire(State state, std::uint32_t request, std::int64_t at_ms, const Sink& sink) const {
  const auto& asked = in_.requests[request];
  const bool refused_by_key_limit = oracles_.keys_may_be_full && oracles_.keys_may_be_full(at_ms);
  // An immediate grant is recorded with every instant of the request's
  // window from now on, and marked inert: trying later instants adds nothing.
  const std::int64_t late_ms = std::max(at_ms, std::min({earliest_unexplained_ms(state), in_.horizon_ms, asked.latest_ms}));
  // The interval starts at the request's earliest instant even when the
  // search handles it later: that only relaxes its order against moves in
  // between, and keeps one guess of the instant from deciding a lease end.
  const std::int64_t early_ms = std::min(at_ms, floor_ms(asked.sent_us));
  const auto grant_now = [&](State&& granted) {
    granted.inert = true;
    grant(std::move(granted), request, early_ms, false, sink, late_ms);
  };
  if (!state.held) {
    if (refused_by_key_limit) {
      State refused = state;
      refused.inert = true;
      answer(std::move(refused), asked.conn, ResponseKind::busy, asked.owner, 0, at_ms, false, request, sink);
    }
    grant_now(std::move(state));
    return;
  }
  by_expiry(std::move(state), at_ms, [&](State&& decided, bool expired) {
    if (expired) {
      // Taken over in place (CONTRACT 2); or, without waiters, swept before
      // and then refused as a new key past max_keys.
      if (decided.queue.empty() && refused_by_key_limit) {
        State swept = decided;
        swept.phases.require_one_of(decided.holder.expiry_ms(), at_ms);
        if (!swept.phases.empty()) {
          swept.held = false;
          swept.inert = true;
          answer(std::move(swept), asked.conn, ResponseKind::busy, asked.owner, 0, at_ms, false, request, sink);
        }
      }
      grant_now(std::move(decided));
      return;
    }
    handle_held(std::move(decided), request, at_ms, sink);
  });
}

void KeyProblem::handle_held(State state, std::uint32_t request, std::int64_t at_ms, const Sink& sink) const {
  const auto& asked = in_.requests[request];
  if (asked.wait_ms == 0) {
    state.inert = true;
    answer(std::move(state), asked.conn, ResponseKind::timed_out, asked.owner, 0, at_ms, false, request, sink);
    return;
  }
  if (state.queue.size() >= in_.limits.max_waiters_per_key) {
    state.inert = true;
    answer(std::move(state), asked.conn, ResponseKind::busy, asked.owner, 0, at_ms, false, request, sink);
    return;
  }
  if (oracles_.waiters_may_be_full && oracles_.waiters_may_be_full(at_ms)) {
    State refused = state;
    refused.inert = true;
    answer(std::move(refused), asked.conn, ResponseKind::busy, asked.owner, 0, at_ms, false, request, sink);
  }
  const Waiter waiter{request, at_ms, at_ms + asked.wait_ms, std::min(at_ms, floor_ms(asked.sent_us)),
                      std::max(at_ms, std::min({earliest_unexplained_ms(state), in_.horizon_ms, asked.latest_ms}))};
  if (!waiter_can_be_answered(state, waiter)) return;
  state.queue.push_back(waiter);
  sink(std::move(state));
}

void KeyProblem::handle_release(State state, std::uint32_t request, std::int64_t at_ms, const Sink& sink) const {
  const auto& asked = in_.requests[request];
  const auto not_held = [&](State&& other) {
    other.inert = true;
    answer(std::move(other), asked.conn, ResponseKind::not_held, 0, asked.token, at_ms, false, request, sink);
  };
  if (!state.held) {
    not_held(std::move(state));
    return;
  }
  if (state.holder.token != 0) {
    if (state.holder.token == asked.token) {
      release_holder(std::move(state), at_ms, static_cast<std::int32_t>(request), sink);
    } else {
      not_held(std::move(state));
    }
    return;
  }
  // The holder's grant was never seen: its token may be this one, if no
  // other grant carried it and it is above every token of the key so far.
  if (asked.token > state.last_token && !(oracles_.token_was_seen && oracles_.token_was_seen(asked.token))) {
    State same = state;
    same.holder.token = asked.token;
    release_holder(std::move(same), at_ms, static_cast<std::int32_t>(request), sink);
  }
  not_held(std::move(state));
}

// The holder's token released at `at_ms` (CONTRACT 6): `R`, then the head
// waiter gets the key. An expired holder without waiters may have been swept
// already, which makes the same request an `N`.
void KeyProblem::release_holder(State state, std::int64_t at_ms, std::int32_t request, const Sink& sink) const {
  const auto& asked = in_.requests[static_cast<std::uint32_t>(request)];
  const std::uint64_t token = asked.token;
  if (state.queue.empty() && at_ms >= state.holder.expiry_ms()) {
    // Possibly expired and unswept (R) or swept (N). The ranges of sweep
    // instants use the widest expiry that the grant interval allows for a
    // sweep and the narrowest for no sweep, so no explanation is lost.
    by_expiry(std::move(state), at_ms, [&](State&& decided, bool expired) {
      if (!expired) {
        release_valid(std::move(decided), at_ms, request, sink);
        return;
      }
      State swept = decided;
      swept.phases.require_one_of(decided.holder.expiry_ms(), at_ms);
      decided.phases.forbid_instants(decided.holder.expiry_late_ms(), at_ms);
      decided.held = false;
      if (!decided.phases.empty()) {
        answer(std::move(decided), asked.conn, ResponseKind::released, 0, token, at_ms, false, request, sink);
      }
      swept.held = false;
      if (!swept.phases.empty()) {
        answer(std::move(swept), asked.conn, ResponseKind::not_held, 0, token, at_ms, false, request, sink);
      }
    });
    return;
  }
  release_valid(std::move(state), at_ms, request, sink);
}

void KeyProblem::release_valid(State state, std::int64_t at_ms, std::int32_t request, const Sink& sink) const {
  const auto& asked = in_.requests[static_cast<std::uint32_t>(request)];
  const std::uint64_t token = asked.token;
  // As for an immediate grant: the hand-off is recorded with every instant
  // the release may have had, and trying later instants adds nothing.
  const std::int64_t late_ms = std::max(at_ms, std::min({earliest_unexplained_ms(state), in_.horizon_ms, asked.latest_ms}));
  state.inert = true;
  answer(std::move(state), asked.conn, ResponseKind::released, 0, token, at_ms, false, request, [&](State&& released) {
    if (released.queue.empty()) {
      released.held = false;
      sink(std::move(released));
      return;
    }
    hand_off(std::move(released), std::min(at_ms, floor_ms(asked.sent_us)), late_ms, sink);
  });
}

void KeyProblem::hand_off(State state, std::int64_t at_ms, std::int64_t late_ms, const Sink& sink) const {
  std::int64_t earliest_late = unbounded_ms;
  for (std::size_t i = 0; i < state.queue.size(); ++i) {
    const Waiter waiter = state.queue[i];
    if (i > 0 && waiter.early_ms > earliest_late) break;
    earliest_late = std::min(earliest_late, waiter.late_ms);
    State next = state;
    next.queue.erase(next.queue.begin() + static_cast<std::ptrdiff_t>(i));
    grant(std::move(next), waiter.request, at_ms, true, sink, late_ms);
  }
}

// A sweep at S hands an expired key to the head waiter. The instants worth
// trying are those from which that waiter's `A` could have arrived as seen;
// when the answer may go unseen, every instant the phases allow.
void KeyProblem::sweep_moves(const State& state, const Sink& sink) const {
  if (!state.held || state.queue.empty()) return;
  const std::int64_t first = std::max(state.holder.expiry_ms(), state.sweep_passed ? state.now_ms + 1 : state.now_ms);
  std::int64_t last_deadline = 0;
  for (const auto& waiter : state.queue) last_deadline = std::max(last_deadline, waiter.deadline_ms);
  const std::int64_t last = std::min({earliest_unexplained_ms(state), last_deadline - 1,
                                      first + state.phases.period() - 1, in_.horizon_ms});
  if (first > last) return;
  std::vector<std::int64_t> instants;
  for (const auto& waiter : state.queue) {
    const auto& asked = in_.requests[waiter.request];
    for (const auto index : in_.conns[asked.conn].observations) {
      const auto& seen = in_.observations[index];
      if (seen.kind != ResponseKind::granted || seen.owner != asked.owner || explained(state, index)) continue;
      const std::int64_t low = std::max(first, (seen.received_us + 999) / 1000 - 1 - in_.tolerance_ms);
      const std::int64_t high = std::min(last, latest_cause_ms(seen.received_us));
      for (std::int64_t at = low; at <= high; ++at) instants.push_back(at);
    }
    const std::int64_t unseen_from = std::max(first, floor_ms(in_.conns[asked.conn].end_us) - 1 - in_.tolerance_ms);
    for (std::int64_t at = unseen_from; at <= last; ++at) instants.push_back(at);
  }
  std::sort(instants.begin(), instants.end());
  instants.erase(std::unique(instants.begin(), instants.end()), instants.end());
  for (const auto at : instants) {
    if (!state.phases.contains_instant(at)) continue;
    advance(state, at, false, [&](State&& due) {
      if (!due.held || due.queue.empty() || at < due.holder.expiry_ms()) return;
      due.holder.granted_late_ms = std::min(due.holder.granted_late_ms, at - due.holder.lease_ms);
      due.phases.require_one_of(at, at);
      if (due.phases.empty()) return;
      due.sweep_passed = true;
      record(due, Step{at, -1, -1, 's'});
      hand_off(std::move(due), at, at, sink);
    });
  }
}

// A connection the tester closed: once all its requests are handled, the
// server drops its waiters (CONTRACT 10), at the earliest when it closed.
void KeyProblem::close_moves(const State& state, const Sink& sink) const {
  for (std::uint32_t conn = 0; conn < in_.conns.size(); ++conn) {
    const auto& connection = in_.conns[conn];
    if (!connection.closes || state.closed[conn] || state.next_request[conn] != connection.requests.size()) continue;
    const bool has_waiter = std::any_of(state.queue.begin(), state.queue.end(), [&](const Waiter& waiter) {
      return in_.requests[waiter.request].conn == conn;
    });
    if (!has_waiter) continue;  // nothing to drop: closing changes nothing here
    const std::int64_t at = std::max(state.now_ms, floor_ms(connection.end_us));
    if (at > earliest_unexplained_ms(state)) continue;
    advance(state, at, true, [&](State&& now) {
      now.closed[conn] = true;
      std::erase_if(now.queue, [&](const Waiter& waiter) { return in_.requests[waiter.request].conn == conn; });
      record(now, Step{at, -1, -1, 'c'});
      sink(std::move(now));
    });
  }
}

void KeyProblem::successors(const State& state, std::vector<State>& out) const {
  if (earliest_unexplained_ms(state) < state.now_ms) return;
  // Moves with the instant they are ordered by (a prompt server's instant
  // for requests): a correct server's history is then explained in one
  // pass, in time order, and backtracking is the exception.
  std::vector<std::pair<std::int64_t, State>> moves;
  std::int64_t order_at = 0;
  const Sink collect = [&](State&& next) { moves.emplace_back(order_at, std::move(next)); };
  const std::int64_t cap = std::min(earliest_unexplained_ms(state), in_.horizon_ms);
  for (std::uint32_t conn = 0; conn < in_.conns.size(); ++conn) {
    if (state.next_request[conn] >= in_.conns[conn].requests.size()) continue;
    const auto& request = in_.requests[in_.conns[conn].requests[state.next_request[conn]]];
    const std::int64_t low = std::max(state.now_ms, floor_ms(request.sent_us));
    const std::int64_t high = std::min(cap, request.latest_ms);
    // The instant a prompt server would have used comes first, then the
    // later ones, then the earlier ones.
    const std::int64_t likely = std::clamp(floor_ms(request.sent_us + in_.grid_offset_us), low, std::max(low, high));
    order_at = likely;
    std::int64_t inert_from = unbounded_ms;
    const auto try_at = [&](std::int64_t at) {
      // An answer that changed nothing is best given as early as possible:
      // a later instant only constrains what follows more.
      if (at > inert_from) return;
      const auto before = moves.size();
      handle(state, conn, at, collect);
      for (auto i = before; i < moves.size(); ++i) {
        if (moves[i].second.inert) inert_from = std::min(inert_from, at);
        moves[i].second.inert = false;
      }
    };
    for (std::int64_t at = likely; at <= high; ++at) try_at(at);
    for (std::int64_t at = low; at < likely && at <= high; ++at) try_at(at);
  }
  const auto before_closes = moves.size();
  close_moves(state, collect);
  // Time passes with nothing handled: up to the instant of the next
  // response to explain, firing the deadlines on the way.
  if (cap > state.now_ms && cap < unbounded_ms) advance(state, cap, false, collect);
  for (auto i = before_closes; i < moves.size(); ++i) moves[i].first = moves[i].second.now_ms;
  std::stable_sort(moves.begin(), moves.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& move : moves) out.push_back(std::move(move.second));
  // Sweeps: the latest instant their hand-off's arrival allows comes first
  // (a server's answer usually leaves at once), and as a block at that
  // instant, so that a wrong early guess does not pin the phase first.
  std::vector<State> sweeps;
  sweep_moves(state, [&](State&& next) { sweeps.push_back(std::move(next)); });
  if (sweeps.empty()) return;
  std::stable_sort(sweeps.begin(), sweeps.end(), [](const State& a, const State& b) { return a.now_ms > b.now_ms; });
  const auto latest = sweeps.front().now_ms;
  const auto at = std::find_if(out.begin(), out.end(), [&](const State& other) { return other.now_ms > latest; });
  out.insert(at, std::make_move_iterator(sweeps.begin()), std::make_move_iterator(sweeps.end()));
}

bool KeyProblem::is_final(const State& state) const {
  if (state.observed_mark < in_.observations.size()) return false;
  for (std::uint32_t conn = 0; conn < in_.conns.size(); ++conn) {
    const auto& requests = in_.conns[conn].requests;
    for (auto index = state.next_request[conn]; index < requests.size(); ++index) {
      if (in_.requests[requests[index]].latest_ms < in_.horizon_ms) return false;
    }
  }
  for (const auto& waiter : state.queue) {
    if (!may_be_unseen(in_.requests[waiter.request].conn, waiter.deadline_ms)) return false;
  }
  return true;
}

Fingerprint KeyProblem::fingerprint(const State& state) const {
  FingerprintBuilder print;
  print.add(static_cast<std::uint64_t>(state.now_ms));
  print.add(state.sweep_passed ? 1 : 0);
  if (state.held) {
    print.add(static_cast<std::uint64_t>(state.holder.request) + 7);
    print.add(state.holder.token);
    print.add(static_cast<std::uint64_t>(state.holder.granted_ms));
    print.add(static_cast<std::uint64_t>(state.holder.granted_late_ms));
  } else {
    print.add(3);
  }
  print.add(state.queue.size());
  for (const auto& waiter : state.queue) {
    print.add(waiter.request);
    print.add(static_cast<std::uint64_t>(waiter.queued_ms));
  }
  print.add(state.last_token);
  for (const auto next : state.next_request) print.add(next);
  for (const bool closed : state.closed) print.add(closed ? 11 : 13);
  print.add(state.observed_mark);
  print.add(state.observed_extra.size());
  for (const auto index : state.observed_extra) print.add(index);
  for (const auto& [low, high] : state.phases.ranges()) {
    print.add(static_cast<std::uint64_t>(low));
    print.add(static_cast<std::uint64_t>(high));
  }
  return print.finish();
}

}  // namespace lockstep::history
