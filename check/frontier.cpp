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
//
// The rules are one class (frontier_internal.hpp): this file holds the
// instants (which requests and closes are available, the inputs in every
// order, when a configuration dies, the jumps ahead, the end);
// frontier_steps.cpp what a request, a timeout or a sweep does.
#include "check/frontier.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "check/cluster_frontier.hpp"
#include "check/frontier_internal.hpp"

namespace lockstep::history {

namespace simple_frontier {

// Answers looked at when asking whether a pending request can still be
// answered; past it the request is taken to be answerable.
constexpr std::size_t lookahead_max = 64;

Frontier::Frontier(const KeyInput& input, const KeyOracles& oracles, const PhaseSet& phases,
                   const KeyCheckOptions& options)
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

RequestList Frontier::available(const Config& c, std::int64_t at) const {
  RequestList found;
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
RequestList Frontier::closable(const Config& c, std::int64_t at) const {
  RequestList found;
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
    erase_if(closed.queue, [&](const Waiter& waiter) { return conn_of(waiter.request) == conn; });
    record(closed, Step{at, -1, -1, 'c'});
    inputs(std::move(closed), at, out, orders);
  }
  out.push_back(std::move(c));  // nothing more at this instant
}

std::uint64_t Frontier::bytes_of(const Config& c) {
  return sizeof(Config) + c.queue.heap_bytes() + c.handled.extra.heap_bytes() + c.observed.extra.heap_bytes() +
         c.phases.ranges().heap_bytes();
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

}  // namespace simple_frontier

using simple_frontier::Frontier;

KeyVerdict check_simple_key(const KeyInput& input, const KeyOracles& oracles, const PhaseSet& phases,
                            const KeyCheckOptions& options) {
  return Frontier(input, oracles, phases, options).run();
}

KeyVerdict check_key(const KeyInput& input, const KeyOracles& oracles, const PhaseSet& phases,
                     const KeyCheckOptions& options) {
  if (input.cluster.on) return check_cluster_key(input, oracles, options);
  return check_simple_key(input, oracles, phases, options);
}

}  // namespace lockstep::history
