// Cluster mode's rules for the per-key search: frontier_search.hpp carries
// the search itself, shared with simple mode; this file keeps what a
// cluster is read by instead (Expires, sessions, lateness, lazy Timeouts).
// The frontier is every configuration the replicated table may be in,
// carried forward from one visited instant to the next. Only the instants
// where something is observed or sent are visited (a request sent, the last
// instant that can cause an observation, an Expire or a Timeout that a
// maximum lateness forces): whatever happened since the previous visit (an
// operation applied, an Expire) is applied at the visit, in every order.
//
// One operation has one instant, read by every rule (docs/protocol.md,
// "Black box against a cluster"). A configuration keeps the instants it
// still needs as variables of difference constraints (zone.hpp): the
// holder's grant (or, the key free, when it went free), each waiter's
// queueing, and while a visit is applied the instant of its last step (the
// cursor: the steps of one visit come in order, each no earlier than the
// one before). Every rule adds a constraint: a step in its span and its
// window, an Expire no earlier than its grant plus the lease less the
// allowance, a hand-off only to a waiter queued by then and not yet due, an
// answer read no earlier than a millisecond before its cause, and (with a
// maximum lateness) nothing later than that allows. A configuration whose
// constraints contradict each other has no explanation and is dropped; one
// whose constraints hold has one, to the millisecond.
//
// Timeouts are taken lazily: a waiter leaves the queue (with its `T`) only
// where that matters (a hand-off that may pass it, the key going free, the
// last instant its observed `T` can be caused at), at an instant of its own
// between its Timeout's window and that point, which every explanation that
//
// The rules are one class (cluster_frontier_internal.hpp) defined in four
// files: this one holds the visits (what happened since the previous one,
// in every order, and the visit's end), the end of the search and the
// merging of configurations; cluster_frontier_steps.cpp an operation
// applied, cluster_frontier_queue.cpp the key passing on and waiters
// leaving, cluster_frontier_answers.cpp the answers heard and their
// lateness.
#include "check/cluster_frontier.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "check/cluster_frontier_internal.hpp"

namespace lockstep::history {

namespace cluster_frontier {

ClusterFrontier::ClusterFrontier(const KeyInput& input, const KeyOracles& oracles, const KeyCheckOptions& options)
    : FrontierSearch(input, oracles, options),
      allowance_(input.cluster.clock_allowance_ms),
      max_late_(input.cluster.max_lateness_ms) {
  const auto n = in_.requests.size();
  copies_.resize(n);
  leave_by_close_.assign(n, unbounded_ms);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& request = in_.requests[i];
    copies_[i].push_back(KeyCopy{request.conn, request.sent_us});
    for (const auto& copy : request.resent) copies_[i].push_back(copy);
    for (const auto& copy : copies_[i]) leave_by_close_[i] = std::min(leave_by_close_[i], close_read_ms(copy));
  }
  // Operations sent once on one connection are applied in the order sent
  // (a node proposes them in order, and the log keeps it); with retries
  // on other connections, no order is assumed.
  next_on_conn_.assign(n, -1);
  for (const auto& conn : in_.conns) {
    std::int32_t before = -1;
    for (const auto request : conn.requests) {
      const bool single = in_.requests[request].resent.empty();
      if (single && before >= 0) {
        previous_[request] = before;
        next_on_conn_[static_cast<std::uint32_t>(before)] = static_cast<std::int32_t>(request);
      }
      before = single ? static_cast<std::int32_t>(request) : -1;
    }
  }
  for (const auto& seen : in_.observations) last_chances_.push_back(latest_cause_ms(seen.received_us));
  class_shared_.assign(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& mine = in_.requests[i];
    for (const auto& copy : copies_[i]) {
      for (const auto other : in_.conns[copy.conn].requests) {
        if (other == i) continue;
        const auto& theirs = in_.requests[other];
        if (theirs.acquire == mine.acquire && (mine.acquire ? theirs.owner == mine.owner : theirs.token == mine.token)) {
          class_shared_[i] = true;
        }
      }
    }
  }
  std::sort(last_chances_.begin(), last_chances_.end());
  // No answer bounds its instant, and none may be its own: read on one of
  // its connections after the send there, of its class. (Two waiting
  // acquires of one owner outstanding on a connection are both unbounded,
  // since neither answer can be told to be whose, but each may have been
  // heard: they are read like any request, in every order.)
  no_answer_.assign(n, false);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (latest_[i] < unbounded_ms) continue;
    const bool may_be_heard = std::any_of(copies_[i].begin(), copies_[i].end(), [&](const KeyCopy& copy) {
      const auto& seen_there = in_.conns[copy.conn].observations;
      return std::any_of(seen_there.begin(), seen_there.end(), [&](std::uint32_t index) {
        const auto& seen = in_.observations[index];
        return seen.received_us >= copy.sent_us && same_class(seen, i);
      });
    });
    if (may_be_heard) continue;
    no_answer_[i] = true;
    unanswered_.push_back(i);
  }
  find_later_latest();
}

bool ClusterFrontier::alone_in_class(const Config& c, std::uint32_t request) const {
  const auto& asked = in_.requests[request];
  if (!asked.acquire) return true;
  return std::none_of(c.queue.begin(), c.queue.end(),
                      [&](const Waiter& waiter) { return in_.requests[waiter.request].owner == asked.owner; });
}

// What happened since the previous visit, applied at the visit `at` in
// every order: operations (each at an instant of its span, after the one
// before) and the holder's Expire. An operation whose application has a
// single outcome that changes nothing but the observation it explains (a
// try-lock's `T`, an `N`) is applied without a branch, as soon as it may:
// its instant floats among the steps after it, which do not change its
// outcome (a try-lock's `T` needs the key held: the key going free places
// it before, or applies it again, free_key).
void ClusterFrontier::inputs(Config c, std::int64_t at, Configs& out, std::size_t& orders) {
  const bool may_expire = c.held() && c.zone.earliest(holder_at) + lease_of(c.holder.request) - allowance_ <= at;
  if ((c.handled.low() >= in_.requests.size() || earliest_[c.handled.low()] > at) && !may_expire) {
    out.push_back(std::move(c));
    return;
  }
  if (!expand(c, orders, "operations")) return;
  std::vector<std::pair<std::uint32_t, Configs>> moves;
  for (bool again = true; again;) {
    again = false;
    moves.clear();
    for (const auto request : ready(c, at)) {
      const auto when = span_of(request, at);
      if (when.lo > when.hi) continue;
      // An acquire no answer of which arrived is taken only where it
      // matters: granted on a free key that a later request finds held
      // (unheard_holder), or handed the key (pass_on). Queued and never
      // granted, it changes nothing another reading without it does not.
      if (indeterminate(request) && in_.requests[request].acquire) continue;
      Configs next;
      handle(c, request, when, next);
      if (settle(c, request, next)) {
        again = true;
        break;
      }
      // A request no answer of which arrived, whose application changes
      // nothing (a `T`, `N` or `B` nobody heard): the same as not applying
      // it.
      if (indeterminate(request) &&
          std::all_of(next.begin(), next.end(), [&](const Config& n) { return n.explained == c.explained && inert(c, n); })) {
        continue;
      }
      std::erase_if(next, [&](Config& n) { return !commit(n); });
      moves.emplace_back(request, std::move(next));
    }
  }
  for (auto& [request, next] : moves) {
    for (auto& config : next) inputs(std::move(config), at, out, orders);
  }
  // The holder's Expire, once its window is open, in any place among them.
  if (may_expire) {
    Configs expired;
    expire(c, at, expired);
    for (auto& config : expired) inputs(std::move(config), at, out, orders);
  }
  out.push_back(std::move(c));  // nothing more at this instant
}

// An application without a branch, taken at once: a waiting acquire that
// joins the queue, or an inert step that floats. True when `c` took it.
bool ClusterFrontier::settle(Config& c, std::uint32_t request, Configs& next) const {
  if (next.size() != 1) return false;
  // A waiting acquire that joins the queue (enqueue: its instant also
  // stands for "not applied yet").
  const bool joins = next.front().holder == c.holder && next.front().queue.size() == c.queue.size() + 1 &&
                     next.front().explained == c.explained;
  if (joins) {
    c = std::move(next.front());
    commit(c);
    return true;
  }
  // Inert: it changes neither the key nor what else was applied (a
  // release of a grant nobody heard, unheard_holder, applied that grant
  // too, which a request between them may have found holding the key).
  if (next.front().explained != c.explained + 1 || !inert(c, next.front()) ||
      next.front().handled.size() != c.handled.size() + 1 || !alone_in_class(c, request) ||
      !own_answer(c, request, next.front()) || !floats(c, request)) {
    return false;
  }
  std::int32_t observation = -1;
  for (const auto& copy : copies_[request]) {
    for (const auto index : in_.conns[copy.conn].observations) {
      if (next.front().observed.contains(index) && !c.observed.contains(index)) {
        observation = static_cast<std::int32_t>(index);
      }
    }
  }
  c = std::move(next.front());
  float_step(c, request, in_.requests[request].acquire ? 'T' : 'N', observation);
  return true;
}

// When another operation of its class shares a connection with it, only if
// what it explains is the first unexplained answer of the class there: a
// later one may be the other's, and applied after what else happens at this
// visit (an Expire, a release) the request may get another outcome (a
// try-lock's `T` read later for a later try-lock of the same owner, while
// the first was granted). The first is its own: what a node answers at once
// goes out in the order it read the requests of a connection.
bool ClusterFrontier::own_answer(const Config& c, std::uint32_t request, const Config& next) const {
  if (!class_shared_[request]) return true;
  const auto first = first_of_class(c, request);
  return copies_[request].size() == 1 && first >= 0 && next.observed.contains(static_cast<std::uint32_t>(first));
}

// An `N` floats only when no grant of the key still to come carries its
// token (that grant would change its outcome). And an operation floats only
// when no answer of the key still to explain was read before it was sent:
// a step that explains one comes before it in the order (C18), where the
// float would be taken as placed before every later step (a try-lock's `T`
// placed before the release that freed the key; the release's `R` read
// before the try-lock was sent).
bool ClusterFrontier::floats(const Config& c, std::uint32_t request) const {
  const auto& asked = in_.requests[request];
  for (auto index = c.observed.low(); index < in_.observations.size(); ++index) {
    if (in_.observations[index].received_us >= asked.sent_us) break;
    if (!c.observed.contains(index)) return false;
  }
  return asked.acquire || asked.token <= c.last_token ||
         !std::binary_search(grant_tokens_.begin(), grant_tokens_.end(), asked.token);
}

std::uint64_t ClusterFrontier::bytes_of(const Config& c) {
  return sizeof(Config) + c.queue.heap_bytes() + c.extras.capacity() * sizeof(Extra) + c.zone.bytes() +
         c.handled.extra.heap_bytes() + c.handled.holes.heap_bytes() + c.observed.extra.heap_bytes() +
         c.observed.holes.heap_bytes();
}

// The end of visit `at`: the operations that floated among its steps are
// placed (each in its span), the cursor is forgotten, and a key still held
// was held past `at`: its Expire comes after, late past the grant plus the
// lease and the allowance. The instant the key went free matters no more
// once every request that nobody heard and may yet be granted before
// (unheard_holder) was sent after it.
bool ClusterFrontier::end_visit(Config& c, std::int64_t at) const {
  for (std::size_t k = c.extras.size(); k-- > 0;) {
    const auto& extra = c.extras[k];
    if (extra.kind == 'T' || extra.kind == 'N' || extra.kind == 'L' ||
        (extra.kind == 'f' && c.handled.contains(extra.request))) {
      remove_extra(c, k);
    }
  }
  c.zone.forget(cursor_at);
  if (c.held()) {
    if (at < in_.horizon_ms &&
        !late(c, holder_at, origin, lease_of(c.holder.request) + allowance_ - (at + 1), c.holder.request, 'e', at + 1)) {
      return false;
    }
  } else {
    std::int64_t first_unheard = unbounded_ms;
    for (const auto i : unanswered_) {
      if (in_.requests[i].acquire && !c.handled.contains(i)) first_unheard = std::min(first_unheard, earliest_[i]);
    }
    if (c.zone.latest(holder_at) <= first_unheard) c.zone.forget(holder_at);
  }
  return true;
}

// After instant `at`: every observation that nothing later can cause is
// explained, and every operation whose answer arrived is applied by the
// last instant that answer allows.
bool ClusterFrontier::alive(const Config& c, std::int64_t at) const {
  const auto first = c.observed.low();
  if (first < in_.observations.size() && latest_cause_ms(in_.observations[first].received_us) <= at) {
    return die(c, at, KeyFailure::Kind::unexplained, -1, static_cast<std::int32_t>(first));
  }
  for (auto i = c.handled.low(); i < in_.requests.size() && later_latest_[i] <= at; ++i) {
    if (!c.handled.contains(i) && latest_[i] <= at) return die(c, at, KeyFailure::Kind::unhandled, static_cast<std::int32_t>(i), -1);
  }
  return true;
}

// The next instant to visit: an operation sent, the last instant that can
// cause an observation (every operation whose answer arrived must be
// applied by then), or, with a maximum lateness, the instant past which an
// Expire or a Timeout would be too late.
std::int64_t ClusterFrontier::next_instant(const Configs& frontier, std::int64_t at) const {
  const std::int64_t soon = at + 1;
  std::int64_t next = next_sent(at);
  const auto chance = std::upper_bound(last_chances_.begin(), last_chances_.end(), at);
  if (chance != last_chances_.end()) next = std::min(next, *chance);
  if (max_late_ >= 0) {
    for (const auto& c : frontier) {
      if (c.held() && c.zone.latest(holder_at) < Zone::open) {
        next = std::min(next, std::max(soon, c.zone.latest(holder_at) + lease_of(c.holder.request) + allowance_ + max_late_ + 1));
      }
      for (std::size_t j = 0; j < c.queue.size(); ++j) {
        const auto latest = c.zone.latest(waiter_at(j));
        if (latest >= Zone::open) continue;
        next = std::min(next, std::max(soon, latest + wait_of(c.queue[j].request) + allowance_ + max_late_ + 1));
      }
    }
  }
  return std::max(soon, next);
}

// At the end: every observation explained, and every operation left
// unapplied allowed to be (no answer of it arrived). Waiters may still wait
// and a holder still hold (add_final counts what that makes late).
bool ClusterFrontier::is_final(const Config& c) const {
  if (!explains_all(c)) return false;
  KeyFailure failure;
  failure.at_ms = in_.horizon_ms;
  for (auto i = c.handled.low(); i < in_.requests.size(); ++i) {
    if (!c.handled.contains(i) && latest_[i] < in_.horizon_ms) {
      failure.kind = KeyFailure::Kind::unhandled;
      failure.request = static_cast<std::int32_t>(i);
      failure.conn = in_.requests[i].conn;
      fail(c, failure);
      return false;
    }
  }
  return true;
}

// A holder still held at the end was held past its due instant by then; a
// waiter still queued may have left unheard, unless its `T` was owed on a
// connection the tester watched long enough (then it is late by that
// watch).
void ClusterFrontier::add_final(const Config& c, Configs& finals) const {
  Config counted = c;
  if (counted.held() && !late(counted, holder_at, origin, lease_of(c.holder.request) + allowance_ - in_.horizon_ms,
                              c.holder.request, 'e', in_.horizon_ms)) {
    return;
  }
  final_waiters(std::move(counted), 0, finals);
}

// Waiter `j` on: it may still wait, or have left unheard; its `T`, owed on
// a connection the tester watched long enough, makes it late by that
// watch.
void ClusterFrontier::final_waiters(Config c, std::size_t j, Configs& finals) const {
  if (j == c.queue.size()) {
    finals.push_back(std::move(c));
    return;
  }
  // C13: a waiter still queued at the end is late as its `T`, due at its
  // deadline, would be if it went unheard.
  const auto request = c.queue[j].request;
  if (!unheard_in_time(c, request, true, OnTime{waiter_at(j), wait_of(request) + allowance_})) return;
  final_waiters(std::move(c), j + 1, finals);
}

std::string ClusterFrontier::describe(const Config& c, std::int64_t at) const {
  const auto& zone = c.zone;
  if (!c.held() && c.queue.empty()) return fmt::format("at {} the key is free", instant_text(at));
  if (!c.held()) return fmt::format("at {} the key is free, {} waiters undecided", instant_text(at), c.queue.size());
  const auto& holder = in_.requests[static_cast<std::uint32_t>(c.holder.request)];
  const auto lease = holder.lease_ms;
  std::string text = fmt::format(
      "at {} the key is held by `{}` (token {}, granted {}, lease {} ms: its Expire possible from {}, on time until "
      "{})",
      instant_text(at), in_.owners[holder.owner], c.holder.token == 0 ? std::string("unseen") : std::to_string(c.holder.token),
      instant_range(c, holder_at), lease, instant_text(zone.earliest(holder_at) + lease - allowance_),
      zone.latest(holder_at) >= unbounded_ms ? std::string("unbounded") : instant_text(zone.latest(holder_at) + lease + allowance_));
  if (c.queue.empty()) return text + ", no waiters";
  text += ", waiters:";
  for (std::size_t j = 0; j < c.queue.size(); ++j) {
    const auto& asked = in_.requests[c.queue[j].request];
    text += fmt::format(" `{}` on c{} (queued {}, its Timeout possible from {}{})", in_.owners[asked.owner],
                        in_.conns[asked.conn].id, instant_range(c, waiter_at(j)),
                        instant_text(zone.earliest(waiter_at(j)) + asked.wait_ms - allowance_), "");
  }
  return text;
}

// The key is explained with the least lateness of its final configurations.
void ClusterFrontier::explained(const Configs& finals, KeyVerdict& verdict) const {
  const Config* least = &finals.front();
  for (const auto& c : finals) {
    if (c.lateness < least->lateness) least = &c;
  }
  verdict.lateness_ms = least->lateness;
  verdict.late_request = least->late_request;
  verdict.late_what = least->late_what;
  verdict.late_at_ms = least->late_at;
  verdict.late_due_ms = least->late_due;
}

// merge_boxes: every pair is tried in a group of at most this many, its
// unions up to pairs_hull_vars_max variables; neighbours in any group, up
// to chain_hull_vars_max. The exact test of a union (union_is_hull) costs
// the square of the variables for each bound where the two zones differ.
constexpr std::size_t pairs_group_max = 64;
constexpr std::uint32_t pairs_hull_vars_max = 6;
constexpr std::uint32_t chain_hull_vars_max = 24;

void ClusterFrontier::merge_boxes(Configs& configs) const {
  // Groups are joined each on its own, in index order, so the order in
  // which the groups are visited reaches no output.
  std::unordered_map<Fingerprint, std::vector<std::size_t>, FingerprintHash> groups;
  for (std::size_t k = 0; k < configs.size(); ++k) groups[box_key(configs[k])].push_back(k);
  std::vector<bool> gone(configs.size(), false);
  bool any = false;
  // Joins `other` into `kept` when one zone holds both exactly: `other`'s
  // inside `kept`'s, or their union a zone (then the hull).
  const auto join = [&](std::size_t into, std::size_t from, std::uint32_t hull_vars_max) {
    auto& kept = configs[into];
    const auto& other = configs[from];
    if (other.zone.inside(kept.zone)) {
      keep_least_lateness(kept, other);
    } else if (kept.zone.size() <= hull_vars_max && union_is_hull(kept.zone, other.zone)) {
      kept.zone.hull(other.zone);
      keep_least_lateness(kept, other);
    } else {
      return false;
    }
    gone[from] = true;
    any = true;
    return true;
  };
  for (auto& [print, members] : groups) {
    if (members.size() < 2) continue;
    // Every pair, in a small group.
    for (bool again = members.size() <= pairs_group_max; again;) {
      again = false;
      for (std::size_t x = 0; x < members.size(); ++x) {
        for (std::size_t y = 0; y < members.size(); ++y) {
          if (x == y || gone[members[y]] || gone[members[x]]) continue;
          if (join(members[x], members[y], pairs_hull_vars_max)) again = true;
        }
      }
    }
    // Neighbours along each instant, in any group: a key held across many
    // visits gives one configuration per visit its grant may have come in,
    // their zones alike but for that instant's span, each touching the
    // next (a chain that pairs of a bounded group missed, thousands of
    // configurations long). Sorted by the variable's span, each joins the
    // one before it if it can.
    const auto vars = configs[members.front()].zone.size();
    for (std::uint32_t v = 1; v < vars; ++v) {
      std::vector<std::size_t> order;
      for (const auto k : members) {
        if (!gone[k]) order.push_back(k);
      }
      if (order.size() < 2) break;
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const auto& za = configs[a].zone;
        const auto& zb = configs[b].zone;
        return std::pair{za.earliest(v), za.latest(v)} < std::pair{zb.earliest(v), zb.latest(v)};
      });
      std::size_t kept = order.front();
      for (std::size_t x = 1; x < order.size(); ++x) {
        if (!join(kept, order[x], chain_hull_vars_max)) kept = order[x];
      }
    }
  }
  if (any) drop_marked(configs, gone);
}

}  // namespace cluster_frontier

using cluster_frontier::ClusterFrontier;
using cluster_frontier::us_of;

KeyVerdict check_cluster_key(const KeyInput& input, const KeyOracles& oracles, const KeyCheckOptions& options) {
  auto verdict = ClusterFrontier(input, oracles, options).run();
  if (verdict.outcome != KeyOutcome::unexplained || input.cluster.max_lateness_ms < 0) return verdict;
  // Unexplained under the maximum lateness: if some explanation exists
  // without it, the key fails only by lateness.
  KeyInput unbounded = input;
  unbounded.cluster.max_lateness_ms = -1;
  KeyCheckOptions rest = options;
  rest.work_max = options.work_max > verdict.work ? options.work_max - verdict.work : 0;
  const auto without = ClusterFrontier(unbounded, oracles, rest).run();
  verdict.work += without.work;
  if (without.outcome != KeyOutcome::explained) return verdict;
  // What was late: what the search under the maximum found too late, or
  // else the step that made the search without it late (its figure is a
  // lower bound of the least lateness), or else only that it was late.
  KeyFailure late;
  late.kind = KeyFailure::Kind::late;
  if (verdict.failure.kind == KeyFailure::Kind::late) {
    late = verdict.failure;
  } else if (without.late_request >= 0 && without.lateness_ms > input.cluster.max_lateness_ms) {
    late.cause = without.late_what == 'e' ? KeyFailure::Cause::expire
                 : without.late_what == 't' ? KeyFailure::Cause::deadline
                                            : KeyFailure::Cause::request;
    late.request = without.late_request;
    late.conn = input.requests[static_cast<std::size_t>(late.request)].conn;
    late.at_ms = without.late_at_ms;
    late.due_by_us = us_of(without.late_due_ms + input.cluster.max_lateness_ms);
  }
  verdict.failure = late;
  verdict.lateness_ms = std::max(without.lateness_ms, input.cluster.max_lateness_ms + 1);
  verdict.late_request = without.late_request;
  verdict.late_what = without.late_what;
  verdict.late_at_ms = without.late_at_ms;
  verdict.late_due_ms = without.late_due_ms;
  return verdict;
}

}  // namespace lockstep::history
