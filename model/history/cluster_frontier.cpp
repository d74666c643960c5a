// Cluster mode's rules for the per-key search: frontier_search.hpp carries
// the search itself, shared with simple mode; this file keeps what a
// cluster is read by instead (Expires, sessions, lateness, lazy Timeouts).
// The frontier is every configuration the replicated table may be in,
// carried forward from one visited instant to the next. Only the instants
// where something is observed or sent are visited (a request sent,
// the last instant that can cause an observation, an Expire or a Timeout
// that a maximum lateness forces): whatever happened since the previous
// visit (an operation applied, an Expire) is applied at the visit, in every
// order, each at an instant of the span since the previous visit (a box
// that holds the instant of every explanation). Timeouts are taken lazily:
// a waiter leaves the queue (with its `T`) only where that matters (a
// hand-off past it, a full queue, the last instant its observed `T` can be
// caused at), at the earliest instant it could have, which every
// explanation that removes it earlier reaches too.
//
// Times: instants are milliseconds of the tester's clock, the reference
// the node clocks keep within S of (up to a constant offset). A command's
// stamp, in those units, lies between its proposal and 2·S after it; a
// holder's `stamp` and a waiter's are lower bounds of it, and a hand-off's
// new lease counts from a stamp no earlier than the table's clock, which
// never goes back.
#include "model/history/cluster_frontier.hpp"

#include <algorithm>
#include <limits>
#include <memory>
#include <span>

#include <fmt/format.h>

#include "impl/assert.hpp"
#include "model/history/fingerprint.hpp"
#include "model/history/frontier_search.hpp"
#include "model/history/marked_set.hpp"

namespace lockstep::history {

namespace {

// Milliseconds as microseconds, saturating: a due instant may be
// unbounded_ms (a wait or a cause with no bound), and a maximum lateness is
// added to it.
std::int64_t us_of(std::int64_t ms) {
  constexpr auto most = std::numeric_limits<std::int64_t>::max();
  return ms >= most / 1000 ? most : ms * 1000;
}

// Choices of waiters that left a full queue unseen, at one acquire.
constexpr std::size_t leave_choices_max = 256;

// The instants something may have happened at: [lo, hi].
struct Span {
  std::int64_t lo = 0, hi = 0;
};

struct Holder {
  std::int32_t request = -1;    // the grant's operation; -1: the key is not registered
  std::uint64_t token = 0;      // 0: the grant's answer was not seen
  std::int64_t lo = 0, hi = 0;  // the grant took effect at an instant of [lo, hi]
  std::int64_t stamp = 0;       // its stamp is no earlier (the lease counts from the stamp)
  friend bool operator==(const Holder&, const Holder&) = default;
};

struct Waiter {
  std::uint32_t request = 0;
  std::int64_t lo = 0, hi = 0;  // queued at an instant of [lo, hi]
  std::int64_t stamp = 0;       // its deadline counts from a stamp no earlier than this
  friend bool operator==(const Waiter&, const Waiter&) = default;
};

// Waiters are kept in request order; queue order is what their intervals
// allow. `handled` holds the operations applied.
struct Config : ConfigCore<Holder, Waiter, IndexSet> {
  // While the key is free: the table's clock is no earlier (the stamp of
  // the command that freed it), and neither is the next grant's stamp.
  std::int64_t free_floor = 0;
  // The most any step so far was late (ms), which step, and when: the
  // least over the explanations a configuration stands for once merged.
  std::int64_t lateness = 0;
  std::int32_t late_request = -1;
  char late_what = 0;
  std::int64_t late_at = 0, late_due = 0;
};

using Configs = std::vector<Config>;

Fingerprint fingerprint(const Config& c, bool blank, bool with_lateness) {
  FingerprintBuilder print;
  fingerprint_core(print, c, blank);
  if (with_lateness) print.add(static_cast<std::uint64_t>(c.lateness));
  return print.finish();
}

// Keeps the lesser lateness, and the lesser floor of a free key's next
// stamp, of two configurations that are otherwise one: the future of the
// merged one holds the future of both (a lower floor only allows more).
void keep_least_lateness(Config& into, const Config& other) {
  into.free_floor = std::min(into.free_floor, other.free_floor);
  if (other.lateness < into.lateness) {
    into.lateness = other.lateness;
    into.late_request = other.late_request;
    into.late_what = other.late_what;
    into.late_at = other.late_at;
    into.late_due = other.late_due;
  }
}

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
    for (const auto& conn : in_.conns) {
      std::int32_t before = -1;
      for (const auto request : conn.requests) {
        const bool single = in_.requests[request].resent.empty();
        if (single && before >= 0) previous_[request] = before;
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
    for (std::uint32_t i = 0; i < n; ++i) {
      if (latest_[i] >= unbounded_ms) unanswered_.push_back(i);
    }
    find_later_latest();
  }

 private:
  friend class FrontierSearch<ClusterFrontier, Config>;

  std::int64_t lease_of(std::int32_t request) const { return in_.requests[static_cast<std::uint32_t>(request)].lease_ms; }
  std::int64_t wait_of(const Waiter& waiter) const { return in_.requests[waiter.request].wait_ms; }
  std::uint32_t owner_of(std::uint32_t request) const { return in_.requests[request].owner; }
  bool indeterminate(std::uint32_t request) const { return latest_[request] >= unbounded_ms; }
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
  // From when an outcome caused at an instant of [cause_lo, cause_hi] may
  // be read on the copy's connection; never_us when it cannot be.
  // `timeout_from` >= 0: the outcome is the `T` of a waiter that left before
  // its Timeout's window opens at timeout_from, which only a Close can do,
  // at cause_lo at the earliest. A Close drops a waiter unanswered on that
  // connection (the node has forgotten it); its session records `T`, which
  // a retry on a connection still open hears. So a connection closed by
  // then can carry only a Timeout's `T`, if the waiter may have stayed
  // until its window opened.
  std::int64_t heard_from_us(const KeyCopy& copy, std::int64_t cause_lo, std::int64_t cause_hi,
                             std::int64_t timeout_from) const {
    if (timeout_from < 0 || close_read_ms(copy) > cause_lo) return cause_lo * 1000 - grid_slack_us;
    if (timeout_from > cause_hi) return never_us;
    return timeout_from * 1000 - grid_slack_us;
  }
  static constexpr std::int64_t never_us = std::numeric_limits<std::int64_t>::max();

  // The holder's Expire takes effect no earlier than its lease's end less
  // the allowance, and is on time up to its lease's end from the latest
  // instant the grant may have been stamped (its effect plus 2·S).
  std::int64_t expire_from(const Holder& h) const { return h.stamp + lease_of(h.request) - allowance_; }
  std::int64_t expire_due(const Holder& h) const { return h.hi + lease_of(h.request) + allowance_; }
  // Likewise a waiter's Timeout; and a waiter may leave earlier when a
  // Close of its connection drops it.
  std::int64_t timeout_due(const Waiter& w) const { return w.hi + wait_of(w) + allowance_; }
  std::int64_t leave_from(const Waiter& w) const {
    return std::max(w.lo, std::min(w.stamp + wait_of(w) - allowance_, leave_by_close_[w.request]));
  }
  // The table's clock, no earlier than `floor` (in the reference's units),
  // has certainly reached the waiter's deadline: a hand-off answers it `T`
  // instead of granting it.
  bool certainly_due(std::int64_t floor, const Waiter& w) const { return floor >= timeout_due(w); }

  // The observations of a connection from the first a configuration may
  // not have explained (those before `observed.mark` all are).
  std::span<const std::uint32_t> unexplained_on(const Config& c, std::uint32_t conn) const {
    const auto& list = in_.conns[conn].observations;
    const auto from = std::lower_bound(list.begin(), list.end(), c.observed.mark);
    return {list.data() + (from - list.begin()), static_cast<std::size_t>(list.end() - from)};
  }

  // Notes that a step due by `due` happened at `at` (an Expire, a Timeout,
  // or a deferred answer's arrival less the tolerance); false when that is
  // later than the stated maximum allows (the configuration dies).
  bool note_late(Config& c, std::int64_t at, std::int64_t due, std::int32_t request, char what) const;

  bool same_class(const KeyObservation& seen, std::uint32_t request) const;
  bool may_be_unseen(const Config& c, std::uint32_t request, bool deferred, std::int64_t on_time,
                     std::int64_t cause_lo, std::int64_t cause_hi, std::int64_t timeout_from) const;
  // The connection a deferred answer to `request` is owed on, if the tester
  // watches it long enough: the operation's only one, not cut; else null.
  const KeyConnection* owed_on(std::uint32_t request, bool deferred) const {
    if (!deferred || copies_[request].size() > 1) return nullptr;
    const auto& conn = in_.conns[in_.requests[request].conn];
    return conn.cut ? nullptr : &conn;
  }
  // `timeout_from`: see heard_from_us (-1: the outcome is not a waiter's
  // leaving before its Timeout's window).
  void emit(Config c, std::uint32_t request, ResponseKind kind, std::uint64_t token, std::int64_t cause_lo,
            std::int64_t cause_hi, Cause cause, std::int64_t on_time, std::int32_t cause_request, Configs& out,
            bool optional = false, std::int64_t timeout_from = -1) const;
  // Marks the same line heard again on the operation's other connections;
  // returns when the first of them was read (unbounded_ms: none).
  std::int64_t replays(Config& c, std::uint32_t request, const KeyObservation& seen, std::int64_t cause_lo,
                       std::int64_t cause_hi, std::int64_t timeout_from) const;

  // The operation is applied at an instant of `when`.
  void handle(Config c, std::uint32_t request, Span when, Configs& out) const;
  void acquire(Config c, std::uint32_t request, Span when, Configs& out) const;
  void acquire_held(Config c, std::uint32_t request, Span when, Configs& out) const;
  void enqueue(Config c, std::uint32_t request, Span when, Configs& out) const;
  void release(Config c, std::uint32_t request, Span when, Configs& out) const;
  void release_holder(Config c, std::uint32_t request, Span when, Configs& out, bool optional = false) const;
  Configs unheard_holder(const Config& c, std::uint32_t request, std::int64_t by, std::uint64_t token) const;
  Span span_of(std::uint32_t request, std::int64_t at) const {
    return Span{std::max(visit_from_, earliest_[request]), std::min(at, latest_[request])};
  }
  // The key passes on at an instant of [lo, hi]: to the first waiter still
  // waiting, or nobody.
  // `floor`: the table's clock at the cause is no earlier (the new lease
  // counts from there).
  void pass_on(Config c, std::int64_t lo, std::int64_t hi, std::int64_t floor, Cause cause,
               std::int32_t cause_request, std::int64_t on_time, Configs& out) const;
  void pass_on_nobody(Config c, std::int64_t hi, Configs& out) const;
  ResponseKind observed_kind(const Config& c, std::uint32_t request) const;
  // The first unexplained observation of the request's class on its
  // connections (by arrival), or -1.
  std::int64_t first_of_class(const Config& c, std::uint32_t request) const;

  // Waiter `index` leaves with its `T`, at the earliest instant it may and
  // no later than `by`.
  void leave(Config c, std::size_t index, std::int64_t by, Configs& out) const;
  void leave_all(Config c, std::vector<std::uint32_t> requests, std::int64_t by, Configs& out) const;
  bool observed_timeout_ends_now(const Config& c, std::uint32_t request, std::int64_t at) const;

  void due_waiters(Config c, std::size_t from, std::int64_t at, Configs& out);
  void expire(Config c, std::int64_t lo, std::int64_t hi, Configs& out) const;
  void inputs(Config c, std::int64_t at, Configs& out, std::size_t& orders);
  bool inert(const Config& before, const Config& after) const {
    return before.holder == after.holder && before.queue == after.queue && before.last_token == after.last_token &&
           before.free_floor == after.free_floor;
  }
  bool alone_in_class(const Config& c, std::uint32_t request) const;
  bool alive(const Config& c, std::int64_t at) const;
  void forget_spent(Config& c) const;
  static std::uint64_t bytes_of(const Config& c);
  // What came instead of a failure kept (fail, in frontier_search.hpp).
  void explain_failure(const Config& c) const;
  std::int64_t next_instant(const Configs& frontier, std::int64_t at) const;
  bool is_final(const Config& c) const;
  std::int64_t final_lateness(const Config& c, Config& into) const;
  std::string describe(const Config& c, std::int64_t at) const;

  // The search's hooks (frontier_search.hpp).
  void begin(Configs&, std::int64_t at) { visit_from_ = at; }
  void fire_due(Config c, std::int64_t at, Configs& out) { due_waiters(std::move(c), 0, at, out); }
  void settle(Configs& after, std::int64_t at) {
    // A waiter the inputs of this visit queued may also leave by its end,
    // its `T` caused before the next visit: fire_due ran before them.
    Configs settled;
    settled.reserve(after.size());
    for (auto& c : after) due_waiters(std::move(c), 0, at, settled);
    after = std::move(settled);
    for (auto& c : after) forget_spent(c);
  }
  std::int64_t advance(Configs& frontier, std::int64_t at) {
    visit_from_ = at + 1;
    return next_instant(frontier, at);
  }
  void add_final(const Config& c, Configs& finals) const {
    Config counted;
    final_lateness(c, counted);
    finals.push_back(std::move(counted));
  }
  void explained(const Configs& finals, KeyVerdict& verdict) const;
  // Configurations equal but for their lateness become the least late
  // (exact: the future of both is the same); a box keeps the least too.
  Fingerprint merge_key(const Config& c) const { return fingerprint(c, blank_none, false); }
  Fingerprint box_key(const Config& c) const { return fingerprint(c, blank_all, false); }
  Fingerprint expansion_key(const Config& c) const { return fingerprint(c, blank_none, true); }
  static void merge_equal(Config& into, const Config& other) { keep_least_lateness(into, other); }
  static void merge_box(Config& into, const Config& other) { keep_least_lateness(into, other); }

  std::int64_t allowance_;  // 2·S
  std::int64_t max_late_;   // -1: none
  std::vector<std::uint32_t> unanswered_;        // the requests no answer bounds (indeterminate)
  std::vector<std::vector<KeyCopy>> copies_;     // every send of each operation, the first first
  std::vector<std::int64_t> leave_by_close_;     // per operation: a Close may drop its waiter from then
  std::vector<std::uint64_t> grant_tokens_;      // of the grants seen on this key, sorted
  std::vector<std::int64_t> last_chances_;       // the latest cause of each observation, sorted
  std::int64_t visit_from_ = 0;                  // the instant after the previous visit
  // Per request: another request of its class (owner, or token) shares one
  // of its connections, so an answer of that class may be either's.
  std::vector<bool> class_shared_;
};

bool ClusterFrontier::note_late(Config& c, std::int64_t at, std::int64_t due, std::int32_t request, char what) const {
  const std::int64_t amount = at - due;
  if (amount <= c.lateness) return true;
  if (max_late_ >= 0 && amount > max_late_) {
    KeyFailure failure;
    failure.kind = KeyFailure::Kind::late;
    failure.cause = what == 'e' ? Cause::expire : what == 't' ? Cause::deadline : Cause::request;
    failure.request = request;
    failure.at_ms = at;
    failure.due_by_us = us_of(due + max_late_);
    if (request >= 0) failure.conn = in_.requests[static_cast<std::uint32_t>(request)].conn;
    fail(c, failure);
    return false;
  }
  c.lateness = amount;
  c.late_request = request;
  c.late_what = what;
  c.late_at = at;
  c.late_due = due;
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
// observation waits for it: there are more unexplained answers of its
// class on its connections than other operations of that class there,
// not yet applied or still waiting, could give. With the maximum, a deferred answer to an
// operation sent once is owed on its connection, if the tester watched it
// past the answer's latest arrival.
bool ClusterFrontier::may_be_unseen(const Config& c, std::uint32_t request, bool deferred, std::int64_t on_time,
                                    std::int64_t cause_lo, std::int64_t cause_hi, std::int64_t timeout_from) const {
  std::size_t waiting = 0;
  std::vector<std::uint32_t> others;
  for (const auto& copy : copies_[request]) {
    if (heard_from_us(copy, cause_lo, cause_hi, timeout_from) == never_us) continue;
    const auto& conn = in_.conns[copy.conn];
    for (const auto index : unexplained_on(c, copy.conn)) {
      if (!c.observed.contains(index) && same_class(in_.observations[index], request)) ++waiting;
    }
    for (const auto other : conn.requests) {
      // Not applied yet, or waiting: its answer is still to come.
      const bool waiting_in_queue = std::any_of(c.queue.begin(), c.queue.end(), [&](const Waiter& w) { return w.request == other; });
      if (other == request || (c.handled.contains(other) && !waiting_in_queue)) continue;
      const auto& asked = in_.requests[other];
      const auto& mine = in_.requests[request];
      if (asked.acquire != mine.acquire || (mine.acquire ? asked.owner != mine.owner : asked.token != mine.token)) continue;
      if (std::find(others.begin(), others.end(), other) == others.end()) others.push_back(other);
    }
  }
  if (waiting > others.size()) return false;
  if (max_late_ < 0) return true;
  const auto* conn = owed_on(request, deferred);
  return conn == nullptr || us_of(on_time + 1 + in_.tolerance_ms + max_late_) > conn->end_us;
}

// The outcome of `request`, caused at an instant of [cause_lo, cause_hi]:
// any unexplained observation of it on any connection that carried the
// operation, read no earlier than a millisecond before the cause and no
// earlier than that send; or nothing heard (may_be_unseen). A deferred
// answer (a hand-off, a Timeout) arriving more than the tolerance after
// `on_time` is late by the difference.
void ClusterFrontier::emit(Config c, std::uint32_t request, ResponseKind kind, std::uint64_t token,
                           std::int64_t cause_lo, std::int64_t cause_hi, Cause cause, std::int64_t on_time,
                           std::int32_t cause_request, Configs& out, bool optional, std::int64_t timeout_from) const {
  const bool deferred = cause != Cause::request;
  const auto owner = owner_of(request);
  // The candidates, by arrival. One line heard on several of the
  // operation's connections is its outcome and its replays: whichever is
  // taken first, the others are its replays (the same configuration), so
  // each line is tried once, from its first arrival.
  std::vector<std::uint32_t> candidates;
  for (const auto& copy : copies_[request]) {
    const auto from_us = heard_from_us(copy, cause_lo, cause_hi, timeout_from);
    for (const auto index : unexplained_on(c, copy.conn)) {
      const auto& seen = in_.observations[index];
      if (seen.received_us < from_us || seen.received_us < copy.sent_us || c.observed.contains(index) ||
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
    if (deferred) {
      if (!note_late(matched, floor_ms(seen.arrived_from_us), on_time + 1 + in_.tolerance_ms,
                     static_cast<std::int32_t>(request), 'a')) {
        continue;
      }
    }
    matched.observed.insert(index);
    ++matched.explained;
    // Every hearing of the outcome came after it was caused.
    const std::int64_t hi = std::min({cause_hi, latest_cause_ms(seen.received_us),
                                      latest_cause_ms(replays(matched, request, seen, cause_lo, cause_hi, timeout_from))});
    if (kind == ResponseKind::granted) {
      matched.holder.token = seen.token;
      matched.holder.hi = hi;
      matched.last_token = seen.token;
      note_grant(index, cause_lo, hi);
    }
    record(matched, Step{hi, static_cast<std::int32_t>(request), static_cast<std::int32_t>(index), 'a'});
    out.push_back(std::move(matched));
    any = true;
  }
  if (may_be_unseen(c, request, deferred, on_time, cause_lo, cause_hi, timeout_from)) {
    // A deferred answer to an operation sent once, never heard on its
    // connection though the tester watched it past the answer's on-time
    // arrival: late by at least that watch, which is what a stated maximum
    // owes it by (may_be_unseen), so that the lateness reported is the least
    // maximum under which the key conforms.
    const auto* conn = owed_on(request, deferred);
    if (conn != nullptr &&
        !note_late(c, conn->end_us / 1000 + 1, on_time + 1 + in_.tolerance_ms, static_cast<std::int32_t>(request), 'a')) {
      return;
    }
    out.push_back(std::move(c));
    return;
  }
  if (any || optional) return;
  KeyFailure failure;
  failure.kind = KeyFailure::Kind::missing;
  failure.cause = cause;
  failure.response = kind;
  failure.conn = in_.requests[request].conn;
  failure.owner = owner;
  failure.token = token;
  failure.at_ms = cause_lo;
  failure.due_by_us = deferred && max_late_ >= 0 ? us_of(on_time + 1 + in_.tolerance_ms + max_late_) : -1;
  failure.request = static_cast<std::int32_t>(request);
  failure.cause_request = cause_request;
  fail(c, failure);
}

// A retry of an operation already applied hears its outcome again, on the
// retry's connection: the same line, read after the retry was sent.
std::int64_t ClusterFrontier::replays(Config& c, std::uint32_t request, const KeyObservation& seen,
                                      std::int64_t cause_lo, std::int64_t cause_hi, std::int64_t timeout_from) const {
  std::int64_t first_us = unbounded_ms;
  for (const auto& copy : copies_[request]) {
    const auto from_us = heard_from_us(copy, cause_lo, cause_hi, timeout_from);
    for (const auto index : unexplained_on(c, copy.conn)) {
      const auto& again = in_.observations[index];
      if (c.observed.contains(index) || again.received_us < copy.sent_us || again.received_us < from_us) continue;
      if (again.line != seen.line) continue;
      c.observed.insert(index);
      ++c.explained;
      first_us = std::min(first_us, again.received_us);
      if (again.kind == ResponseKind::granted) {
        note_grant(index, cause_lo, latest_cause_ms(again.received_us));
      }
      break;
    }
  }
  return first_us;
}

// What came instead of a missing answer: the first unexplained answer of
// the same class on one of the operation's connections.
void ClusterFrontier::explain_failure(const Config& c) const {
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

void ClusterFrontier::handle(Config c, std::uint32_t request, Span when, Configs& out) const {
  c.handled.insert(request);
  record(c, Step{when.lo, static_cast<std::int32_t>(request), -1, 'h'});
  if (in_.requests[request].acquire) {
    acquire(std::move(c), request, when, out);
  } else {
    release(std::move(c), request, when, out);
  }
}

// Cluster mode: a free key is granted (or `B` when a new key would pass
// max_keys); a held key stays held until its Expire, however late.
void ClusterFrontier::acquire(Config c, std::uint32_t request, Span when, Configs& out) const {
  if (!c.held()) {
    if (oracles_.keys_may_be_full && oracles_.keys_may_be_full(when.hi)) {
      emit(c, request, ResponseKind::busy, 0, when.lo, when.hi, Cause::request, when.lo, -1, out, true);
    }
    // Unless its answer was a grant, the key may be held by a request
    // nobody heard the answer of, granted before (unheard_holder).
    if (!indeterminate(request) && observed_kind(c, request) != ResponseKind::granted) {
      for (auto& held : unheard_holder(c, request, when.hi, 0)) {
        if (note_late(held, when.lo, expire_due(held.holder), held.holder.request, 'e')) {
          acquire_held(std::move(held), request, when, out);
        }
      }
    }
    c.holder = Holder{static_cast<std::int32_t>(request), 0, when.lo, when.hi, std::max(earliest_[request], c.free_floor)};
    c.free_floor = 0;
    emit(std::move(c), request, ResponseKind::granted, 0, when.lo, when.hi, Cause::request, when.lo, -1, out);
    return;
  }
  // Found held after its Expire was due: the Expire is late.
  if (!note_late(c, when.lo, expire_due(c.holder), c.holder.request, 'e')) return;
  acquire_held(std::move(c), request, when, out);
}

void ClusterFrontier::acquire_held(Config c, std::uint32_t request, Span when, Configs& out) const {
  const auto& asked = in_.requests[request];
  if (asked.wait_ms == 0) {
    emit(std::move(c), request, ResponseKind::timed_out, 0, when.lo, when.hi, Cause::request, when.lo, -1, out);
    return;
  }
  // `B`, when a limit on waiters is reached. Waiters join the queue lazily
  // (enqueue), so its size at an instant is not known: a `B` to a waiting
  // acquire on a held key is accepted, and a request whose answer was `B`
  // did not queue (a relaxation: a node that answers `B` below its limits,
  // or queues past them, is not seen).
  const auto seen = observed_kind(c, request);
  if (seen == ResponseKind::busy || class_shared_[request]) {
    emit(c, request, ResponseKind::busy, 0, when.lo, when.hi, Cause::request, when.lo, -1, out,
         seen != ResponseKind::busy);
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
      const auto& seen = in_.observations[index];
      if (c.observed.contains(index) || !same_class(seen, request)) continue;
      if (first < 0 || seen.received_us < in_.observations[static_cast<std::size_t>(first)].received_us) first = index;
      break;
    }
  }
  return first;
}

// A waiting acquire on a held key joins the queue as soon as it may: at an
// instant from `when.lo` on, up to the latest it may be applied at (its
// answer), or not yet. Its interval stands for both, so that the waiters of
// a key whose leader is away are one configuration, not one per subset of
// them applied so far: a hand-off may grant it or pass it by (then it was
// applied after the head: its interval narrows), and a hand-off to nobody
// un-applies it (pass_on).
void ClusterFrontier::enqueue(Config c, std::uint32_t request, Span when, Configs& out) const {
  c.queue.insert(std::upper_bound(c.queue.begin(), c.queue.end(), request,
                                  [](std::uint32_t r, const Waiter& w) { return r < w.request; }),
                 Waiter{request, when.lo, std::max(when.hi, latest_[request]), std::max(earliest_[request], c.holder.stamp)});
  out.push_back(std::move(c));
}

// Simple mode points 6-7, without the sweep: the holder's token releases
// (until its Expire is applied, however late); any other token is `N`.
void ClusterFrontier::release(Config c, std::uint32_t request, Span when, Configs& out) const {
  const auto& asked = in_.requests[request];
  if (c.held() && !note_late(c, when.lo, expire_due(c.holder), c.holder.request, 'e')) return;
  if (c.held() && c.holder.token == asked.token) {
    release_holder(std::move(c), request, when, out);
    return;
  }
  const bool unseen_token = asked.token > c.last_token && !(oracles_.token_was_seen && oracles_.token_was_seen(asked.token));
  if (c.held() && c.holder.token == 0 && unseen_token) {
    // The holder's grant was never heard: its token may be this one.
    Config same = c;
    same.holder.token = asked.token;
    release_holder(std::move(same), request, when, out, true);
  }
  if (!c.held() && unseen_token && !indeterminate(request) && observed_kind(c, request) == ResponseKind::released) {
    // Free, as far as this configuration knows; but a request nobody heard
    // the answer of may hold it, with this token.
    for (auto& held : unheard_holder(c, request, when.hi, asked.token)) {
      release_holder(std::move(held), request, when, out, true);
    }
  }
  emit(std::move(c), request, ResponseKind::not_held, asked.token, when.lo, when.hi, Cause::request, when.lo, -1, out);
}

// The free key granted, before `by`, to a request no answer of which
// arrived (with `token`, when one is known): one configuration per such
// request not applied yet. Those requests are not applied on a free key as
// the frontier goes (inputs): a grant nobody heard matters only where a
// later request finds the key held, and is taken there.
Configs ClusterFrontier::unheard_holder(const Config& c, std::uint32_t request, std::int64_t by, std::uint64_t token) const {
  Configs made;
  for (const auto other : unanswered_) {
    if (other == request || c.handled.contains(other) || !in_.requests[other].acquire || earliest_[other] > by) continue;
    const auto previous = previous_[other];
    if (previous >= 0 && !c.handled.contains(static_cast<std::uint32_t>(previous))) continue;
    Config held = c;
    held.handled.insert(other);
    held.holder = Holder{static_cast<std::int32_t>(other), token, std::max(earliest_[other], visit_from_ - 1), by,
                         std::max(earliest_[other], c.free_floor)};
    held.free_floor = 0;
    record(held, Step{held.holder.lo, static_cast<std::int32_t>(other), -1, 'h'});
    made.push_back(std::move(held));
  }
  return made;
}

void ClusterFrontier::release_holder(Config c, std::uint32_t request, Span when, Configs& out, bool optional) const {
  const auto& asked = in_.requests[request];
  Configs answered;
  emit(std::move(c), request, ResponseKind::released, asked.token, when.lo, when.hi, Cause::request, when.lo, -1,
       answered, optional);
  for (auto& next : answered) {
    // The Release's stamp is no earlier than its sending, nor than the
    // stamp of the grant it ends (the table's clock never goes back).
    const auto floor = std::max(next.holder.stamp, earliest_[request]);
    pass_on(std::move(next), when.lo, when.hi, floor, Cause::release, static_cast<std::int32_t>(request), when.lo, out);
  }
}

// The head waiter gets the key, with a new token. The queue is kept in
// request order, and the head is any waiter that may have been queued
// first and can still be granted (its deadline has not certainly come by
// the table's clock): every waiter certainly queued before it (its whole
// interval earlier, or sent before it on its connection) must have left
// by now, with its `T` (leave), and the others were queued no earlier
// than the head. The hand-off happens at an instant of [lo, hi] (a jump
// over a gap gives a range), no earlier than those departures.
void ClusterFrontier::pass_on(Config c, std::int64_t lo, std::int64_t hi, std::int64_t floor, Cause cause,
                              std::int32_t cause_request, std::int64_t on_time, Configs& out) const {
  if (c.queue.empty()) {
    c.holder = Holder{};
    c.free_floor = floor;
    out.push_back(std::move(c));
    return;
  }
  for (std::size_t h = 0; h < c.queue.size(); ++h) {
    const Waiter head = c.queue[h];
    if (certainly_due(floor, head) || (max_late_ >= 0 && lo > timeout_due(head) + max_late_)) continue;
    std::vector<std::uint32_t> before;
    std::int64_t from = lo;
    for (const auto& other : c.queue) {
      if (other.request == head.request) continue;
      bool earlier = other.hi < head.lo;
      for (auto p = previous_[head.request]; p >= 0 && !earlier; p = previous_[static_cast<std::uint32_t>(p)]) {
        earlier = static_cast<std::uint32_t>(p) == other.request;
      }
      if (!earlier) continue;
      before.push_back(other.request);
      from = std::max(from, leave_from(other));
    }
    if (from > hi) continue;
    Configs left;
    leave_all(c, std::move(before), hi, left);
    for (auto& next : left) {
      const auto at = std::find_if(next.queue.begin(), next.queue.end(),
                                   [&](const Waiter& w) { return w.request == head.request; });
      LOCKSTEP_ASSERT(at != next.queue.end());
      next.queue.erase(at);
      for (auto& other : next.queue) other.lo = std::max(other.lo, head.lo);
      next.holder = Holder{static_cast<std::int32_t>(head.request), 0, from, hi, floor};
      emit(std::move(next), head.request, ResponseKind::granted, 0, from, hi, cause, on_time, cause_request, out);
    }
  }
  // Or nobody, and the key is deleted: each waiter's deadline had come by
  // the table's clock (a hand-off answers those `T`), or its Close, or it
  // was not applied yet (enqueue): it is a request still to apply.
  c.holder = Holder{};
  c.free_floor = floor;
  pass_on_nobody(std::move(c), hi, out);
}

void ClusterFrontier::pass_on_nobody(Config c, std::int64_t hi, Configs& out) const {
  if (c.queue.empty()) {
    out.push_back(std::move(c));
    return;
  }
  const Waiter waiter = c.queue.back();
  const bool may_leave = leave_from(waiter) <= hi;
  const auto seen = class_shared_[waiter.request] ? ResponseKind::error : observed_kind(c, waiter.request);
  // Gone with its `T` (not when its answer was an `A`: that reading dies
  // at once).
  if (may_leave && seen != ResponseKind::granted) {
    Configs left;
    leave(c, c.queue.size() - 1, hi, left);
    for (auto& next : left) pass_on_nobody(std::move(next), hi, out);
  }
  // Or not applied yet. When its answer was a `T`, that reading explains
  // nothing the one where it left now does not (its `T` caused earlier):
  // the queue it would join again changes no hand-off (it is never
  // certainly before another waiter) and no `B` (accepted on any held key,
  // acquire_held). Unless it could only be dropped here, before its
  // Timeout's window opens: a dropped waiter's `T` is not heard on its
  // connection, so that reading may explain less.
  const bool timeout_may_open = waiter.stamp + wait_of(waiter) - allowance_ <= hi;
  if (may_leave && seen == ResponseKind::timed_out && timeout_may_open) return;
  c.queue.pop_back();
  c.handled.erase(waiter.request);
  pass_on_nobody(std::move(c), hi, out);
}

// Waiter `index` leaves the queue, by instant `by`, from the earliest
// instant it may (its Timeout's window, or a Close of its connection), with
// its `T`, which may arrive any time after (the node holding its connection
// answers when it applies the Timeout). Before its Timeout's window only a
// Close can drop it, and that `T` is heard only where heard_from_us says.
void ClusterFrontier::leave(Config c, std::size_t index, std::int64_t by, Configs& out) const {
  const Waiter gone = c.queue[index];
  c.queue.erase(c.queue.begin() + static_cast<std::ptrdiff_t>(index));
  const auto when = leave_from(gone);
  const auto timeout_from = gone.stamp + wait_of(gone) - allowance_;
  record(c, Step{when, static_cast<std::int32_t>(gone.request), -1, 't'});
  if (when >= timeout_from) {
    emit(std::move(c), gone.request, ResponseKind::timed_out, 0, when, when, Cause::deadline, timeout_due(gone), -1, out);
    return;
  }
  emit(std::move(c), gone.request, ResponseKind::timed_out, 0, when, std::max(when, by), Cause::deadline,
       timeout_due(gone), -1, out, false, timeout_from);
}

void ClusterFrontier::leave_all(Config c, std::vector<std::uint32_t> requests, std::int64_t by, Configs& out) const {
  if (requests.empty()) {
    out.push_back(std::move(c));
    return;
  }
  const auto request = requests.back();
  requests.pop_back();
  const auto it = std::find_if(c.queue.begin(), c.queue.end(), [&](const Waiter& w) { return w.request == request; });
  LOCKSTEP_ASSERT(it != c.queue.end());
  Configs left;
  leave(std::move(c), static_cast<std::size_t>(it - c.queue.begin()), by, left);
  for (auto& next : left) leave_all(std::move(next), requests, by, out);
}

// Whether `at` is the last instant that can cause an unexplained `T` of
// the waiter's owner on one of its connections.
bool ClusterFrontier::observed_timeout_ends_now(const Config& c, std::uint32_t request, std::int64_t at) const {
  const auto owner = owner_of(request);
  for (const auto& copy : copies_[request]) {
    for (const auto index : unexplained_on(c, copy.conn)) {
      const auto& seen = in_.observations[index];
      if (seen.kind == ResponseKind::timed_out && seen.owner == owner && !c.observed.contains(index) &&
          latest_cause_ms(seen.received_us) == at) {
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
    const Waiter& waiter = c.queue[j];
    if (max_late_ >= 0 && at > timeout_due(waiter) + max_late_) {
      // Gone by now: it left at its earliest (which is never late).
      Configs left;
      leave(std::move(c), j, at, left);
      for (auto& next : left) due_waiters(std::move(next), j, at, out);
      return;
    }
    if (leave_from(waiter) <= at && observed_timeout_ends_now(c, waiter.request, at)) {
      Configs left;
      leave(c, j, at, left);
      for (auto& next : left) due_waiters(std::move(next), j, at, out);
    }
  }
  out.push_back(std::move(c));
}

// The holder's Expire at an instant of [lo, hi]: the key passes on, to the
// head waiter (its lease counted from the Expire's stamp, which is no
// earlier than the lease that ended) or nobody.
void ClusterFrontier::expire(Config c, std::int64_t lo, std::int64_t hi, Configs& out) const {
  const Holder gone = c.holder;
  // Applied at `lo` before its requests, or at lo - 1 after them (the frontier
  // applies Expires before an instant's requests): late by no more than this.
  if (!note_late(c, lo - 1, expire_due(gone), gone.request, 'e')) return;
  record(c, Step{lo, gone.request, -1, 'e'});
  // The leader proposed it once its clock reached the lease's end: its
  // stamp, and the next lease's start, are no earlier.
  pass_on(std::move(c), lo, hi, gone.stamp + lease_of(gone.request), Cause::expire, gone.request, expire_due(gone), out);
}

bool ClusterFrontier::alone_in_class(const Config& c, std::uint32_t request) const {
  const auto& asked = in_.requests[request];
  if (!asked.acquire) return true;
  return std::none_of(c.queue.begin(), c.queue.end(),
                      [&](const Waiter& waiter) { return in_.requests[waiter.request].owner == asked.owner; });
}

// What happened since the previous visit, applied at the visit `at` in
// every order: operations (each at an instant of its span) and the
// holder's Expire. An operation whose application has a single outcome
// that changes nothing but the observation it explains is applied without
// a branch (as in simple mode: applying it later reaches the same
// configurations or fewer, and none less late).
void ClusterFrontier::inputs(Config c, std::int64_t at, Configs& out, std::size_t& orders) {
  if ((c.handled.low() >= in_.requests.size() || earliest_[c.handled.low()] > at) &&
      !(c.held() && expire_from(c.holder) <= at)) {
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
      // Unanswered, on a free key: taken only where it matters (unheard_holder).
      if (!c.held() && indeterminate(request) && in_.requests[request].acquire) continue;
      Configs next;
      handle(c, request, when, next);
      // And a waiting acquire that joins the queue (enqueue: its interval
      // also stands for "not applied yet").
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
                              (copies_[request].size() == 1 && first >= 0 &&
                               next.size() == 1 && next.front().observed.contains(static_cast<std::uint32_t>(first)));
      if (joins || (next.size() == 1 && next.front().explained > c.explained && inert(c, next.front()) &&
                    alone_in_class(c, request) && own_answer)) {
        c = std::move(next.front());
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
      moves.emplace_back(request, std::move(next));
    }
  }
  for (auto& [request, next] : moves) {
    for (auto& config : next) inputs(std::move(config), at, out, orders);
  }
  // The holder's Expire, once its window is open, in any place among them.
  if (c.held() && expire_from(c.holder) <= at) {
    Configs expired;
    expire(c, std::max({visit_from_, expire_from(c.holder), c.holder.lo}), at, expired);
    for (auto& config : expired) inputs(std::move(config), at, out, orders);
  }
  out.push_back(std::move(c));  // nothing more at this instant
}

std::uint64_t ClusterFrontier::bytes_of(const Config& c) {
  return sizeof(Config) + c.queue.capacity() * sizeof(Waiter) +
         (c.handled.extra.capacity() + c.handled.holes.capacity() + c.observed.extra.capacity()) *
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
    if (std::any_of(c.queue.begin(), c.queue.end(), [&](const Waiter& w) { return w.request == i; })) continue;
    c.handled.erase(i);
  }
}

// After instant `at`: every observation that nothing later can cause is
// explained, and every operation whose answer arrived is applied by the
// last instant that answer allows.
bool ClusterFrontier::alive(const Config& c, std::int64_t at) const {
  if (c.observed.mark < in_.observations.size() &&
      latest_cause_ms(in_.observations[c.observed.mark].received_us) <= at) {
    return die(c, at, KeyFailure::Kind::unexplained, -1, static_cast<std::int32_t>(c.observed.mark));
  }
  for (auto i = c.handled.low(); i < in_.requests.size() && later_latest_[i] <= at; ++i) {
    if (!c.handled.contains(i) && latest_[i] <= at) return die(c, at, KeyFailure::Kind::unhandled, static_cast<std::int32_t>(i), -1);
  }
  // Still held, past what the maximum lateness allows its Expire.
  if (c.held() && max_late_ >= 0 && at > expire_due(c.holder) + max_late_) {
    Config late = c;
    note_late(late, at, expire_due(c.holder), c.holder.request, 'e');
    return false;
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
      if (c.held()) next = std::min(next, std::max(soon, expire_due(c.holder) + max_late_ + 1));
      for (const auto& waiter : c.queue) next = std::min(next, std::max(soon, timeout_due(waiter) + max_late_ + 1));
    }
  }
  return std::max(soon, next);
}

// At the end: every observation explained, and every operation left
// unapplied allowed to be (no answer of it arrived). Waiters may still wait
// and a holder still hold: what was due by the end is late by then.
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

// The configuration's lateness, counting a holder still held at the end
// past its due instant (its Expire is at least that late).
std::int64_t ClusterFrontier::final_lateness(const Config& c, Config& into) const {
  into = c;
  if (c.held() && in_.horizon_ms - expire_due(c.holder) > into.lateness) {
    into.lateness = in_.horizon_ms - expire_due(c.holder);
    into.late_request = c.holder.request;
    into.late_what = 'e';
    into.late_at = in_.horizon_ms;
    into.late_due = expire_due(c.holder);
  }
  return into.lateness;
}

std::string ClusterFrontier::describe(const Config& c, std::int64_t at) const {
  if (!c.held()) return fmt::format("at {} the key is free", instant_text(at));
  const auto& holder = in_.requests[static_cast<std::uint32_t>(c.holder.request)];
  std::string text = fmt::format(
      "at {} the key is held by `{}` (token {}, granted {}, lease {} ms: its Expire possible from {}, on time until "
      "{})",
      instant_text(at), in_.owners[holder.owner], c.holder.token == 0 ? std::string("unseen") : std::to_string(c.holder.token),
      span_text(c.holder.lo, c.holder.hi), holder.lease_ms, instant_text(expire_from(c.holder)), instant_text(expire_due(c.holder)));
  if (c.queue.empty()) return text + ", no waiters";
  text += ", waiters:";
  for (const auto& waiter : c.queue) {
    const auto& asked = in_.requests[waiter.request];
    text += fmt::format(" `{}` on c{} (queued {}, its Timeout possible from {})", in_.owners[asked.owner],
                        in_.conns[asked.conn].id,
                        waiter.hi >= unbounded_ms ? fmt::format("from {}, or not yet", instant_text(waiter.lo))
                                                  : span_text(waiter.lo, waiter.hi),
                        instant_text(leave_from(waiter)));
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

}  // namespace

KeyVerdict check_cluster_key(const KeyInput& input, const KeyOracles& oracles, const KeyCheckOptions& options) {
  auto verdict = ClusterFrontier(input, oracles, options).run();
  if (verdict.outcome != KeyOutcome::unexplained || input.cluster.max_lateness_ms < 0) return verdict;
  // Unexplained under the maximum lateness: if some explanation exists
  // without it, the key fails only by lateness, and the least lateness an
  // explanation needs is the finding.
  KeyInput unbounded = input;
  unbounded.cluster.max_lateness_ms = -1;
  KeyCheckOptions rest = options;
  rest.work_max = options.work_max > verdict.work ? options.work_max - verdict.work : 0;
  const auto without = ClusterFrontier(unbounded, oracles, rest).run();
  verdict.work += without.work;
  // Lateness is the finding only if every explanation needs more than the
  // maximum; otherwise the bounded search's own failure stands.
  if (without.outcome != KeyOutcome::explained || without.lateness_ms <= input.cluster.max_lateness_ms) return verdict;
  KeyFailure late;
  late.kind = KeyFailure::Kind::late;
  late.cause = without.late_what == 'e' ? KeyFailure::Cause::expire
               : without.late_what == 't' ? KeyFailure::Cause::deadline
                                          : KeyFailure::Cause::request;
  late.request = without.late_request;
  if (late.request >= 0) late.conn = input.requests[static_cast<std::size_t>(late.request)].conn;
  late.at_ms = without.late_at_ms;
  late.due_by_us = us_of(without.late_due_ms + input.cluster.max_lateness_ms);
  verdict.failure = late;
  verdict.lateness_ms = without.lateness_ms;
  verdict.late_request = without.late_request;
  verdict.late_what = without.late_what;
  verdict.late_at_ms = without.late_at_ms;
  verdict.late_due_ms = without.late_due_ms;
  return verdict;
}

}  // namespace lockstep::history
