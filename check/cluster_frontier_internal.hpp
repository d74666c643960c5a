// The rules of cluster mode's per-key search as one class, ClusterFrontier,
// with the configurations it carries (cluster_frontier.cpp says what they
// are). Declared here, so that its rules may be defined in a file for each
// part of them: cluster_frontier.cpp the visits and the end,
// cluster_frontier_steps.cpp an operation applied,
// cluster_frontier_queue.cpp the key passing on and waiters leaving,
// cluster_frontier_answers.cpp the answers heard and their lateness. Only
// those files include it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "check/fingerprint.hpp"
#include "check/frontier_search.hpp"
#include "check/index_set.hpp"
#include "check/key_input.hpp"
#include "check/zone.hpp"

namespace lockstep::history::cluster_frontier {

// Milliseconds as microseconds, saturating: a due instant may be
// unbounded_ms (a wait or a cause with no bound), and a maximum lateness is
// added to it.
inline std::int64_t us_of(std::int64_t ms) {
  constexpr auto most = std::numeric_limits<std::int64_t>::max();
  return ms >= most / 1000 ? most : ms * 1000;
}

// The variables of a configuration's zone: the origin (instant 0), the
// holder's grant (the key free: the instant it went free), the cursor, the
// waiters in queue order, then the extras (Config::extras).
inline constexpr std::uint32_t origin = 0, holder_at = 1, cursor_at = 2, first_waiter_at = 3;

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
  // 'u': while a hand-off grants such a request, its queueing;
  // 'L': the instant a waiter left by its Timeout at this visit, decided
  //      before the visit's steps (due_waiters): every step after it is no
  //      earlier, since it found the waiter gone (after_left), until the
  //      visit ends.
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

inline std::uint32_t waiter_at(std::size_t index) { return first_waiter_at + static_cast<std::uint32_t>(index); }
inline std::uint32_t extra_at(const Config& c, std::size_t k) {
  return first_waiter_at + static_cast<std::uint32_t>(c.queue.size() + k);
}

inline Fingerprint fingerprint(const Config& c, bool with_zone, bool with_lateness) {
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
inline void keep_least_lateness(Config& into, const Config& other) {
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
  ClusterFrontier(const KeyInput& input, const KeyOracles& oracles, const KeyCheckOptions& options);

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

  // C18: the latest first send (µs) of the operations this configuration
  // applied and placed before the step now: an answer that step produces is
  // read no earlier. The requests are in the order of their first sends, so
  // it is the highest of them. Aside: those floating among the visit's
  // steps, and waiters still queued or joining lazily, whose queueing may
  // come after the step (a relaxation).
  std::int64_t applied_sent_floor(const Config& c) const {
    const auto floats = [&](std::uint32_t request) {
      return extra_index(c, "TNr", request) >= 0 || waiter_index(c, request) >= 0;
    };
    for (auto it = c.handled.extra.end(); it != c.handled.extra.begin();) {
      --it;
      if (!floats(*it)) return in_.requests[*it].sent_us;
    }
    for (std::uint32_t i = c.handled.mark; i-- > 0;) {
      if (std::binary_search(c.handled.holes.begin(), c.handled.holes.end(), i) || floats(i)) continue;
      return in_.requests[i].sent_us;
    }
    return std::numeric_limits<std::int64_t>::min();
  }
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
  std::vector<std::uint32_t> answer_candidates(const Config& c, std::uint32_t request, ResponseKind kind,
                                               std::uint64_t token, std::uint32_t cause, bool dropped) const;
  // deferred_on_time: the on-time instant of a deferred answer, else null.
  bool hear(Config& matched, std::uint32_t request, std::uint32_t index, ResponseKind kind, std::uint32_t cause,
            const OnTime* deferred_on_time, bool dropped, std::int64_t not_before_us) const;
  bool unheard_in_time(Config& c, std::uint32_t request, bool deferred, OnTime on_time) const;
  void fail_missing(const Config& c, std::uint32_t request, ResponseKind kind, std::uint64_t token, std::uint32_t cause,
                    Cause why, OnTime on_time, std::int32_t cause_request) const;
  // Marks the same line heard again on the operation's other connections;
  // adds their connections to `hearing`.
  void replays(Config& c, std::uint32_t request, const KeyObservation& seen, std::uint32_t cause,
               std::int64_t not_before_us, std::vector<std::uint32_t>& hearing) const;

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
  // `cause_read_us`: when the answer of the release that causes it was read
  // (none: never heard, or an Expire).
  void pass_on(Config c, Cause why, std::int32_t cause_request, OnTime on_time, Configs& out,
               std::int64_t cause_read_us = std::numeric_limits<std::int64_t>::max()) const;
  // C18: the waiters sent after `read_us` come after the command whose
  // answer was read then: not applied yet (false when one cannot be).
  bool unapply_sent_after(Config& c, std::int64_t read_us) const;
  // Whether the operations after `request` on its connection that were
  // applied all float among this visit's steps (float_step), so that
  // `request` may be taken as not applied yet, and they with it; and that
  // taking back.
  // Waiter `index` is taken as not applied yet, and the floating operations
  // after it on its connection with it (floats_after must hold).
  void unapply_waiter(Config& c, std::size_t index) const {
    const auto request = c.queue[index].request;
    c.zone.remove(waiter_at(index));
    c.queue.erase(c.queue.begin() + static_cast<std::ptrdiff_t>(index));
    c.handled.erase(request);
    take_back_after(c, request);
  }
  bool floats_after(const Config& c, std::uint32_t request) const {
    for (auto next = next_on_conn_[request]; next >= 0; next = next_on_conn_[static_cast<std::uint32_t>(next)]) {
      if (!c.handled.contains(static_cast<std::uint32_t>(next))) return true;
      if (extra_index(c, "TN", next) < 0) return false;
    }
    return true;
  }
  void take_back_after(Config& c, std::uint32_t request) const {
    for (auto next = next_on_conn_[request]; next >= 0; next = next_on_conn_[static_cast<std::uint32_t>(next)]) {
      if (!c.handled.contains(static_cast<std::uint32_t>(next))) return;
      const auto k = static_cast<std::size_t>(extra_index(c, "TN", next));
      c.handled.erase(static_cast<std::uint32_t>(next));
      if (c.extras[k].observation >= 0) {
        c.observed.erase(static_cast<std::uint32_t>(c.extras[k].observation));
        --c.explained;
      }
      remove_extra(c, k);
    }
  }
  // When the answer `after` explains of `request`, and a configuration
  // whose explained observations were `before` did not, was read (max when
  // none).
  std::int64_t answer_read_us(const IndexSet& before, const Config& after, std::uint32_t request) const {
    std::int64_t first = std::numeric_limits<std::int64_t>::max();
    for (const auto& copy : copies_[request]) {
      const auto& list = in_.conns[copy.conn].observations;
      for (auto it = std::lower_bound(list.begin(), list.end(), before.low()); it != list.end(); ++it) {
        const auto index = *it;
        if (after.observed.contains(index) && !before.contains(index)) {
          first = std::min(first, in_.observations[index].received_us);
        }
      }
    }
    return first;
  }
  void hand_to(Config base, std::uint32_t head, Cause why, std::int32_t cause_request, OnTime on_time, Configs& out) const;
  // The waiters a hand-off finds, against its head (hand_to).
  struct HandOff {
    std::vector<std::uint32_t> ahead;      // queued before the head: they left by now
    std::vector<std::uint32_t> undecided;  // may have been queued before it and left
    // Whether a waiter left where staying was dropped (finished), and the
    // least lateness staying could have had.
    bool dominated = false;
    std::int64_t stay_floor = 0;
  };
  // Both constrain `base` (Zone::no_later): a waiter found queued after the
  // head, or gone, is so from then on.
  bool sort_waiters(Config& base, std::uint32_t head, HandOff& hand_off) const;
  bool settles_alone(Config& base, std::uint32_t other, HandOff& hand_off) const;
  auto branch_undecided(Config base, HandOff& hand_off) const -> std::vector<std::pair<Config, std::vector<std::uint32_t>>>;
  void grant_head(Config next, std::uint32_t head, Cause why, std::int32_t cause_request, OnTime on_time,
                  Configs& out) const;
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
        still = std::max(still, ceil_ms(seen.arrived_from_us) -
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
  void leave(Config c, std::size_t index, std::uint32_t by, std::int64_t gap, Configs& out, bool floats = false) const;
  bool after_left(Config& c) const;
  void leave_at(Config c, std::size_t index, std::uint32_t t, Configs& left) const;
  void leave_all(Config c, std::vector<std::uint32_t> requests, Configs& out) const;
  bool observed_timeout_ends_now(const Config& c, std::uint32_t request, std::int64_t at) const;

  void due_waiters(Config c, std::size_t from, std::int64_t at, Configs& out);
  void expire(Config c, std::int64_t at, Configs& out) const;
  void inputs(Config c, std::int64_t at, Configs& out, std::size_t& orders);
  bool settle(Config& c, std::uint32_t request, Configs& next) const;
  bool own_answer(const Config& c, std::uint32_t request, const Config& next) const;
  bool floats(const Config& c, std::uint32_t request) const;
  bool inert(const Config& before, const Config& after) const {
    return before.holder == after.holder && before.queue == after.queue && before.last_token == after.last_token;
  }
  bool alone_in_class(const Config& c, std::uint32_t request) const;
  bool alive(const Config& c, std::int64_t at) const;
  // The end of a visit: what floated is placed, the cursor forgotten, and
  // a key still held is held past `at`.
  bool end_visit(Config& c, std::int64_t at) const;

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
    if (!expanded_.insert(expansion_key(c))) return false;
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

}  // namespace lockstep::history::cluster_frontier
