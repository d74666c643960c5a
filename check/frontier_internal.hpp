// Simple mode's rules for the per-key search as one class, Frontier, with
// the configuration it carries (frontier.cpp says what they are). Declared
// here so that its rules may be defined in two files: frontier.cpp the
// instants (what is available, the order of inputs, when a configuration
// dies, the jumps ahead, the end) and frontier_steps.cpp what one request,
// timeout or sweep does. Only those files include it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "check/fingerprint.hpp"
#include "check/frontier_search.hpp"
#include "check/index_set.hpp"
#include "check/key_input.hpp"
#include "check/phase_set.hpp"

namespace lockstep::history::simple_frontier {

struct Holder {
  std::int32_t request = -1;    // the grant's request; -1: the key is not registered
  std::uint64_t token = 0;      // 0: the grant's answer was not seen
  std::int64_t lo = 0, hi = 0;  // the grant's instant lies in [lo, hi]
  friend bool operator==(const Holder&, const Holder&) = default;
};

struct Waiter {
  std::uint32_t request = 0;
  std::int64_t lo = 0, hi = 0;  // queued at an instant of [lo, hi]
  friend bool operator==(const Waiter&, const Waiter&) = default;
};

// A configuration stands for every assignment of instants within its
// intervals and every phase of its set.
// Waiters are kept in queue order.
struct Config : ConfigCore<Holder, Waiter, PrefixSet> {
  PhaseSet phases;
};

using Configs = std::vector<Config>;

inline Fingerprint fingerprint(const Config& c, bool with_phases, bool blank) {
  FingerprintBuilder print;
  fingerprint_core(print, c, blank);
  if (with_phases) {
    for (const auto& [low, high] : c.phases.ranges()) {
      print.add(static_cast<std::uint64_t>(low));
      print.add(static_cast<std::uint64_t>(high));
    }
  }
  return print.finish();
}

// Simple mode's rules, for the search of frontier_search.hpp.
class Frontier : public FrontierSearch<Frontier, Config> {
 public:
  Frontier(const KeyInput& input, const KeyOracles& oracles, const PhaseSet& phases, const KeyCheckOptions& options);

 private:
  friend class FrontierSearch<Frontier, Config>;

  std::uint32_t conn_of(std::uint32_t request) const { return in_.requests[request].conn; }
  std::int64_t lease_of(const Holder& holder) const {
    return in_.requests[static_cast<std::uint32_t>(holder.request)].lease_ms;
  }
  std::int64_t wait_of(const Waiter& waiter) const { return in_.requests[waiter.request].wait_ms; }

  // Whether the tester stopped watching `conn` before a response caused at
  // `at` had to arrive (docs/protocol.md, "Black box, in real time": each
  // request the rules answer gets an answer). A connection a prefix cut
  // may still have any answer given at once on its way; one the target's
  // stop ended, any answer caused within the tolerance of the stop. On a
  // connection the tester watched to its end (or the server closed), what
  // a request is answered at once is due within the tolerance of its
  // sending, and its wait's `T` within the tolerance of its deadline
  // counted from then: a server that handles a request later than that
  // does not escape by it (the silent pass of a server that answers
  // nothing).
  bool may_be_unseen(std::uint32_t conn, std::int64_t at, Cause cause, std::uint32_t request) const {
    const auto& connection = in_.conns[conn];
    const auto end_us = connection.end_us;
    const auto tolerance = in_.tolerance_ms;
    const bool deferred = cause != Cause::request;
    if (connection.cut && !deferred) return true;
    if (connection.cut || connection.stopped) return (at + 1 + tolerance) * 1000 > end_us;
    // Without a stated bound on how late a request is read, the tolerance
    // covers the whole way: the request's sending is the cause of what it
    // is answered at once, and its wait counts from then.
    const std::int64_t read_by = read_by_ms(request);
    // A deferred answer is a waiter's (a hand-off's or a sweep's `A`, or
    // its `T`): owed by its wait counted from then, whichever it is (S12).
    // Capping only the `T` once passed a server that queued a waiter late
    // and granted it, unseen, past that (ReferenceRegressions).
    at = std::min(at, deferred ? read_by + in_.requests[request].wait_ms : read_by);
    return (at + 1 + tolerance) * 1000 > end_us;
  }

  // The instant a request counts as read by, for what it is owed: its
  // sending, or the stated bound on reading when the history gives one.
  std::int64_t read_by_ms(std::uint32_t request) const {
    return earliest_[request] + (in_.handled_within_ms >= 0 ? in_.handled_within_ms + 1 : 0);
  }
  // Whether a close read at `at` may drop `waiter`: not when its `T` was
  // owed, counted from when it was read (may_be_unseen), more than the
  // tolerance before. A server that queued it late does not escape its
  // answer by the close.
  bool may_drop(const Waiter& waiter, std::int64_t at) const {
    const auto& connection = in_.conns[conn_of(waiter.request)];
    if (connection.cut || connection.stopped) return true;
    const std::int64_t owed = std::min(waiter.hi, read_by_ms(waiter.request)) + wait_of(waiter);
    return owed + 1 + in_.tolerance_ms > at;
  }

  // The first observation of `conn` not yet explained, as a position in
  // the connection's list.
  std::vector<std::uint32_t>::const_iterator first_unexplained(const Config& c, std::uint32_t conn) const {
    const auto& list = in_.conns[conn].observations;
    auto it = std::lower_bound(list.begin(), list.end(), c.observed.mark);
    while (it != list.end() && c.observed.contains(*it)) ++it;
    return it;
  }

  void emit(Config c, std::uint32_t conn, ResponseKind kind, std::uint32_t owner, std::uint64_t token, std::int64_t at,
            Cause cause, std::uint32_t request, Configs& out, std::int32_t cause_request = -1,
            bool optional = false, std::uint64_t swept_holder = 0) const;
  void grant(Config c, std::uint32_t request, std::int64_t at, Cause cause, Configs& out,
             std::int32_t cause_request = -1) const;
  void handle(Config c, std::uint32_t request, std::int64_t at, Configs& out) const;
  void acquire(Config c, std::uint32_t request, std::int64_t at, Configs& out) const;
  void acquire_held(Config c, std::uint32_t request, std::int64_t at, Configs& out) const;
  void release(Config c, std::uint32_t request, std::int64_t at, Configs& out) const;
  void release_holder(Config c, std::uint32_t request, std::int64_t at, Configs& out, bool optional = false) const;
  void hand_off(Config c, std::int64_t at, Cause cause, std::int32_t cause_request, Configs& out) const;
  bool waiter_viable(const Config& c, std::uint32_t request, std::int64_t at) const;
  bool answer_possible(const Config& c, std::uint32_t request, std::int64_t from) const;

  void fire_timeouts(Config c, std::size_t from, std::int64_t at, Configs& out);
  void sweep(Config c, std::int64_t at, Configs& out) const;
  void inputs(Config c, std::int64_t at, Configs& out, std::size_t& orders);
  RequestList available(const Config& c, std::int64_t at) const;
  bool pending_is_long(const Config& c, std::int64_t at) const;
  RequestList closable(const Config& c, std::int64_t at) const;
  bool inert(const Config& before, const Config& after) const {
    return before.holder == after.holder && before.queue == after.queue && before.last_token == after.last_token &&
           before.phases == after.phases;
  }
  bool sole_claimant(const Config& c, std::uint32_t request, std::int64_t received_us) const;
  bool answer_is_its_own(const Config& c, std::uint32_t request, const Config& answered) const;

  bool alive(const Config& c, std::int64_t at) const;
  static std::uint64_t bytes_of(const Config& c);
  // What came instead of a failure kept (fail, in frontier_search.hpp).
  void explain_failure(const Config& c) const;
  std::int32_t same_class_pending(const Config& c, std::uint32_t conn, ResponseKind kind, std::uint32_t owner,
                                  std::uint64_t token) const;
  std::int64_t next_instant(const Configs& frontier, std::int64_t at) const;
  void bulk_sweep(Config c, std::int64_t first, std::int64_t last, Configs& out) const;
  bool is_final(const Config& c) const;

  std::string describe(const Config& c, std::int64_t at) const;
  std::string instead_of(const Config& c, std::uint32_t observation) const;

  // The search's hooks (frontier_search.hpp).
  void begin(Configs& frontier, std::int64_t) const { frontier.front().phases = initial_phases_; }
  void fire_due(Config c, std::int64_t at, Configs& out) { fire_timeouts(std::move(c), 0, at, out); }
  void settle(Configs&, std::int64_t) const {}
  std::int64_t advance(Configs& frontier, std::int64_t at) const;
  void add_final(const Config& c, Configs& finals) const { finals.push_back(c); }
  void explained(const Configs& finals, KeyVerdict& verdict) const;
  // Configurations equal but for their phases become one with both phase
  // sets (exact); a box keeps its phases (they are part of its key).
  Fingerprint merge_key(const Config& c) const { return fingerprint(c, false, blank_none); }
  Fingerprint box_key(const Config& c) const { return fingerprint(c, true, blank_all); }
  Fingerprint expansion_key(const Config& c) const { return fingerprint(c, true, blank_none); }
  static void merge_equal(Config& into, const Config& other) { into.phases.unite(other.phases); }
  static void merge_box(Config&, const Config&) {}
  // Boxes keep the order of the holder's grant and the waiters' queueing
  // (frontier_search.hpp): boxes that lost it passed histories the
  // reference rejects (tests/history/reference_regressions_test.cpp).
  static constexpr bool keep_order_in_boxes = true;

  PhaseSet initial_phases_;
  std::vector<std::int64_t> close_lo_, close_hi_;  // per connection: when the server drops its waiters
};

}  // namespace lockstep::history::simple_frontier
