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
// removes it earlier reaches too.
#include "check/cluster_frontier.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <span>

#include <fmt/format.h>

#include "impl/assert.hpp"
#include "check/fingerprint.hpp"
#include "check/frontier_search.hpp"
#include "check/index_set.hpp"
#include "check/zone.hpp"

namespace lockstep::history {

namespace {

// Milliseconds as microseconds, saturating: a due instant may be
// unbounded_ms (a wait or a cause with no bound), and a maximum lateness is
// added to it.
std::int64_t us_of(std::int64_t ms) {
  constexpr auto most = std::numeric_limits<std::int64_t>::max();
  return ms >= most / 1000 ? most : ms * 1000;
}

// The variables of a configuration's zone: the origin (instant 0), the
// holder's grant (the key free: the instant it went free), the cursor, the
// waiters in queue order, then the extras (Config::extras).
constexpr std::uint32_t origin = 0, holder_at = 1, cursor_at = 2, first_waiter_at = 3;

// The instants something may have happened at: [lo, hi].
struct Span {
  std::int64_t lo = 0, hi = 0;
};

struct Holder {
  std::int32_t request = -1;  // the grant's operation; -1: the key is not registered
  std::uint64_t token = 0;    // 0: the grant's answer was not seen
  friend bool operator==(const Holder&, const Holder&) = default;
};

struct Waiter {
  std::uint32_t request = 0;
  // For reports: the last hand-off that passed this waiter by, granting
  // `passed_by` (-1: none), caused by `pass_cause` ('r' the release
  // `pass_request`, 'e' the Expire of the grant to it).
  std::int32_t passed_by = -1;
  std::int32_t pass_request = -1;
  char pass_cause = 0;
  std::int64_t pass_lo = 0, pass_hi = 0;  // the hand-off's instants
  friend bool operator==(const Waiter& a, const Waiter& b) { return a.request == b.request; }
};

// A variable of the zone beyond the holder, the cursor and the waiters.
struct Extra {
  std::uint32_t request = 0;
  // 'c': the cursor before the operation `request` being applied (its step
  //      takes its place in the order when it is done); 'h': the same, the
  //      operation found the key held (its lateness is checked then); 'r':
  //      the same, the operation took no place in the order (a waiter that
  //      joined lazily), so the cursor comes back;
  // 'T', 'N': the instant of an operation applied without a branch during
  //      this visit, whose outcome (a try-lock's `T`, an `N`) the steps
  //      after it do not change: it floats among them, until the visit ends;
  // 'f': the instant of an operation gone from the queue, which `request`
  //      (sent after it on its connection) is applied no earlier than;
  // 'g': while the key passes on, the instant of the grant that ended (of
  //      `request`), so that the lateness of its end is counted once what
  //      the hand-off adds is known (end_grant);
  // 'Q': while the key is held, the instant the key became held, or the
  //      queueing of the last waiter handed it since: a request nobody
  //      heard the answer of that a hand-off grants was queued no earlier
  //      (pass_on);
  // 'u': while a hand-off grants such a request, its queueing.
  char kind = 'c';
  std::int32_t observation = -1;  // 'T': what it explained (taken back if the key goes free first)
  friend bool operator==(const Extra&, const Extra&) = default;
};

struct Config : ConfigCore<Holder, Waiter, IndexSet> {
  Zone zone;
  std::vector<Extra> extras;
  // The least lateness (ms) of the explanations it stands for, as far as
  // it is known (a lower bound: each late step at its least, one at a
  // time), which step gave it, and when. Not part of its identity: merged
  // configurations keep the least.
  std::int64_t lateness = 0;
  std::int32_t late_request = -1;
  char late_what = 0;
  std::int64_t late_at = 0, late_due = 0;
};

using Configs = std::vector<Config>;

std::uint32_t waiter_at(std::size_t index) { return first_waiter_at + static_cast<std::uint32_t>(index); }
std::uint32_t extra_at(const Config& c, std::size_t k) {
  return first_waiter_at + static_cast<std::uint32_t>(c.queue.size() + k);
}

Fingerprint fingerprint(const Config& c, bool with_zone, bool with_lateness) {
  FingerprintBuilder print;
  fingerprint_core(print, c, blank_all);
  print.add(c.extras.size());
  for (const auto& extra : c.extras) {
    print.add(extra.request);
    print.add(static_cast<std::uint64_t>(extra.kind));
    print.add(static_cast<std::uint64_t>(extra.observation + 1));
  }
  if (with_zone) c.zone.add_to(print);
  if (with_lateness) print.add(static_cast<std::uint64_t>(c.lateness));
  return print.finish();
}

// Keeps the lesser lateness of two configurations that are otherwise one
// (or one of which holds the other).
void keep_least_lateness(Config& into, const Config& other) {
  if (other.lateness < into.lateness) {
    into.lateness = other.lateness;
    into.late_request = other.late_request;
    into.late_what = other.late_what;
    into.late_at = other.late_at;
    into.late_due = other.late_due;
  }
}

// A deferred answer's on-time instant: x_var + offset.
struct OnTime {
  std::uint32_t var = origin;
  std::int64_t offset = 0;
};

// Cluster mode's rules, for the search of frontier_search.hpp.
class ClusterFrontier : public FrontierSearch<ClusterFrontier, Config> {
 public:
  ClusterFrontier(const KeyInput& input, const KeyOracles& oracles, const KeyCheckOptions& options)
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

 private:
  friend class FrontierSearch<ClusterFrontier, Config>;

  std::int64_t lease_of(std::int32_t request) const { return in_.requests[static_cast<std::uint32_t>(request)].lease_ms; }
  std::int64_t wait_of(std::uint32_t request) const { return in_.requests[request].wait_ms; }
  std::uint32_t owner_of(std::uint32_t request) const { return in_.requests[request].owner; }
  bool indeterminate(std::uint32_t request) const { return no_answer_[request]; }
  // From when the operation's waiter may have left with the copy's
  // connection, unanswered: at any time once it was sent, whoever ended the
  // connection (docs/protocol.md, "Waiters and leader changes": a leader
  // change detaches the waiter, and a hand-off or its grace drops it, while
  // the old leader's connection may stay open until the tester gives it
  // up); unbounded_ms when the connection does not end.
  std::int64_t close_read_ms(const KeyCopy& copy) const {
    const auto& conn = in_.conns[copy.conn];
    if (!conn.closes) return unbounded_ms;
    return floor_ms(copy.sent_us);
  }
  // Whether `seen` may answer a retry of `request`: a later send of the
  // operation on its connection, made before it was read. That retry may
  // have been applied after the cause (a request may reach the leader at
  // any time after it was sent, C2), and the session then answers it the
  // outcome at once (C4): an answer of the retry's own, which no rule
  // counts as late (C12 counts a deferred answer, heard where its waiter
  // was). A client that retries late hears its outcome late, and the
  // cluster was not late: counting it once cried lateness on a correct run
  // (swarm seed 104 of the cluster simulator, a waiter's `T` heard on its
  // fourth retry 11 s after the Timeout).
  bool heard_on_retry(std::uint32_t request, const KeyObservation& seen) const {
    const auto& copies = copies_[request];
    return std::any_of(copies.begin() + 1, copies.end(),
                       [&](const KeyCopy& copy) { return copy.conn == seen.conn && copy.sent_us <= seen.received_us; });
  }
  // The connection a deferred answer to `request` is owed on, if the tester
  // watches it long enough: the operation's only one, not cut; else null.
  const KeyConnection* owed_on(std::uint32_t request, bool deferred) const {
    if (!deferred || copies_[request].size() > 1) return nullptr;
    const auto& conn = in_.conns[in_.requests[request].conn];
    return conn.cut ? nullptr : &conn;
  }

  // The step from x_u to x_v is late by x_v - x_u - due_gap: with a
  // maximum lateness, x_v - x_u <= due_gap + maximum is a constraint (false,
  // with the failure kept, when it cannot hold); without one, the least it
  // can be is noted. `at_ms` names the late step's instant for reports.
  bool late(Config& c, std::uint32_t u, std::uint32_t v, std::int64_t due_gap, std::int32_t request, char what,
            std::int64_t at_ms) const;
  void note_lateness(Config& c, std::int64_t amount, std::int32_t request, char what, std::int64_t at_ms) const;

  // The observations of a connection from the first a configuration may
  // not have explained (those before `observed.low()` all are).
  std::span<const std::uint32_t> unexplained_on(const Config& c, std::uint32_t conn) const {
    const auto& list = in_.conns[conn].observations;
    const auto from = std::lower_bound(list.begin(), list.end(), c.observed.low());
    return {list.data() + (from - list.begin()), static_cast<std::size_t>(list.end() - from)};
  }

  std::int32_t waiter_index(const Config& c, std::uint32_t request) const {
    for (std::size_t i = 0; i < c.queue.size(); ++i) {
      if (c.queue[i].request == request) return static_cast<std::int32_t>(i);
    }
    return -1;
  }
  // The first extra of one of `kinds` (and of `request`, when given), or -1.
  std::int32_t extra_index(const Config& c, std::string_view kinds, std::int64_t request = -1) const {
    for (std::size_t k = 0; k < c.extras.size(); ++k) {
      if (kinds.find(c.extras[k].kind) == std::string_view::npos) continue;
      if (request >= 0 && c.extras[k].request != static_cast<std::uint64_t>(request)) continue;
      return static_cast<std::int32_t>(k);
    }
    return -1;
  }
  void remove_extra(Config& c, std::size_t k) const {
    c.zone.remove(extra_at(c, k));
    c.extras.erase(c.extras.begin() + static_cast<std::ptrdiff_t>(k));
  }
  // x_var is no earlier than the instant of the operation before `request`
  // on its connection (a waiter still queued, an operation floating, or one
  // gone from the queue).
  bool after_predecessor(Config& c, std::uint32_t var, std::uint32_t request) const;
  // Drops the waiter `index` from the queue; with `floor`, its instant
  // stays as one when the operation after it on its connection is still to
  // apply (a waiter granted needs none: that operation comes after the
  // hand-off, which came after the queueing).
  void drop_waiter(Config& c, std::size_t index, bool floor) const;

  bool same_class(const KeyObservation& seen, std::uint32_t request) const;
  bool may_be_unseen(const Config& c, std::uint32_t request, bool dropped) const;
  // Whether a grant to `request` may be heard as the next grant of the key
  // or go unheard (what emit needs, but the instants): a head it cannot be
  // is not tried.
  bool may_be_granted(const Config& c, std::uint32_t request) const {
    for (const auto& copy : copies_[request]) {
      for (const auto index : unexplained_on(c, copy.conn)) {
        if (c.observed.contains(index)) continue;
        const auto& seen = in_.observations[index];
        if (seen.received_us >= copy.sent_us && matches(c, seen, ResponseKind::granted, owner_of(request), 0)) return true;
      }
    }
    return may_be_unseen(c, request, false);
  }
  // A waiter dropped by a Close: the earliest instant a connection of its
  // operation other than those in `hearing` (which heard its `T`) may
  // have closed; unbounded_ms when none may.
  std::int64_t closed_elsewhere(std::uint32_t request, const std::vector<std::uint32_t>& hearing) const {
    std::int64_t first = unbounded_ms;
    for (const auto& copy : copies_[request]) {
      if (std::find(hearing.begin(), hearing.end(), copy.conn) == hearing.end()) first = std::min(first, close_read_ms(copy));
    }
    return first;
  }
  // The outcome of `request`, caused at x_cause: any unexplained
  // observation of it on a connection that carried the operation, read no
  // earlier than a millisecond before x_cause and no earlier than that
  // send; or nothing heard (may_be_unseen). `dropped`: the `T` of a waiter
  // the Close of one of its connections dropped (at x_cause), which that
  // connection does not hear (the node has forgotten it; its session
  // records `T` for a retry elsewhere). A deferred answer arriving more
  // than the tolerance after `on_time` is late by the difference.
  void emit(Config c, std::uint32_t request, ResponseKind kind, std::uint64_t token, std::uint32_t cause, Cause why,
            OnTime on_time, std::int32_t cause_request, Configs& out, bool optional = false, bool dropped = false) const;
  // Marks the same line heard again on the operation's other connections;
  // adds their connections to `hearing`.
  void replays(Config& c, std::uint32_t request, const KeyObservation& seen, std::uint32_t cause,
               std::vector<std::uint32_t>& hearing) const;

  // The operation is applied at an instant of `when`, after the cursor.
  void handle(Config c, std::uint32_t request, Span when, Configs& out) const;
  void acquire(Config c, std::uint32_t request, Span when, Configs& out) const;
  void acquire_held(Config c, std::uint32_t request, Span when, Configs& out) const;
  void enqueue(Config c, std::uint32_t request, Span when, Configs& out) const;
  void release(Config c, std::uint32_t request, Configs& out) const;
  void release_holder(Config c, std::uint32_t request, Configs& out, bool optional = false) const;
  Configs unheard_holder(const Config& c, std::uint32_t request, std::uint64_t token) const;
  Span span_of(std::uint32_t request, std::int64_t at) const {
    return Span{std::max(visit_from_, earliest_[request]), std::min(at, latest_[request])};
  }
  // The step just applied (its instant in the cursor) ends: it takes its
  // place in the order, or the cursor comes back (saved_ kinds above).
  // False when the key's lateness then fails.
  bool commit(Config& c) const;
  // The key's 'Q' (Extra) becomes x_from.
  void set_queue_floor(Config& c, std::uint32_t from) const {
    auto k = extra_index(c, "Q");
    if (k < 0) {
      const auto at = c.zone.add();
      c.zone.copy(at, from);
      c.extras.push_back(Extra{0, 'Q'});
      return;
    }
    c.zone.copy(extra_at(c, static_cast<std::size_t>(k)), from);
  }
  // The grant of the holder ends at the cursor's instant (an Expire, or a
  // release that found it held): kept (keep_grant) while the key passes
  // on, its lateness is noted once the hand-off's constraints are in
  // (end_grant).
  void keep_grant(Config& c) const {
    const auto at = c.zone.add();
    c.zone.copy(at, holder_at);
    c.extras.push_back(Extra{static_cast<std::uint32_t>(c.holder.request), 'g'});
  }
  void end_grant(Config& c) const {
    const auto k = static_cast<std::size_t>(extra_index(c, "g"));
    const auto request = static_cast<std::int32_t>(c.extras[k].request);
    const auto grant = extra_at(c, k);
    const auto most_negative = c.zone.bound(cursor_at, grant);
    if (most_negative < Zone::open) {
      note_lateness(c, -most_negative - lease_of(request) - allowance_, request, 'e', c.zone.earliest(cursor_at));
    }
    remove_extra(c, k);
  }
  // The operation just applied, which explained `observation`, floats
  // among this visit's steps.
  void float_step(Config& c, std::uint32_t request, char kind, std::int32_t observation) const;

  // The key passes on at the cursor's instant: to the first waiter still
  // waiting, or nobody.
  void pass_on(Config c, Cause why, std::int32_t cause_request, OnTime on_time, Configs& out) const;
  void hand_to(Config base, std::uint32_t head, Cause why, std::int32_t cause_request, OnTime on_time, Configs& out) const;
  void pass_on_nobody(Config c, std::size_t upto, Configs& out) const;
  // Whether `gone` (where a waiter left) stands for every explanation that
  // `kept` (the same but for that waiter, still to leave, or not applied
  // yet) continues into: the same instants known of everything else, so
  // whatever `kept` goes on to, with the waiter leaving later (earlier is
  // always possible: DESIGN.md, "Cluster mode"), `gone` goes on to too. The
  // least lateness is settled apart (least_lateness.cpp), which checks
  // that the figure it starts from is not too high.
  bool finished(const Config& kept, const Config& gone) const {
    return gone.zone == kept.zone && gone.holder == kept.holder && gone.last_token == kept.last_token &&
           gone.extras == kept.extras;
  }
  // Whether `gone`, where waiter `request` left, may give up what `kept`
  // (where it is still to leave, or not applied yet) may still explain: a
  // grant of its owner heard on one of its connections (staying, it may be
  // handed the key later), or a `T` of its owner there when `gone` heard
  // none (left by a Close, or unseen). Then `gone` does not stand for
  // `kept`.
  bool drops_heard_answer(const Config& kept, const Config& gone, std::uint32_t request) const {
    const auto owner = owner_of(request);
    for (const auto& copy : copies_[request]) {
      for (const auto index : unexplained_on(kept, copy.conn)) {
        if (kept.observed.contains(index)) continue;
        const auto& seen = in_.observations[index];
        if (seen.received_us < copy.sent_us || seen.owner != owner) continue;
        if (seen.kind == ResponseKind::granted) return true;
        if (seen.kind == ResponseKind::timed_out && gone.explained <= kept.explained) return true;
      }
    }
    return false;
  }
  // The reading where waiter `request` left now stands for the one where it
  // is still to leave (finished); its lateness is then no more than that
  // one's could be, so that it stays a lower bound of the least lateness:
  // what the other already had, or the least its `T`, still to come, could
  // be late by (`latest_queueing`: the latest instant it may be queued at
  // there).
  void stands_for(Config& gone, const Config& kept, std::uint32_t request, std::int64_t latest_queueing) const {
    std::int64_t still = kept.lateness;
    const auto first = first_of_class(kept, request);
    if (first >= 0 && latest_queueing < unbounded_ms) {
      const auto& seen = in_.observations[static_cast<std::size_t>(first)];
      if (seen.kind == ResponseKind::timed_out) {
        still = std::max(still, floor_ms(seen.arrived_from_us) -
                                    (latest_queueing + wait_of(request) + allowance_ + 1 + in_.tolerance_ms));
      }
    }
    if (still < gone.lateness) {
      gone.lateness = still;
      gone.late_request = -1;  // a bound of two readings: no one step to name
    }
  }

  // The key goes free at the cursor's instant.
  void free_key(Config c, std::size_t from, Configs& out) const;
  ResponseKind observed_kind(const Config& c, std::uint32_t request) const;
  // The first unexplained observation of the request's class on its
  // connections (by arrival), or -1.
  std::int64_t first_of_class(const Config& c, std::uint32_t request) const;

  // Whether waiter `index` may have left by x_by + gap (its Timeout's
  // window open, or a Close of one of its connections read).
  bool may_leave_by(const Config& c, std::size_t index, std::uint32_t by, std::int64_t gap) const;
  // Waiter `index` leaves with its `T`, at an instant of its own no later
  // than x_by + gap: by its Timeout, or by a Close.
  void leave(Config c, std::size_t index, std::uint32_t by, std::int64_t gap, Configs& out) const;
  void leave_at(Config c, std::size_t index, std::uint32_t t, Configs& left) const;
  void leave_all(Config c, std::vector<std::uint32_t> requests, Configs& out) const;
  bool observed_timeout_ends_now(const Config& c, std::uint32_t request, std::int64_t at) const;

  void due_waiters(Config c, std::size_t from, std::int64_t at, Configs& out);
  void expire(Config c, std::int64_t at, Configs& out) const;
  void inputs(Config c, std::int64_t at, Configs& out, std::size_t& orders);
  bool inert(const Config& before, const Config& after) const {
    return before.holder == after.holder && before.queue == after.queue && before.last_token == after.last_token;
  }
  bool alone_in_class(const Config& c, std::uint32_t request) const;
  bool alive(const Config& c, std::int64_t at) const;
  // The end of a visit: what floated is placed, the cursor forgotten, and
  // a key still held is held past `at`.
  bool end_visit(Config& c, std::int64_t at) const;

  void forget_spent(Config& c) const;
  static std::uint64_t bytes_of(const Config& c);
  // What came instead of a failure kept (fail, in frontier_search.hpp).
  void explain_failure(const Config& c) const;
  std::string early_timeout(const Config& c, const KeyObservation& seen) const;
  std::int64_t next_instant(const Configs& frontier, std::int64_t at) const;
  bool is_final(const Config& c) const;
  std::string describe(const Config& c, std::int64_t at) const;
  std::string instant_range(const Config& c, std::uint32_t var) const {
    const auto lo = c.zone.earliest(var), hi = c.zone.latest(var);
    if (hi >= unbounded_ms) return fmt::format("from {}, or not yet", instant_text(lo));
    return span_text(lo, hi);
  }

  // The search's hooks (frontier_search.hpp).
  void begin(Configs& frontier, std::int64_t at) {
    visit_from_ = at;
    for (auto& c : frontier) {
      c.zone = Zone();
      c.zone.add();  // holder_at
      c.zone.add();  // cursor_at
    }
  }
  void fire_due(Config c, std::int64_t at, Configs& out) {
    // The visit's first step comes no earlier than its span.
    c.zone.forget(cursor_at);
    c.zone.within(cursor_at, visit_from_, visit_from_);
    due_waiters(std::move(c), 0, at, out);
  }
  void settle(Configs& after, std::int64_t at) {
    // A waiter the inputs of this visit queued may also leave by its end,
    // its `T` caused before the next visit: fire_due ran before them.
    Configs settled;
    settled.reserve(after.size());
    for (auto& c : after) due_waiters(std::move(c), 0, at, settled);
    after.clear();
    for (auto& c : settled) {
      if (!end_visit(c, at)) continue;
      forget_spent(c);
      after.push_back(std::move(c));
    }
  }
  std::int64_t advance(Configs& frontier, std::int64_t at) {
    visit_from_ = at + 1;
    return next_instant(frontier, at);
  }
  void add_final(const Config& c, Configs& finals) const;
  void final_waiters(Config c, std::size_t j, Configs& finals) const;
  void explained(const Configs& finals, KeyVerdict& verdict) const;
  // Configurations equal but for their lateness become the least late
  // (exact: the future of both is the same).
  Fingerprint merge_key(const Config& c) const { return fingerprint(c, true, false); }
  Fingerprint box_key(const Config& c) const { return fingerprint(c, false, false); }
  Fingerprint expansion_key(const Config& c) const { return fingerprint(c, true, true); }
  static void merge_equal(Config& into, const Config& other) { keep_least_lateness(into, other); }
  static void merge_box(Config& into, const Config& other) { keep_least_lateness(into, other); }
  // A configuration whose zone is inside one already expanded at this
  // instant, equal in all else and no less late, is not expanded again:
  // every explanation it stands for, the other stands for too, and what
  // the rules do is the same for both (a step allowed in its zone is
  // allowed in the larger one, with a zone that holds its result).
  bool first_expansion(const Config& c) {
    if (expanded_.empty()) {
      expanded_zones_.clear();
      expanded_store_.clear();
    }
    if (!expanded_.insert(expansion_key(c)).second) return false;
    auto& seen = expanded_zones_[box_key(c)];
    for (const auto* other : seen) {
      if (other->lateness <= c.lateness && c.zone.inside(other->zone)) return false;
    }
    seen.push_back(&expanded_store_.emplace_back(Expanded{c.lateness, c.zone}));
    return true;
  }
  // Configurations equal but for their zones: one whose zone is inside
  // another's is dropped, and two whose union is a zone become it (both
  // exact: the configuration kept stands for exactly what both did).
  void merge_boxes(Configs& configs) const;
  // Configurations equal in all but their lateness become the least late.
  void merge_same(Configs& configs) const {
    if (configs.size() < 2) return;
    std::unordered_map<Fingerprint, std::size_t, FingerprintHash> index;
    Configs kept;
    for (auto& c : configs) {
      const auto [it, added] = index.emplace(merge_key(c), kept.size());
      if (added) {
        kept.push_back(std::move(c));
      } else {
        keep_least_lateness(kept[it->second], c);
      }
    }
    configs = std::move(kept);
  }

  std::int64_t allowance_;  // 2·S
  std::int64_t max_late_;   // -1: none
  // The configurations expanded at this instant, by what they are but for
  // their zones (first_expansion).
  struct Expanded {
    std::int64_t lateness = 0;
    Zone zone;
  };
  std::unordered_map<Fingerprint, std::vector<const Expanded*>, FingerprintHash> expanded_zones_;
  std::deque<Expanded> expanded_store_;
  std::vector<std::uint32_t> unanswered_;        // the requests no answer arrived for (indeterminate)
  std::vector<bool> no_answer_;                  // per request: in unanswered_
  std::vector<std::vector<KeyCopy>> copies_;     // every send of each operation, the first first
  std::vector<std::int64_t> leave_by_close_;     // per operation: a Close may drop its waiter from then
  std::vector<std::int32_t> next_on_conn_;       // per operation: the one after it on its connection (previous_'s inverse)
  std::vector<std::int64_t> last_chances_;       // the latest cause of each observation, sorted
  std::int64_t visit_from_ = 0;                  // the instant after the previous visit
  // Per request: another request of its class (owner, or token) shares one
  // of its connections, so an answer of that class may be either's.
  std::vector<bool> class_shared_;
};

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
  const auto owner = owner_of(request);
  // The candidates, by arrival. One line heard on several of the
  // operation's connections is its outcome and its replays: whichever is
  // taken first, the others are its replays (the same configuration), so
  // each line is tried once, from its first arrival.
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
  std::vector<std::string_view> tried;
  bool any = false;
  for (const auto index : candidates) {
    const auto& seen = in_.observations[index];
    if (std::find(tried.begin(), tried.end(), seen.line) != tried.end()) continue;
    tried.push_back(seen.line);
    Config matched = c;
    // Read no earlier than a millisecond before its cause.
    if (!matched.zone.at_most(cause, latest_cause_ms(seen.received_us))) continue;
    // A deferred answer that arrived past its cause's on-time instant and
    // the tolerance is late by the difference; heard on a retry's
    // connection, it may be that retry's own answer (below), never late.
    const auto arrived_ms = floor_ms(seen.arrived_from_us);
    if (deferred && !heard_on_retry(request, seen) && !late(matched, on_time.var, origin, on_time.offset + 1 + in_.tolerance_ms - arrived_ms,
                          static_cast<std::int32_t>(request), 'a', arrived_ms)) {
      continue;
    }
    matched.observed.insert(index);
    ++matched.explained;
    std::vector<std::uint32_t> hearing{seen.conn};
    replays(matched, request, seen, cause, hearing);
    // Dropped by the Close of a connection that heard none of it.
    if (dropped && !matched.zone.at_least(cause, closed_elsewhere(request, hearing))) continue;
    if (kind == ResponseKind::granted) {
      matched.holder.token = seen.token;
      matched.last_token = seen.token;
      note_grant(index, matched.zone.earliest(cause), matched.zone.latest(cause));
    }
    record(matched, Step{matched.zone.earliest(cause), static_cast<std::int32_t>(request), static_cast<std::int32_t>(index), 'a'});
    out.push_back(std::move(matched));
    any = true;
  }
  if (may_be_unseen(c, request, dropped)) {
    // With a maximum lateness, a deferred answer to an operation sent once
    // is owed on its connection: never heard though the tester watched it
    // past the answer's on-time arrival, it is late by at least that watch.
    const auto* conn = owed_on(request, deferred);
    if (conn != nullptr) {
      const auto end_ms = floor_ms(conn->end_us);
      if (!late(c, on_time.var, origin, on_time.offset + in_.tolerance_ms - end_ms, static_cast<std::int32_t>(request), 'a',
                end_ms + 1)) {
        return;
      }
    }
    out.push_back(std::move(c));
    return;
  }
  if (any || optional) return;
  KeyFailure failure;
  failure.kind = KeyFailure::Kind::missing;
  failure.cause = why;
  failure.response = kind;
  failure.conn = in_.requests[request].conn;
  failure.owner = owner;
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
// retry's connection: the same line, read after the retry was sent and no
// earlier than a millisecond before the cause.
void ClusterFrontier::replays(Config& c, std::uint32_t request, const KeyObservation& seen, std::uint32_t cause,
                              std::vector<std::uint32_t>& hearing) const {
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
      if (again.received_us < copy.sent_us || again.line != seen.line) continue;
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
      !after_predecessor(c, cursor_at, request)) {
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
    // Unless its answer was a grant, the key may be held by a request
    // nobody heard the answer of, granted before (unheard_holder).
    if (!indeterminate(request) && observed_kind(c, request) != ResponseKind::granted) {
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
  if (!c.zone.no_later(extra_at(c, k), var) || !c.zone.within(var, when.lo, latest_[request]) ||
      !after_predecessor(c, var, request)) {
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
    const auto previous = previous_[other];
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
  emit(std::move(c), request, ResponseKind::released, asked.token, cursor_at, Cause::request, {}, -1, answered, optional);
  // The hand-off is on time with the Release itself.
  for (auto& next : answered) {
    keep_grant(next);
    Configs passed;
    pass_on(std::move(next), Cause::release, static_cast<std::int32_t>(request), OnTime{cursor_at, 0}, passed);
    for (auto& done : passed) {
      end_grant(done);
      out.push_back(std::move(done));
    }
  }
}

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
void ClusterFrontier::pass_on(Config c, Cause why, std::int32_t cause_request, OnTime on_time, Configs& out) const {
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
  std::vector<std::uint32_t> ahead, undecided;
  const auto head_at = extra_at(base, static_cast<std::size_t>(extra_index(base, "u")));
  // Whether a waiter left where staying was dropped (finished), and the
  // least lateness staying could have had.
  bool dominated = false;
  std::int64_t stay_floor = 0;
  for (std::size_t j = 0; j < base.queue.size(); ++j) {
    const auto other = base.queue[j].request;
    bool earlier = base.zone.certainly_before(waiter_at(j), head_at);
    for (auto p = previous_[head]; p >= 0 && !earlier; p = previous_[static_cast<std::uint32_t>(p)]) {
      earlier = static_cast<std::uint32_t>(p) == other;
    }
    if (earlier) {
      ahead.push_back(other);
    } else if (base.zone.maybe_before(waiter_at(j), head_at) && may_leave_by(base, j, cursor_at, 0) &&
               (class_shared_[other] || observed_kind(base, other) != ResponseKind::granted)) {
      undecided.push_back(other);
    } else if (!base.zone.no_later(head_at, waiter_at(j))) {  // queued after the head
      return;
    }
  }
  // An undecided one that cannot have left by now (with its `T` as it was
  // heard) was queued after the head; one whose leaving tells nothing more
  // of the other instants left (finished: that stands for staying too).
  // Both hold alike whatever the others do, which constrains only their
  // own instants.
  std::erase_if(undecided, [&](std::uint32_t other) {
    const auto j = static_cast<std::size_t>(waiter_index(base, other));
    Configs gone;
    leave(base, j, cursor_at, 0, gone);
    if (gone.empty()) {
      if (!base.zone.no_later(head_at, waiter_at(j))) ahead.push_back(other);  // neither: the head cannot be
      return true;
    }
    Config without = base;
    without.zone.remove(waiter_at(j));
    without.queue.erase(without.queue.begin() + static_cast<std::ptrdiff_t>(j));
    if (std::any_of(gone.begin(), gone.end(),
                    [&](const Config& g) { return finished(without, g) && !drops_heard_answer(without, g, other); })) {
      ahead.push_back(other);
      // Its leaving is done below (leave_all), with the others': what
      // staying could have been late by is kept for it (stands_for).
      Config probe = base;
      probe.lateness = std::numeric_limits<std::int64_t>::max();
      stands_for(probe, base, other, base.zone.latest(waiter_at(j)));
      stay_floor = std::max(stay_floor, probe.lateness);
      dominated = true;
      return true;
    }
    return false;
  });
  // Each undecided one: queued after the head, or gone by now.
  std::vector<std::pair<Config, std::vector<std::uint32_t>>> chosen;
  chosen.emplace_back(std::move(base), std::move(ahead));
  for (const auto other : undecided) {
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
  for (auto& [option, leaving] : chosen) {
    const auto before = option.lateness;
    Configs left;
    leave_all(std::move(option), std::move(leaving), left);
    for (auto& next : left) {
      if (dominated && std::max(before, stay_floor) < next.lateness) {
        next.lateness = std::max(before, stay_floor);
        next.late_request = -1;  // a bound of two readings: no one step to name
      }
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
  }
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
  // Or not applied yet: queued later than the key went free, so applied
  // again after it (the cursor), unless it certainly was applied by then
  // or the operation after it on its connection was applied already.
  const auto next = next_on_conn_[request];
  const bool may_wait = c.zone.maybe_before(cursor_at, waiter_at(index)) &&
                        !(next >= 0 && c.handled.contains(static_cast<std::uint32_t>(next)));
  Configs left;
  if (may_leave) leave(c, index, cursor_at, 0, left);
  bool dominated = false;
  if (may_wait) {
    c.zone.remove(waiter_at(index));
    c.queue.erase(c.queue.begin() + static_cast<std::ptrdiff_t>(index));
    c.handled.erase(request);
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
void ClusterFrontier::leave(Config c, std::size_t index, std::uint32_t by, std::int64_t gap, Configs& out) const {
  const auto gone = c.queue[index].request;
  const auto w = waiter_at(index);
  const auto t = c.zone.add();
  if (!c.zone.no_later(w, t) || !c.zone.no_later(t, by, gap)) return;
  Configs left;
  leave_at(std::move(c), index, t, left);
  for (auto& next : left) {
    next.zone.remove(t);
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
      leave(std::move(c), j, origin, at, left);
      for (auto& next : left) due_waiters(std::move(next), j, at, out);
      return;
    }
    if (may_leave_by(c, j, origin, at) && observed_timeout_ends_now(c, request, at)) {
      Configs left;
      leave(c, j, origin, at, left);
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
  if (!c.zone.no_later(saved, cursor_at) || !c.zone.within(cursor_at, visit_from_, at) ||
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
      // A waiting acquire that joins the queue (enqueue: its instant also
      // stands for "not applied yet").
      const bool joins = next.size() == 1 && next.front().holder == c.holder &&
                         next.front().queue.size() == c.queue.size() + 1 && next.front().explained == c.explained;
      // When another operation of its class shares a connection with it,
      // only if what it explains is the first unexplained answer of the
      // class there: a later one may be the other's, and applied after
      // what else happens at this visit (an Expire, a release) the request
      // may get another outcome (a try-lock's `T` read later for a later
      // try-lock of the same owner, while the first was granted). The first
      // is its own: what a node answers at once goes out in the order it
      // read the requests of a connection.
      const auto first = class_shared_[request] ? first_of_class(c, request) : -1;
      const bool own_answer = !class_shared_[request] ||
                              (copies_[request].size() == 1 && first >= 0 && next.size() == 1 &&
                               next.front().observed.contains(static_cast<std::uint32_t>(first)));
      const auto& asked = in_.requests[request];
      // An `N` floats only when no grant of the key still to come carries
      // its token (that grant would change its outcome).
      const bool floats = asked.acquire || asked.token <= c.last_token ||
                          !std::binary_search(grant_tokens_.begin(), grant_tokens_.end(), asked.token);
      if (joins) {
        c = std::move(next.front());
        commit(c);
        again = true;
        break;
      }
      if (next.size() == 1 && next.front().explained == c.explained + 1 && inert(c, next.front()) &&
          alone_in_class(c, request) && own_answer && floats) {
        std::int32_t observation = -1;
        for (const auto& copy : copies_[request]) {
          for (const auto index : in_.conns[copy.conn].observations) {
            if (next.front().observed.contains(index) && !c.observed.contains(index)) {
              observation = static_cast<std::int32_t>(index);
            }
          }
        }
        c = std::move(next.front());
        float_step(c, request, asked.acquire ? 'T' : 'N', observation);
        again = true;
        break;
      }
      // A request no answer of which arrived, whose application changes
      // nothing (a `T`, `N` or `B` nobody heard): the same as not applying
      // it, which forget_spent would make of it anyway.
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

std::uint64_t ClusterFrontier::bytes_of(const Config& c) {
  return sizeof(Config) + c.queue.capacity() * sizeof(Waiter) + c.extras.capacity() * sizeof(Extra) + c.zone.bytes() +
         (c.handled.extra.capacity() + c.handled.holes.capacity() + c.observed.extra.capacity() +
          c.observed.holes.capacity()) *
             sizeof(std::uint32_t);
}

// A request no answer of which arrived, applied and gone without a trace
// in the key (neither its holder nor a waiter), is taken as not applied:
// what it did (a grant nobody heard, then expired; a queue it left) is what
// applying it later or never would do, so the configurations that differ
// only in which of them were applied become one. This accepts more than
// the rules (such a request could be applied twice), never less.
void ClusterFrontier::forget_spent(Config& c) const {
  for (const auto i : unanswered_) {
    if (!c.handled.contains(i) || c.holder.request == static_cast<std::int32_t>(i)) continue;
    if (waiter_index(c, i) >= 0) continue;
    const auto next = next_on_conn_[i];
    if (next >= 0 && (c.handled.contains(static_cast<std::uint32_t>(next)) || extra_index(c, "f", next) >= 0)) continue;
    c.handled.erase(i);
  }
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
    if (extra.kind == 'T' || extra.kind == 'N' || (extra.kind == 'f' && c.handled.contains(extra.request))) {
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
  const auto request = c.queue[j].request;
  if (const auto* conn = owed_on(request, true); conn != nullptr) {
    const auto end_ms = floor_ms(conn->end_us);
    if (!late(c, waiter_at(j), origin, wait_of(request) + allowance_ + in_.tolerance_ms - end_ms,
              static_cast<std::int32_t>(request), 'a', end_ms + 1)) {
      return;
    }
  }
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

}  // namespace

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
