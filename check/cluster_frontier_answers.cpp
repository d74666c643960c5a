// Cluster mode's rules (cluster_frontier.cpp) for what is heard: whose
// answer an observation may be, when an outcome may go unheard, an answer
// emitted and matched, a retry hearing it again, how late a step or an
// answer is, and the reports of what no answer explains. A file of its own
// because every step ends here, whatever it did to the key.
#include "check/cluster_frontier_internal.hpp"

#include <functional>

#include <fmt/format.h>

namespace lockstep::history::cluster_frontier {

void ClusterFrontier::note_lateness(Config& c, std::int64_t amount, std::int32_t request, char what,
                                    std::int64_t at_ms) const {
  if (amount <= c.lateness) return;
  c.lateness = amount;
  c.late_request = request;
  c.late_what = what;
  c.late_at = at_ms;
  c.late_due = at_ms - amount;
}

bool ClusterFrontier::late(Config& c, std::uint32_t u, std::uint32_t v, std::int64_t due_gap, std::int32_t request,
                           char what, std::int64_t at_ms) const {
  if (max_late_ >= 0 && !c.zone.constrain(u, v, due_gap + max_late_)) {
    KeyFailure failure;
    failure.kind = KeyFailure::Kind::late;
    failure.cause = what == 'e' ? Cause::expire : what == 't' ? Cause::deadline : Cause::request;
    failure.request = request;
    const std::int64_t least = -c.zone.bound(v, u) - due_gap;  // the least it can be late
    failure.at_ms = at_ms;
    failure.due_by_us = us_of(at_ms - least + max_late_);
    if (request >= 0) failure.conn = in_.requests[static_cast<std::uint32_t>(request)].conn;
    fail(c, failure);
    return false;
  }
  const auto most_negative = c.zone.bound(v, u);
  if (most_negative < Zone::open) note_lateness(c, -most_negative - due_gap, request, what, at_ms);
  return true;
}

// An observation of the kind of answer `request` gets: an `A`, `T` or `B`
// of its owner, an `R` or `N` of its token.
bool ClusterFrontier::same_class(const KeyObservation& seen, std::uint32_t request) const {
  const auto& asked = in_.requests[request];
  if (asked.acquire) return names_owner(seen.kind) && seen.owner == asked.owner;
  return (seen.kind == ResponseKind::released || seen.kind == ResponseKind::not_held) && seen.token == asked.token;
}

// Whether the outcome of `request` may go unheard. Without a stated
// maximum lateness nothing is owed by any instant (a node answers what it
// applied, when it applies it), so an outcome may go unheard unless an
// observation waits for it: the unexplained answers of its class on its
// connections cannot all be the answers of other operations of that class
// not yet applied or still waiting, each answer heard on a connection that
// carried one of their sends before it was read, each send answered there
// once (a matching, below). With the maximum, a deferred answer to an
// operation sent once is owed on its connection (emit adds when).
bool ClusterFrontier::may_be_unseen(const Config& c, std::uint32_t request, bool dropped) const {
  std::vector<std::uint32_t> waiting;  // observations
  std::vector<KeyCopy> sends;          // of the other operations
  const auto& mine = in_.requests[request];
  for (const auto& copy : copies_[request]) {
    if (dropped && closed_elsewhere(request, {copy.conn}) >= unbounded_ms) continue;
    for (const auto index : unexplained_on(c, copy.conn)) {
      if (c.observed.contains(index) || !same_class(in_.observations[index], request)) continue;
      if (std::find(waiting.begin(), waiting.end(), index) == waiting.end()) waiting.push_back(index);
    }
  }
  if (waiting.empty()) return true;
  std::vector<std::uint32_t> seen_others;
  for (const auto& copy : copies_[request]) {
    for (const auto other : in_.conns[copy.conn].requests) {
      // Not applied yet, or waiting: its answer is still to come.
      if (other == request || (c.handled.contains(other) && waiter_index(c, other) < 0)) continue;
      const auto& asked = in_.requests[other];
      if (asked.acquire != mine.acquire || (mine.acquire ? asked.owner != mine.owner : asked.token != mine.token)) continue;
      if (std::find(seen_others.begin(), seen_others.end(), other) != seen_others.end()) continue;
      seen_others.push_back(other);
      for (const auto& send : copies_[other]) sends.push_back(send);
    }
  }
  if (waiting.size() > sends.size()) return false;
  // Kuhn's augmenting paths: every waiting answer gets a send of its own,
  // on its connection, sent no later than the answer was read (an answer
  // read before a request was sent is not that request's). A few answers
  // and sends: the square cost is small.
  const auto fits = [&](std::uint32_t index, const KeyCopy& send) {
    const auto& seen = in_.observations[index];
    return send.conn == seen.conn && send.sent_us <= seen.received_us;
  };
  std::vector<std::int32_t> taken_by(sends.size(), -1);
  std::vector<char> tried;
  const std::function<bool(std::size_t)> place = [&](std::size_t w) {
    for (std::size_t s = 0; s < sends.size(); ++s) {
      if (tried[s] || !fits(waiting[w], sends[s])) continue;
      tried[s] = 1;
      if (taken_by[s] < 0 || place(static_cast<std::size_t>(taken_by[s]))) {
        taken_by[s] = static_cast<std::int32_t>(w);
        return true;
      }
    }
    return false;
  };
  for (std::size_t w = 0; w < waiting.size(); ++w) {
    tried.assign(sends.size(), 0);
    if (!place(w)) return false;
  }
  return true;
}

void ClusterFrontier::emit(Config c, std::uint32_t request, ResponseKind kind, std::uint64_t token, std::uint32_t cause,
                           Cause why, OnTime on_time, std::int32_t cause_request, Configs& out, bool optional,
                           bool dropped) const {
  const bool deferred = why != Cause::request;
  std::vector<std::string_view> tried;
  bool any = false;
  // Read no earlier than every operation applied so far was first sent
  // (C18), the release that caused a hand-off among them (C8): on the
  // millisecond grid alone, a grant read 0.8 ms before the release that
  // caused it was sent passed.
  std::int64_t not_before_us = applied_sent_floor(c);
  if (why == Cause::release && cause_request >= 0) {
    not_before_us = std::max(not_before_us, in_.requests[static_cast<std::uint32_t>(cause_request)].sent_us);
  }
  for (const auto index : answer_candidates(c, request, kind, token, cause, dropped)) {
    const auto& seen = in_.observations[index];
    if (seen.received_us < not_before_us) continue;
    if (std::find(tried.begin(), tried.end(), seen.line) != tried.end()) continue;
    tried.push_back(seen.line);
    Config matched = c;
    if (!hear(matched, request, index, kind, cause, deferred ? &on_time : nullptr, dropped, not_before_us)) continue;
    out.push_back(std::move(matched));
    any = true;
  }
  if (may_be_unseen(c, request, dropped)) {
    if (unheard_in_time(c, request, deferred, on_time)) out.push_back(std::move(c));
    return;
  }
  if (any || optional) return;
  fail_missing(c, request, kind, token, cause, why, on_time, cause_request);
}

// The candidates, by arrival. One line heard on several of the operation's
// connections is its outcome and its replays: whichever is taken first, the
// others are its replays (the same configuration), so emit tries each line
// once, from its first arrival.
std::vector<std::uint32_t> ClusterFrontier::answer_candidates(const Config& c, std::uint32_t request, ResponseKind kind,
                                                              std::uint64_t token, std::uint32_t cause,
                                                              bool dropped) const {
  const auto owner = owner_of(request);
  std::vector<std::uint32_t> candidates;
  for (const auto& copy : copies_[request]) {
    if (dropped && closed_elsewhere(request, {copy.conn}) >= unbounded_ms) continue;
    for (const auto index : unexplained_on(c, copy.conn)) {
      if (c.observed.contains(index)) continue;
      const auto& seen = in_.observations[index];
      if (seen.received_us < copy.sent_us || latest_cause_ms(seen.received_us) < c.zone.earliest(cause) ||
          !matches(c, seen, kind, owner, token)) {
        continue;
      }
      candidates.push_back(index);
    }
  }
  std::sort(candidates.begin(), candidates.end());  // indices are in arrival order
  return candidates;
}

// `matched` hears observation `index` as the outcome; false when it cannot
// (its instants, its lateness or a Close say no).
bool ClusterFrontier::hear(Config& matched, std::uint32_t request, std::uint32_t index, ResponseKind kind,
                           std::uint32_t cause, const OnTime* deferred_on_time, bool dropped,
                           std::int64_t not_before_us) const {
  const auto& seen = in_.observations[index];
  // Read no earlier than a millisecond before its cause.
  if (!matched.zone.at_most(cause, latest_cause_ms(seen.received_us))) return false;
  // A deferred answer that arrived past its cause's on-time instant and
  // the tolerance is late by the difference; heard on a retry's
  // connection, it may be that retry's own answer (below), never late.
  // (C12: how far past, rounded up to the millisecond.)
  const auto arrived_ms = ceil_ms(seen.arrived_from_us);
  if (deferred_on_time != nullptr && !heard_on_retry(request, seen) &&
      !late(matched, deferred_on_time->var, origin, deferred_on_time->offset + 1 + in_.tolerance_ms - arrived_ms,
            static_cast<std::int32_t>(request), 'a', arrived_ms)) {
    return false;
  }
  matched.observed.insert(index);
  ++matched.explained;
  std::vector<std::uint32_t> hearing{seen.conn};
  replays(matched, request, seen, cause, not_before_us, hearing);
  // Dropped by the Close of a connection that heard none of it.
  if (dropped && !matched.zone.at_least(cause, closed_elsewhere(request, hearing))) return false;
  if (kind == ResponseKind::granted) {
    matched.holder.token = seen.token;
    matched.last_token = seen.token;
    note_grant(index, matched.zone.earliest(cause), matched.zone.latest(cause));
  }
  record(matched, Step{matched.zone.earliest(cause), static_cast<std::int32_t>(request), static_cast<std::int32_t>(index), 'a'});
  return true;
}

// With a maximum lateness, a deferred answer to an operation sent once is
// owed on its connection: never heard though the tester watched it past the
// answer's on-time arrival, it is late by at least that watch. False when
// that lateness cannot hold.
bool ClusterFrontier::unheard_in_time(Config& c, std::uint32_t request, bool deferred, OnTime on_time) const {
  const auto* conn = owed_on(request, deferred);
  if (conn == nullptr) return true;
  // (C13: how far the watch lies past, rounded up to the millisecond.)
  const auto end_ms = ceil_ms(conn->end_us);
  return late(c, on_time.var, origin, on_time.offset + 1 + in_.tolerance_ms - end_ms, static_cast<std::int32_t>(request),
              'a', end_ms);
}

void ClusterFrontier::fail_missing(const Config& c, std::uint32_t request, ResponseKind kind, std::uint64_t token,
                                   std::uint32_t cause, Cause why, OnTime on_time, std::int32_t cause_request) const {
  const bool deferred = why != Cause::request;
  KeyFailure failure;
  failure.kind = KeyFailure::Kind::missing;
  failure.cause = why;
  failure.response = kind;
  failure.conn = in_.requests[request].conn;
  failure.owner = owner_of(request);
  failure.token = token;
  failure.at_ms = c.zone.earliest(cause);
  failure.due_by_us = deferred && max_late_ >= 0 && c.zone.latest(on_time.var) < unbounded_ms
                          ? us_of(c.zone.latest(on_time.var) + on_time.offset + 1 + in_.tolerance_ms + max_late_)
                          : -1;
  failure.request = static_cast<std::int32_t>(request);
  failure.cause_request = cause_request;
  fail(c, failure);
}

// A retry of an operation already applied hears its outcome again, on the
// retry's connection: the same line, read after the retry was sent, no
// earlier than a millisecond before the cause, and no earlier than the
// operations applied by then were sent (C18: the session's answer was
// decided by the cause).
void ClusterFrontier::replays(Config& c, std::uint32_t request, const KeyObservation& seen, std::uint32_t cause,
                              std::int64_t not_before_us, std::vector<std::uint32_t>& hearing) const {
  // `seen` answers one send on its own connection: the line heard again
  // there answers another send of the operation there (a retry on the same
  // connection), never the same one twice.
  bool own_answered = false;
  for (const auto& copy : copies_[request]) {
    if (!own_answered && copy.conn == seen.conn && copy.sent_us <= seen.received_us) {
      own_answered = true;
      continue;
    }
    for (const auto index : unexplained_on(c, copy.conn)) {
      if (c.observed.contains(index)) continue;
      const auto& again = in_.observations[index];
      if (again.received_us < std::max(copy.sent_us, not_before_us) || again.line != seen.line) continue;
      Zone narrowed = c.zone;
      if (!narrowed.at_most(cause, latest_cause_ms(again.received_us))) continue;
      c.zone = std::move(narrowed);
      c.observed.insert(index);
      ++c.explained;
      hearing.push_back(copy.conn);
      if (again.kind == ResponseKind::granted) note_grant(index, c.zone.earliest(cause), latest_cause_ms(again.received_us));
      break;
    }
  }
}

// What came instead of a missing answer: the first unexplained answer of
// the same class on one of the operation's connections.
void ClusterFrontier::explain_failure(const Config& c) const {
  if (failure_.kind == KeyFailure::Kind::unexplained && failure_.observation >= 0) {
    failure_.instead = early_timeout(c, in_.observations[static_cast<std::size_t>(failure_.observation)]);
    return;
  }
  if (failure_.kind != KeyFailure::Kind::missing || failure_.request < 0) return;
  const auto request = static_cast<std::uint32_t>(failure_.request);
  for (const auto& copy : copies_[request]) {
    for (const auto index : unexplained_on(c, copy.conn)) {
      if (c.observed.contains(index) || !same_class(in_.observations[index], request)) continue;
      if (failure_.got < 0 || in_.observations[index].received_us < in_.observations[static_cast<std::size_t>(failure_.got)].received_us) {
        failure_.got = static_cast<std::int32_t>(index);
      }
      break;
    }
  }
}

// Why a `T` nothing explains came too early, when its owner waits in `c`
// on its connection: the `T` was caused before the wait could have ended.
// When the `T` pins the waiter's queueing before the holder's grant, and
// the waiter could not have timed out by that grant, the grant bypassed it
// (it was queued after the holder only in this reading): said so, naming
// both. Empty when the owner does not wait there.
std::string ClusterFrontier::early_timeout(const Config& c, const KeyObservation& seen) const {
  if (seen.kind != ResponseKind::timed_out) return {};
  for (std::size_t j = 0; j < c.queue.size(); ++j) {
    const auto request = c.queue[j].request;
    const auto& asked = in_.requests[request];
    if (asked.owner != seen.owner ||
        std::none_of(copies_[request].begin(), copies_[request].end(), [&](const KeyCopy& copy) { return copy.conn == seen.conn; })) {
      continue;
    }
    const auto wait = wait_of(request);
    const auto queued_lo = c.zone.earliest(waiter_at(j));
    const auto caused_by = latest_cause_ms(seen.received_us);
    if (caused_by >= queued_lo + wait - allowance_) return {};
    const auto& owner = in_.owners[asked.owner];
    // The latest instant its queueing may have had, for that `T`.
    const auto pinned = caused_by - wait + allowance_;
    const auto sent = floor_ms(asked.sent_us);
    if (c.held() && c.holder.request >= 0) {
      const auto& holder = in_.requests[static_cast<std::uint32_t>(c.holder.request)];
      const auto granted_lo = c.zone.earliest(holder_at), granted_hi = c.zone.latest(holder_at);
      if (holder.owner != asked.owner && pinned >= sent && pinned < granted_lo && granted_hi < sent + wait - allowance_) {
        return fmt::format("`{}` was queued before `{}` and had not timed out: the key was `{}`'s (its `T` was caused by "
                           "{}, so it was queued by {}; `{}` was granted the key {}, before `{}`'s Timeout could come at "
                           "{})",
                           owner, in_.owners[holder.owner], owner, instant_text(caused_by), instant_text(pinned),
                           in_.owners[holder.owner], span_text(granted_lo, granted_hi), owner,
                           instant_text(sent + wait - allowance_));
      }
    }
    // Passed by a hand-off after it was sent: in the readings where it was
    // queued before that hand-off, the hand-off broke FIFO; in the others
    // (this one) it was queued after, and its `T` came early. A report that
    // named only the early `T` sent users to look for a Timeout bug.
    const auto& waiter = c.queue[j];
    if (waiter.passed_by >= 0 && sent < waiter.pass_lo) {
      const auto& granted = in_.owners[in_.requests[static_cast<std::uint32_t>(waiter.passed_by)].owner];
      const auto cause = waiter.pass_request < 0 ? std::string("a hand-off")
                         : waiter.pass_cause == 'r'
                             ? fmt::format("the release `{}`", in_.requests[static_cast<std::uint32_t>(waiter.pass_request)].line)
                             : fmt::format("the Expire of `{}`'s grant",
                                           in_.owners[in_.requests[static_cast<std::uint32_t>(waiter.pass_request)].owner]);
      return fmt::format("`{}` was passed over: it waited from {} (its wait of {} ms), and {} handed the key to `{}` at {}. "
                         "Queued before that hand-off, it was served out of order (FIFO); queued after it, no earlier "
                         "than {}, its Timeout came no earlier than {}, and its `T` was caused by {}",
                         owner, instant_text(sent), wait, cause, granted, span_text(waiter.pass_lo, waiter.pass_hi),
                         instant_text(queued_lo), instant_text(queued_lo + wait - allowance_), instant_text(caused_by));
    }
    return fmt::format("`T` before the wait could have ended: `{}` was queued {}, so its Timeout came no earlier than {} "
                       "(the wait of {} ms less the clock allowance), and the `T` was caused by {}",
                       owner, instant_range(c, waiter_at(j)), instant_text(queued_lo + wait - allowance_), wait,
                       instant_text(caused_by));
  }
  return {};
}

// The kind of the first unexplained answer of the request's class on its
// connections (ResponseKind::error: none).
ResponseKind ClusterFrontier::observed_kind(const Config& c, std::uint32_t request) const {
  const auto first = first_of_class(c, request);
  return first < 0 ? ResponseKind::error : in_.observations[static_cast<std::size_t>(first)].kind;
}

std::int64_t ClusterFrontier::first_of_class(const Config& c, std::uint32_t request) const {
  std::int64_t first = -1;
  for (const auto& copy : copies_[request]) {
    for (const auto index : unexplained_on(c, copy.conn)) {
      if (c.observed.contains(index)) continue;
      const auto& seen = in_.observations[index];
      if (!same_class(seen, request)) continue;
      if (first < 0 || seen.received_us < in_.observations[static_cast<std::size_t>(first)].received_us) first = index;
      break;
    }
  }
  return first;
}

}  // namespace lockstep::history::cluster_frontier
