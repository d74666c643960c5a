// The search both readings of a history run on one key: a frontier of
// configurations carried forward instant by instant, never by backtracking.
// Simple mode (frontier.cpp) and cluster mode (cluster_frontier.cpp) differ
// in their rules (what fires when, what a request does, what a
// configuration is), not in how the search goes: the loop over instants,
// the budgets that turn a search too costly into an undecided key, the
// merging of configurations that stand for one another, the failure kept
// for the report and the verdict are written here once, so that a fix to
// one of them holds in both modes.
//
// `FrontierSearch<Rules, Config>` is the base of each mode's search
// (Rules derives from it, and the loop calls it statically, with nothing
// virtual in a loop that runs millions of times). Rules provides, for a
// configuration `Config`:
// - begin(frontier, at): the first instant's setup;
// - fire_due(c, at, out): what is due at `at` before its requests;
// - inputs(c, at, out, orders): the requests (and closes, or Expires)
//   handled at `at`, in every order; it calls expand() first;
// - settle(after, at): what the mode does with the configurations an
//   instant made before they are judged;
// - alive(c, at): whether a configuration lives past `at` (die() says why
//   it does not);
// - advance(frontier, at): the next instant to visit, and what the
//   instants it jumps over may do (simple mode's sweep of a lone holder);
// - is_final(c), add_final(c, finals), explained(finals, verdict): the end;
// - merge_key(c), box_key(c), merge_equal(into, other),
//   merge_box(into, other): what merging may leave out of a
//   configuration's identity, and what it keeps of both; a mode whose
//   configurations keep their instants otherwise than in intervals gives
//   its own merge_boxes(configs);
// - expansion_key(c), bytes_of(c), explain_failure(c), describe(c, at);
//   first_expansion(c) when the mode skips more than equal configurations.
// Config derives from ConfigCore, its holder and waiters with the instant
// interval `lo`, `hi` (unless the mode gives its own merge_boxes), its
// index sets with mark, low() and size().
// DESIGN.md beside this file gives the algorithm and its argument.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "check/fingerprint.hpp"
#include "check/small_vector.hpp"
#include "check/frontier.hpp"
#include "check/key_input.hpp"

namespace lockstep::history {

inline std::int64_t floor_ms(std::int64_t us) { return us >= 0 ? us / 1000 : -((-us + 999) / 1000); }
// The millisecond at or after `us`: how late an arrival lies past an
// instant, rounded up (C12, C13: 0.2 ms past is 1 ms late).
inline std::int64_t ceil_ms(std::int64_t us) { return floor_ms(us + 999); }

// The server's millisecond grid is not aligned with the tester's: an answer
// caused at instant n may be read up to 1 ms before n on the tester's clock
// (docs/protocol.md, "Black box, in real time": instant n stands for a real
// interval of 1 ms).
inline constexpr std::int64_t grid_slack_us = 1000;

// The latest instant that can cause a response read at `received_us`.
inline std::int64_t latest_cause_ms(std::int64_t received_us) { return floor_ms(received_us + grid_slack_us); }

// Requests handled at one instant in every order: past this many orders
// from one configuration, the key is undecided rather than slow.
inline constexpr std::size_t orders_max = 16384;

// Whether a response names an owner (A, T, B) rather than a token (R, N).
inline bool names_owner(ResponseKind kind) {
  return kind == ResponseKind::granted || kind == ResponseKind::timed_out || kind == ResponseKind::busy;
}

// The steps of one explanation, newest first, shared by the configurations
// that branched from it.
struct StepNode {
  Step step;
  std::shared_ptr<const StepNode> previous;
};

// Requests (or connections) by index, a few at an instant: kept inside the
// list rather than on the heap.
using RequestList = SmallVector<std::uint32_t, 8>;

// Whether a fingerprint leaves out the instant intervals, so that
// configurations equal but for them can be merged.
inline constexpr bool blank_none = false, blank_all = true;

// What identifies a configuration in both modes, into `print`: the holder,
// the queue, the requests handled, the observations explained, the last
// token; with `blank`, without the instant intervals (simple mode keeps an
// interval per holder and waiter; cluster mode keeps its instants apart, in
// a zone it adds itself). A mode's own words (cluster mode's holes) are
// added where it has them; what a merge may unite (phases, lateness) the
// mode adds after.
template <class Config>
void fingerprint_core(FingerprintBuilder& print, const Config& c, bool blank) {
  print.add(static_cast<std::uint64_t>(c.holder.request + 1));
  print.add(c.holder.token);
  if constexpr (requires { c.holder.lo; }) {
    if (!blank) {
      print.add(static_cast<std::uint64_t>(c.holder.lo));
      print.add(static_cast<std::uint64_t>(c.holder.hi));
    }
  }
  print.add(c.queue.size());
  for (const auto& waiter : c.queue) {
    print.add(waiter.request);
    if constexpr (requires { waiter.lo; }) {
      if (!blank) {
        print.add(static_cast<std::uint64_t>(waiter.lo));
        print.add(static_cast<std::uint64_t>(waiter.hi));
      }
    }
  }
  for (const auto* set : {&c.handled, &c.observed}) {
    print.add(set->mark);
    print.add(set->extra.size());
    for (const auto index : set->extra) print.add(index);
    if constexpr (requires { set->holes; }) {
      print.add(set->holes.size());
      for (const auto index : set->holes) print.add(index);
    }
  }
  print.add(c.last_token);
}

// What a configuration is in both modes: the key's holder (an interval of
// instants it was granted at), its waiters (each with the interval it was
// queued in), the requests handled, the observations explained, the key's
// last token explained and the steps that led there. Each mode adds what
// only it has (sweep phases; stamps and lateness).
template <class Holder, class Waiter, class IndexSetType>
struct ConfigCore {
  Holder holder;
  SmallVector<Waiter, 2> queue;
  IndexSetType handled;           // requests handled
  IndexSetType observed;          // observations explained
  std::uint32_t explained = 0;
  std::uint64_t last_token = 0;  // the largest token of this key's grants explained
  std::shared_ptr<const StepNode> steps;  // newest first; not part of the identity

  bool held() const { return holder.request >= 0; }
};

// Drops the configurations marked in `gone` (a merge joined them into
// others), keeping the order of the rest.
template <class Config>
void drop_marked(std::vector<Config>& configs, const std::vector<bool>& gone) {
  std::vector<Config> kept;
  kept.reserve(configs.size());
  for (std::size_t k = 0; k < configs.size(); ++k) {
    if (!gone[k]) kept.push_back(std::move(configs[k]));
  }
  configs = std::move(kept);
}

template <class Rules, class Config>
class FrontierSearch {
 public:
  KeyVerdict run();

 protected:
  using Configs = std::vector<Config>;
  using Cause = KeyFailure::Cause;

  FrontierSearch(const KeyInput& input, const KeyOracles& oracles, const KeyCheckOptions& options)
      : in_(input), oracles_(oracles), options_(options) {
    const auto n = in_.requests.size();
    earliest_.resize(n);
    latest_.resize(n);
    previous_.assign(n, -1);
    for (std::size_t i = 0; i < n; ++i) {
      earliest_[i] = floor_ms(in_.requests[i].sent_us);
      latest_[i] = in_.requests[i].latest_ms;
    }
    for (const auto& seen : in_.observations) {
      if (seen.kind == ResponseKind::granted) grant_tokens_.push_back(seen.token);
    }
    std::sort(grant_tokens_.begin(), grant_tokens_.end());
    grant_first_.assign(in_.observations.size(), unbounded_ms);
    grant_last_.assign(in_.observations.size(), -1);
    grant_swept_.assign(in_.observations.size(), unnoted);
  }

  // Once the mode has narrowed latest_: the smallest of it from each index on.
  void find_later_latest() {
    const auto n = in_.requests.size();
    later_latest_.assign(n + 1, unbounded_ms);
    for (std::size_t i = n; i-- > 0;) later_latest_[i] = std::min(later_latest_[i + 1], latest_[i]);
  }

  // The requests that may be handled at `at`: sent by then, not handled,
  // the one before it on its connection (previous_) handled.
  RequestList ready(const Config& c, std::int64_t at) const {
    RequestList found;
    for (auto i = c.handled.low(); i < in_.requests.size() && earliest_[i] <= at; ++i) {
      if (c.handled.contains(i)) continue;
      const auto previous = previous_[i];
      if (previous >= 0 && !c.handled.contains(static_cast<std::uint32_t>(previous))) continue;
      found.push_back(i);
    }
    return found;
  }

  // The next instant after `at` a request is sent, or the horizon.
  std::int64_t next_sent(std::int64_t at) const {
    std::int64_t next = in_.horizon_ms;
    const auto sent = std::upper_bound(earliest_.begin(), earliest_.end(), at);
    if (sent != earliest_.end()) next = std::min(next, *sent);
    return next;
  }

  void record(Config& c, Step step) const {
    if (options_.record_steps) c.steps = std::make_shared<const StepNode>(StepNode{step, c.steps});
  }

  // Whether `seen` (not yet explained) can be the response `kind` for
  // `owner` or `token`: the same kind, owner or token, and for a grant the
  // next of the key's tokens (they increase in the order issued: the next
  // grant seen on this key carries the smallest of its tokens not yet
  // explained).
  bool matches(const Config& c, const KeyObservation& seen, ResponseKind kind, std::uint32_t owner,
               std::uint64_t token) const {
    if (seen.kind != kind) return false;
    if (names_owner(kind) && seen.owner != owner) return false;
    if ((kind == ResponseKind::released || kind == ResponseKind::not_held) && seen.token != token) return false;
    if (kind == ResponseKind::granted) {
      const auto next = std::upper_bound(grant_tokens_.begin(), grant_tokens_.end(), c.last_token);
      if (next == grant_tokens_.end() || *next != seen.token) return false;
    }
    return true;
  }

  // A configuration matched observation `index` as a grant issued at an
  // instant of [lo, hi]: the window every explanation issues it in grows.
  // `swept_holder`: the token of the expired holder a sweep handed the key
  // over from, or 0 (another cause, or a holder whose token was not seen);
  // kept only while every configuration that matched it agrees.
  void note_grant(std::uint32_t index, std::int64_t lo, std::int64_t hi, std::uint64_t swept_holder = 0) const {
    grant_first_[index] = std::min(grant_first_[index], lo);
    grant_last_[index] = std::max(grant_last_[index], hi);
    auto& swept = grant_swept_[index];
    swept = swept == unnoted || swept == swept_holder ? swept_holder : 0;
  }

  // The failure of a configuration, kept when it is the furthest so far at
  // this instant (what a report says went wrong): the one that explained
  // most, then handled most; among equals, an answer the contract gives
  // says more than a death.
  void fail(const Config& c, KeyFailure failure) const {
    const std::pair<std::uint32_t, std::uint32_t> progress{c.explained, c.handled.size()};
    const bool better = progress > failure_progress_ ||
                        (progress == failure_progress_ && (failure_.kind == KeyFailure::Kind::none ||
                                                           (failure.kind == KeyFailure::Kind::missing &&
                                                            failure_.kind != KeyFailure::Kind::missing)));
    if (!better) {
      // Among equals, one whose unexplained answer has a reason (a `T` too
      // early, ClusterFrontier::early_timeout) says more: a reading where
      // the waiter left unheard (its connection ended) explains as much,
      // and would hide why.
      if (progress != failure_progress_ || failure.kind != KeyFailure::Kind::unexplained ||
          failure_.kind != KeyFailure::Kind::unexplained || !failure_.instead.empty()) {
        return;
      }
      auto kept = std::move(failure_);
      failure_ = failure;
      self().explain_failure(c);
      if (failure_.instead.empty()) failure_ = std::move(kept);
      return;
    }
    failure_progress_ = progress;
    failure_ = failure;
    if (failure.kind == KeyFailure::Kind::missing && failure.response == ResponseKind::granted) {
      const auto next = std::upper_bound(grant_tokens_.begin(), grant_tokens_.end(), c.last_token);
      failure_.next_token = next == grant_tokens_.end() ? 0 : *next;
    }
    // What came instead, looked up only for the failure kept (most fail).
    self().explain_failure(c);
  }

  // A configuration dies after `at`: an observation nothing later can
  // cause (`observation`), or a request not handled in time (`request`).
  bool die(const Config& c, std::int64_t at, KeyFailure::Kind kind, std::int32_t request,
           std::int32_t observation) const {
    KeyFailure failure;
    failure.kind = kind;
    failure.at_ms = at;
    failure.request = request;
    failure.observation = observation;
    if (observation >= 0) failure.conn = in_.observations[static_cast<std::size_t>(observation)].conn;
    if (request >= 0) failure.conn = in_.requests[static_cast<std::uint32_t>(request)].conn;
    fail(c, failure);
    return false;
  }

  // At the end: every observation explained.
  bool explains_all(const Config& c) const {
    if (c.observed.size() >= in_.observations.size()) return true;
    KeyFailure failure;
    failure.at_ms = in_.horizon_ms;
    failure.kind = KeyFailure::Kind::unexplained;
    failure.observation = static_cast<std::int32_t>(c.observed.low());
    failure.conn = in_.observations[c.observed.low()].conn;
    fail(c, failure);
    return false;
  }

  // Every configuration that enters a step of the current instant is
  // counted: the steps (against work_max) and its bytes (against
  // memory_max_bytes, with the set of expanded configurations). Counting
  // what enters rather than what is kept bounds what one instant can hold,
  // however it branches. False once a budget is spent.
  bool spend(const Config& c) const {
    if (over_budget_) return false;
    ++instant_work_;
    instant_bytes_ += Rules::bytes_of(c);
    constexpr std::uint64_t expanded_entry_bytes = 48;  // a fingerprint in a node of the set
    if (work_before_ + instant_work_ > options_.work_max) {
      over_budget_ = true;
      over_budget_why_ = fmt::format("more than {} configurations stepped", options_.work_max);
    } else if (instant_bytes_ + expanded_.size() * expanded_entry_bytes > options_.memory_max_bytes) {
      over_budget_ = true;
      over_budget_why_ = fmt::format("the configurations of one instant past {} MiB", options_.memory_max_bytes >> 20);
    }
    return !over_budget_;
  }

  // Whether the inputs of `c` at this instant are to be expanded: within
  // the budgets, not expanded yet (orders that commute reach one
  // configuration twice: it is expanded once), and within orders_max of
  // its branch (`items` names what is ordered, for the verdict).
  bool expand(const Config& c, std::size_t& orders, std::string_view items) {
    if (!spend(c)) return false;
    if (!self().first_expansion(c)) return false;
    if (++orders > orders_max) {
      over_budget_ = true;
      over_budget_why_ = fmt::format("more than {} orders of the {} of one instant", orders_max, items);
      return false;
    }
    return true;
  }

  // Whether `c` is expanded for the first time at this instant (orders that
  // commute reach one configuration twice: it is expanded once). A mode
  // may also skip one that another already expanded stands for.
  bool first_expansion(const Config& c) { return expanded_.insert(self().expansion_key(c)); }

  // Configurations equal but for what merge_key leaves out become one
  // (merge_equal keeps what both allow: exact); then those equal but for
  // touching instant intervals become one box.
  void merge(Configs& configs) const {
    if (configs.size() < 2) return;
    const auto first = first_of_group(configs, [this](const Config& c) { return self().merge_key(c); });
    std::vector<std::uint32_t> place(configs.size());  // in `kept`, of each group's first
    Configs kept;
    kept.reserve(configs.size());
    for (std::uint32_t k = 0; k < configs.size(); ++k) {
      if (first[k] == k) {
        place[k] = static_cast<std::uint32_t>(kept.size());
        kept.push_back(std::move(configs[k]));
      } else {
        Rules::merge_equal(kept[place[first[k]]], configs[k]);
      }
    }
    configs = std::move(kept);
    if (configs.size() > 1) self().merge_boxes(configs);
  }

  // For each configuration, the first (lowest index) of those with the same
  // `key`: equal configurations found by sorting their fingerprints (a
  // search merges a few configurations per instant, a million times: a
  // hash map's node per configuration cost more than the sort).
  template <class Key>
  static std::vector<std::uint32_t> first_of_group(const Configs& configs, Key key) {
    std::vector<std::pair<Fingerprint, std::uint32_t>> prints;
    prints.reserve(configs.size());
    for (std::uint32_t k = 0; k < configs.size(); ++k) prints.emplace_back(key(configs[k]), k);
    std::sort(prints.begin(), prints.end(), [](const auto& a, const auto& b) {
      if (a.first.high != b.first.high) return a.first.high < b.first.high;
      if (a.first.low != b.first.low) return a.first.low < b.first.low;
      return a.second < b.second;
    });
    std::vector<std::uint32_t> first(configs.size());
    for (std::size_t i = 0; i < prints.size(); ++i) {
      const bool starts = i == 0 || !(prints[i].first == prints[i - 1].first);
      first[prints[i].second] = starts ? prints[i].second : first[prints[i - 1].second];
    }
    return first;
  }

  // Configurations equal but for one instant interval, which touch, become
  // one: their bounding box, exactly their union. (Where several intervals
  // differ, the box would also hold combinations neither had, and accepted
  // a violation: DESIGN.md, "Relaxations".)
  void merge_boxes(Configs& configs) const {
    // Groups are joined each on its own, in index order, so the order in
    // which the groups are visited reaches no output.
    const auto first = first_of_group(configs, [this](const Config& c) { return self().box_key(c); });
    std::vector<std::vector<std::uint32_t>> groups;  // of two or more
    {
      std::vector<std::uint32_t> sizes(configs.size(), 0), slot(configs.size(), 0);
      for (const auto f : first) ++sizes[f];
      for (std::uint32_t k = 0; k < configs.size(); ++k) {
        if (sizes[first[k]] < 2) continue;
        if (first[k] == k) {
          slot[k] = static_cast<std::uint32_t>(groups.size());
          groups.emplace_back().reserve(sizes[k]);
        }
        groups[slot[first[k]]].push_back(k);
      }
    }
    const auto touches = [](std::int64_t lo, std::int64_t hi, std::int64_t other_lo, std::int64_t other_hi) {
      return other_lo <= hi + 1 && lo <= other_hi + 1;
    };
    const auto joinable = [&](const Config& a, const Config& b) {
      if (a.held() && !touches(a.holder.lo, a.holder.hi, b.holder.lo, b.holder.hi)) return false;
      for (std::size_t j = 0; j < a.queue.size(); ++j) {
        if (!touches(a.queue[j].lo, a.queue[j].hi, b.queue[j].lo, b.queue[j].hi)) return false;
      }
      // Exact: at most one interval differs, so the box is the union.
      int differ = a.held() && (a.holder.lo != b.holder.lo || a.holder.hi != b.holder.hi) ? 1 : 0;
      for (std::size_t j = 0; j < a.queue.size(); ++j) {
        if (a.queue[j].lo != b.queue[j].lo || a.queue[j].hi != b.queue[j].hi) ++differ;
      }
      if (differ > 1) return false;
      // (Rules that ask it:) any two of the holder's grant and the waiters'
      // queueing that come in one order in both, at one instant or not,
      // stay so in the box: a box that lost it would pair instants no
      // explanation has (a grant after a queueing that could only follow
      // it, two waiters of one connection out of the order they were sent).
      if (boxes_keep_order()) {
        const auto at = [](const Config& c, std::size_t k) {
          return k == 0 ? std::pair{c.holder.lo, c.holder.hi} : std::pair{c.queue[k - 1].lo, c.queue[k - 1].hi};
        };
        for (std::size_t x = a.held() ? 0 : 1; x <= a.queue.size(); ++x) {
          for (std::size_t y = a.held() ? 0 : 1; y <= a.queue.size(); ++y) {
            if (x == y) continue;
            const auto [ax_lo, ax_hi] = at(a, x);
            const auto [ay_lo, ay_hi] = at(a, y);
            const auto [bx_lo, bx_hi] = at(b, x);
            const auto [by_lo, by_hi] = at(b, y);
            if (ax_hi <= ay_lo && bx_hi <= by_lo && std::max(ax_hi, bx_hi) > std::min(ay_lo, by_lo)) return false;
          }
        }
      }
      // A waiter certainly queued before another in both stays so in the
      // box: FIFO at the next hand-off is judged on that order, and a box
      // that lost it would let the later one be served first.
      for (std::size_t i = 0; i < a.queue.size(); ++i) {
        for (std::size_t j = 0; j < a.queue.size(); ++j) {
          if (i == j) continue;
          const bool before_in_a = a.queue[i].hi < a.queue[j].lo, before_in_b = b.queue[i].hi < b.queue[j].lo;
          if (before_in_a && before_in_b &&
              std::max(a.queue[i].hi, b.queue[i].hi) >= std::min(a.queue[j].lo, b.queue[j].lo)) {
            return false;
          }
        }
      }
      return true;
    };
    const auto join = [](Config& into, const Config& other) {
      into.holder.lo = std::min(into.holder.lo, other.holder.lo);
      into.holder.hi = std::max(into.holder.hi, other.holder.hi);
      for (std::size_t j = 0; j < into.queue.size(); ++j) {
        into.queue[j].lo = std::min(into.queue[j].lo, other.queue[j].lo);
        into.queue[j].hi = std::max(into.queue[j].hi, other.queue[j].hi);
      }
      Rules::merge_box(into, other);
    };
    std::vector<bool> gone(configs.size(), false);
    bool any = false;
    for (const auto& members : groups) {
      // Joining may make a box touch one it did not before: repeat until
      // nothing joins.
      for (bool again = true; again;) {
        again = false;
        for (std::size_t x = 0; x < members.size(); ++x) {
          if (gone[members[x]]) continue;
          for (std::size_t y = x + 1; y < members.size(); ++y) {
            if (gone[members[y]] || !joinable(configs[members[x]], configs[members[y]])) continue;
            join(configs[members[x]], configs[members[y]]);
            gone[members[y]] = true;
            any = again = true;
          }
        }
      }
    }
    if (any) drop_marked(configs, gone);
  }

  // An instant of the history, as descriptions print it: ms from its origin.
  std::string instant_text(std::int64_t ms) const {
    return fmt::format("+{:.3f} ms", (ms * 1000 - options_.origin_us) / 1000.0);
  }
  std::string span_text(std::int64_t lo, std::int64_t hi) const {
    return lo == hi ? instant_text(lo) : fmt::format("{}..{}", instant_text(lo), instant_text(hi));
  }

  const KeyInput& in_;
  const KeyOracles& oracles_;
  KeyCheckOptions options_;
  std::vector<std::int64_t> earliest_, latest_;  // per request: the instants it may be handled in
  std::vector<std::int64_t> later_latest_;       // the smallest latest_ of the requests from each index on
  // Per request: the one that must be handled before it (on its
  // connection, as each mode orders them), or -1.
  std::vector<std::int32_t> previous_;
  std::vector<std::uint64_t> grant_tokens_;      // of the grants seen on this key, sorted
  mutable bool over_budget_ = false;
  mutable std::string over_budget_why_;
  // The configurations whose inputs at the current instant were expanded.
  FingerprintSet expanded_;
  // What the current instant has made: configurations and their bytes.
  mutable std::uint64_t instant_work_ = 0, instant_bytes_ = 0;
  std::uint64_t work_before_ = 0;
  // The furthest failure of the current instant: its configuration's
  // progress (responses explained, requests handled) and what failed.
  mutable std::pair<std::uint32_t, std::uint32_t> failure_progress_{0, 0};
  mutable KeyFailure failure_;
  // Per observation: the instants at which some configuration matched it
  // as a grant (a bound on when every explanation issued it).
  mutable std::vector<std::int64_t> grant_first_, grant_last_;
  static constexpr std::uint64_t unnoted = ~std::uint64_t{0};
  mutable std::vector<std::uint64_t> grant_swept_;

 private:
  // Rules may declare `static constexpr bool boxes_keep_order = true` so
  // that boxes keep the order of the holder's grant and the waiters'
  // queueing (merge_boxes).
  static constexpr bool boxes_keep_order() {
    if constexpr (requires { Rules::keep_order_in_boxes; }) {
      return Rules::keep_order_in_boxes;
    } else {
      return false;
    }
  }
  Rules& self() { return static_cast<Rules&>(*this); }
  const Rules& self() const { return static_cast<const Rules&>(*this); }

  void report_furthest(const Configs& frontier, std::int64_t at, KeyVerdict& verdict) const;
};

// The configuration that explained most (the first of equals): its state,
// its steps, and the first observation it could not explain.
template <class Rules, class Config>
void FrontierSearch<Rules, Config>::report_furthest(const Configs& frontier, std::int64_t at,
                                                    KeyVerdict& verdict) const {
  const Config* best = nullptr;
  for (const auto& c : frontier) {
    if (best == nullptr || c.explained > best->explained) best = &c;
  }
  verdict.last_alive_ms = at;
  if (best == nullptr) return;
  verdict.explained = best->explained;
  verdict.unexplained =
      best->observed.size() < in_.observations.size() ? static_cast<std::int32_t>(best->observed.low()) : -1;
  verdict.state = self().describe(*best, at);
  for (const StepNode* node = best->steps.get(); node != nullptr; node = node->previous.get()) {
    verdict.steps.push_back(node->step);
  }
  std::reverse(verdict.steps.begin(), verdict.steps.end());
}

// Instant by instant: what is due, then the inputs in every order; the
// configurations that cannot go on die, the others merge; past a budget the
// key is undecided, with nothing alive it is unexplained; at the horizon the
// final configurations decide.
template <class Rules, class Config>
KeyVerdict FrontierSearch<Rules, Config>::run() {
  KeyVerdict verdict;
  Configs frontier(1);
  std::int64_t at = in_.requests.empty() ? in_.horizon_ms : std::min(earliest_.front(), in_.horizon_ms);
  self().begin(frontier, at);
  // The configuration that explained most before this instant, kept for the
  // report should none survive it.
  Configs furthest;
  const auto undecided = [&](std::string why) {
    verdict.outcome = KeyOutcome::undecided;
    verdict.why = std::move(why);
    report_furthest(furthest, at, verdict);
    return verdict;
  };
  while (true) {
    furthest.assign(1, *std::max_element(frontier.begin(), frontier.end(), [](const Config& a, const Config& b) {
      return a.explained < b.explained;
    }));
    expanded_.clear();
    instant_work_ = instant_bytes_ = 0;
    work_before_ = verdict.work;
    failure_ = KeyFailure{};
    failure_progress_ = {0, 0};
    Configs due;
    due.reserve(frontier.size());
    for (auto& c : frontier) self().fire_due(std::move(c), at, due);
    Configs after;
    for (auto& c : due) {
      std::size_t orders = 0;
      self().inputs(std::move(c), at, after, orders);
    }
    self().settle(after, at);
    verdict.work += instant_work_;
    verdict.memory_peak_bytes = std::max(verdict.memory_peak_bytes, instant_bytes_);
    if (over_budget_) return undecided(over_budget_why_);
    std::erase_if(after, [&](const Config& c) { return !self().alive(c, at); });
    merge(after);
    verdict.frontier_peak = std::max(verdict.frontier_peak, after.size());
    if (after.size() > options_.frontier_max) {
      return undecided(fmt::format("more than {} configurations alive at one instant", options_.frontier_max));
    }
    if (after.empty()) {
      verdict.outcome = KeyOutcome::unexplained;
      verdict.failure = failure_;
      report_furthest(furthest, at, verdict);
      return verdict;
    }
    frontier = std::move(after);
    if (at >= in_.horizon_ms) break;
    at = self().advance(frontier, at);
  }
  Configs finals;
  failure_ = KeyFailure{};
  failure_progress_ = {0, 0};
  for (const auto& c : frontier) {
    if (self().is_final(c)) self().add_final(c, finals);
  }
  for (std::uint32_t i = 0; i < in_.observations.size(); ++i) {
    if (grant_last_[i] >= 0) {
      verdict.grants.push_back(GrantWindow{i, grant_first_[i], grant_last_[i], grant_swept_[i]});
    }
  }
  if (finals.empty()) {
    verdict.outcome = KeyOutcome::unexplained;
    verdict.failure = failure_;
    report_furthest(frontier, at, verdict);
    return verdict;
  }
  verdict.outcome = KeyOutcome::explained;
  self().explained(finals, verdict);
  report_furthest(finals, at, verdict);
  verdict.unexplained = -1;
  return verdict;
}

}  // namespace lockstep::history
