// The reference's search (reference.hpp): instant by instant from the
// history's first, every state closed under the steps available at each
// instant, each state kept once (the least late of those with one future),
// and at the horizon whether one explains the history. Cluster mode's
// searches under growing maximum lateness and simple mode's sweep phases are
// run here too. The steps themselves are the modes' (reference_simple.cpp,
// reference_cluster.cpp).
#include "check/reference_internal.hpp"

#include <cstring>
#include <functional>
#include <unordered_map>

#include <fmt/format.h>

namespace lockstep::history::reference {

namespace {

void put(std::string& k, std::uint64_t v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  k.append(bytes, sizeof v);
}
void put(std::string& k, std::int64_t v) { put(k, static_cast<std::uint64_t>(v)); }
void put(std::string& k, const std::string& text) {
  put(k, static_cast<std::uint64_t>(text.size()));
  k += text;
}

// The model's part of a state's key. Its clock is left out: every state at
// instant t has fired what was due up to t (or had nothing due), and every
// later call moves the clock to a later instant first, so two models equal
// but for their clocks answer everything after t alike.
const std::string& model_key(const SimpleBox& box) {
  if (!box.key.empty()) return box.key;
  const auto& m = box.model;
  auto& k = box.key;
  put(k, m.next_token().value);
  for (const auto& [key, st] : m.keys()) {
    put(k, key);
    put(k, st.holder);
    put(k, st.token.value);
    put(k, st.expiry.value);  // (granted_at decides nothing)
    put(k, static_cast<std::uint64_t>(st.queue.size()));
    for (const auto& w : st.queue) {
      put(k, w.owner);
      put(k, w.lease_ms.value);
      put(k, w.deadline.value);
      put(k, w.connection.value);
      put(k, w.queued_order);
    }
  }
  box.hash = std::hash<std::string>{}(k);
  return k;
}
const std::string& model_key(const ClusterBox& box) {
  if (!box.key.empty()) return box.key;
  const auto& m = box.model;
  box.key = fmt::format("{}\n{}{}", m.next_token().value, m.canonical(), m.canonical_sessions());
  box.hash = std::hash<std::string>{}(box.key);
  return box.key;
}

// Two states with the same future: equal in everything but their lateness
// (and path).
bool same_future(const State& a, const State& b) {
  if (a.simple ? a.simple != b.simple && model_key(*a.simple) != model_key(*b.simple)
               : a.cluster != b.cluster && model_key(*a.cluster) != model_key(*b.cluster)) {
    return false;
  }
  return a.done == b.done && a.explained == b.explained && a.closed == b.closed && a.bound == b.bound &&
         a.waiters == b.waiters && a.outcome == b.outcome && a.latest_sent_us == b.latest_sent_us &&
         a.decided_sent_us == b.decided_sent_us && a.unissued == b.unissued;
}

std::size_t hash_of(const State& s) {
  std::size_t h = 0;
  if (s.simple) {
    model_key(*s.simple);
    h = s.simple->hash;
  } else {
    model_key(*s.cluster);
    h = s.cluster->hash;
  }
  const auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 0x100000001b3ULL + (h >> 29); };
  mix(s.done);
  mix(s.explained);
  mix(s.closed);
  for (const auto b : s.bound) mix(b);
  for (const auto& w : s.waiters) mix(w.id * 31 + w.send);
  for (const auto o : s.outcome) mix(o);
  mix(static_cast<std::uint64_t>(s.latest_sent_us));
  for (const auto d : s.decided_sent_us) mix(static_cast<std::uint64_t>(d));
  for (const auto& [named, issued] : s.unissued) mix(named * 31 + issued);
  return h;
}

// States kept once each (same future: the least lateness), in the order
// first reached.
class Layer {
 public:
  // Adds `s`; returns its index when it is new, or when a state with the
  // same future was there and `s` is less late (then that one takes its
  // lateness), so that its successors are reached (again).
  std::optional<std::uint32_t> add(State s) {
    const auto h = hash_of(s);
    const auto [from, to] = index_.equal_range(h);
    for (auto it = from; it != to; ++it) {
      auto& kept = states[it->second];
      if (!same_future(kept, s)) continue;
      if (s.lateness_ms >= kept.lateness_ms) return std::nullopt;
      kept.lateness_ms = s.lateness_ms;
      kept.path = std::move(s.path);
      return it->second;
    }
    const auto i = static_cast<std::uint32_t>(states.size());
    index_.emplace(h, i);
    states.push_back(std::move(s));
    return i;
  }
  bool empty() const { return states.empty(); }

  std::vector<State> states;

 private:
  std::unordered_multimap<std::size_t, std::uint32_t> index_;
};

}  // namespace

Search::Search(const Reading& r, const ReferenceOptions& options) : r_(r), options_(options) {
  tol_ = r.header.tolerance_ms;
  allowance_ = r.cluster ? r.header.clock_allowance_ms : 0;
  hw_ = r.header.handled_within_ms;
}

ReferenceResult Search::run() {
  ReferenceResult result;
  if (!r_.violation.empty()) {
    result.verdict = ReferenceResult::Verdict::violation;
    result.reason = r_.violation;
    return result;
  }
  const std::int64_t end_ms = floor_ms(r_.end_us);
  // S14, C9: nothing can be caused after the last observation's latest
  // cause; S7 and S12 look a tolerance further.
  horizon_ = end_ms + 2 + tol_ + allowance_;
  if (r_.cluster) {
    search_by_lateness();
  } else {
    search_by_phase();
  }
  result.states = states_;
  if (spent()) {
    result.verdict = ReferenceResult::Verdict::unknown;
    result.reason = held_over_ ? fmt::format("the reference held more than {} states at once", options_.held_max)
                               : std::string("the reference's budget of states ran out");
    return result;
  }
  const auto max = r_.header.max_lateness_ms;
  if (best_lateness_ < none_ms && (!r_.cluster || max < 0 || best_lateness_ <= max)) {
    result.verdict = ReferenceResult::Verdict::conforms;
    result.least_lateness_ms = r_.cluster ? best_lateness_ : -1;
  } else if (best_lateness_ < none_ms || pruned_late_) {
    // Explanations, none within the maximum (C14).
    result.verdict = ReferenceResult::Verdict::violation;
    result.reason = fmt::format("no explanation within the maximum lateness of {} ms (rule C14)", max);
    if (best_lateness_ < none_ms) result.least_lateness_ms = best_lateness_;  // the least beyond it
    if (pruned_late_) result.least_lateness_ms = -1;                          // not searched
  } else {
    result.verdict = ReferenceResult::Verdict::violation;
    result.reason = furthest_.empty() ? "no explanation" : furthest_;
  }
  return result;
}

void Search::search_by_lateness() {
  // C14: searches with a maximum lateness of 0, 1, 3, 7, ... ms, each
  // pruning a state past it (lateness only grows, so an explanation of
  // least lateness L survives every maximum at or above L, and equal
  // states keep the least lateness): the first to find an explanation
  // within its maximum has found the least. No search goes past a
  // stated maximum; the last has none (no lateness exceeds the span).
  const auto stated = r_.header.max_lateness_ms;
  const std::int64_t span = horizon_ - r_.first_ms + 1;
  for (std::int64_t bound = 0;; bound = bound * 2 + 1) {
    bound_ = stated >= 0 ? std::min(bound, stated) : bound;
    if (bound_ >= span) bound_ = -1;
    best_lateness_ = none_ms;
    furthest_.clear();
    pruned_late_ = false;
    explore(initial(), r_.first_ms);
    if (spent() || bound_ < 0 || bound_ == stated) break;
    if (best_lateness_ <= bound_) break;
    if (!pruned_late_) break;  // this search pruned nothing for lateness: it was the whole search
  }
}

void Search::search_by_phase() {
  // S6: one phase for the run, each tried in turn. A phase decides only
  // where the sweeps fall, and a sweep changes only a state that holds
  // a key whose holder has expired. So a phase whose sweeps fall, among
  // the instants at which some state of an earlier search held such a
  // key, at the same instants as that search's, visits the same states
  // (its model's clock shifted) to the same end: it is not searched
  // again. (Every phase whose first sweep falls past the horizon is
  // one of those.)
  const std::int64_t sweep = r_.header.limits.sweep_ms.value;
  std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> searched;
  const auto sweeps_among = [&](std::int64_t phase, const std::vector<std::int64_t>& instants) {
    std::vector<std::int64_t> out;
    for (const auto t : instants) {
      if (t - r_.first_ms - phase >= 0 && (t - r_.first_ms - phase) % sweep == 0) out.push_back(t);
    }
    return out;
  };
  for (std::int64_t p = 0; p < sweep; ++p) {
    if (std::any_of(searched.begin(), searched.end(),
                    [&](const auto& done) { return sweeps_among(p, done.first) == done.second; })) {
      continue;
    }
    phase_ = p;
    expired_at_.clear();
    explore(initial(), r_.first_ms);
    if (best_lateness_ < none_ms || spent()) break;
    searched.emplace_back(expired_at_, sweeps_among(p, expired_at_));
  }
}

State Search::initial() const {
  State s;
  const Limits limits = r_.header.limits;
  if (r_.cluster) {
    s.cluster = std::make_shared<const ClusterBox>(
        ClusterBox{model::ClusterModel(limits, Token{1}, cluster::SessionLimits{}), {}});
  } else {
    s.simple = std::make_shared<const SimpleBox>(SimpleBox{Model(limits, Token{1}), {}});
  }
  for (const auto o : r_.errors_taken) s.explained |= std::uint64_t{1} << o;  // C3
  return s;
}

void Search::explore(State start, std::int64_t from) {
  std::vector<State> frontier;
  frontier.push_back(std::move(start));
  for (std::int64_t t = from; t <= horizon_ && !frontier.empty(); ++t) {
    // The states at the end of instant t: those of the frontier after
    // what is due, closed under every step available at t (so every
    // order of every subset of them), each kept once.
    Layer next;
    std::vector<std::uint32_t> work;
    const auto reached = [&](State n) {
      if (const auto i = next.add(std::move(n))) work.push_back(*i);
    };
    if (std::none_of(frontier.begin(), frontier.end(), [&](const State& s) { return busy(s, t); })) {
      // Nothing happens at t: the frontier stays as it is (already kept
      // once each), and only what dies at t goes.
      std::erase_if(frontier, [&](const State& s) { return !alive(s, t); });
      if (frontier.empty() && furthest_.empty()) {
        furthest_ = fmt::format("no explanation reaches +{} ms", t - r_.first_ms);
      }
      continue;
    }
    for (auto& s : frontier) {
      if (!r_.cluster) {
        if (holds_expired(s, t) && (expired_at_.empty() || expired_at_.back() != t)) expired_at_.push_back(t);
        // S4: at an instant, what is due first (the model fires the
        // timeouts, then the sweep when the phase puts one there).
        std::vector<State> due;
        fire_due(std::move(s), t, due);
        for (auto& d : due) reached(std::move(d));
      } else {
        reached(std::move(s));
      }
    }
    while (!work.empty()) {
      if (++states_ > options_.states_max || held_over_) return;
      if (next.states.size() > options_.held_max) {
        held_over_ = true;
        return;
      }
      const auto i = work.back();
      work.pop_back();
      if (!any_step(next.states[i], t)) continue;
      // `next` grows only after the steps from `current` are all taken.
      const State& current = next.states[i];
      std::vector<State> stepped;
      if (r_.cluster) {
        cluster_steps(current, t, stepped);
      } else {
        simple_steps(current, t, stepped);
      }
      for (auto& n : stepped) reached(std::move(n));
    }
    // Monotone pruning: what can no longer be explained dies (S14, S15, C9).
    frontier.clear();
    for (auto& s : next.states) {
      if (alive(s, t)) frontier.push_back(std::move(s));
    }
    if (frontier.empty() && furthest_.empty()) {
      furthest_ = fmt::format("no explanation reaches +{} ms", t - r_.first_ms);
    }
  }
  for (const auto& s : frontier) {
    std::int64_t late = s.lateness_ms;
    if (final(s, late)) {
      best_lateness_ = std::min(best_lateness_, late);
      if (trace_) fmt::print(stderr, "explained (phase {}, lateness {}): {}\n", phase_, late, s.path);
    }
  }
}

// After instant t: a state dies when an observation can no longer be
// caused (S14, C9), or (simple) a request or a close passed its latest
// instant (S5, S7); with a maximum lateness, past it (C14).
bool Search::alive(const State& s, std::int64_t t) const {
  for (std::size_t o = 0; o < r_.seen.size(); ++o) {
    if (!has(s.explained, o) && floor_ms(r_.seen[o].read_us) + 1 + allowance_ <= t) return false;
  }
  if (r_.cluster) {
    if (bound_ < 0 || s.lateness_ms <= bound_) return true;
    pruned_late_ = true;  // C14
    return false;
  }
  if (hw_ >= 0) {
    for (std::size_t i = 0; i < r_.sends.size(); ++i) {
      if (!has(s.done, i) && floor_ms(r_.sends[i].us) + hw_ + 1 <= t) return false;
    }
  }
  for (std::uint32_t c = 0; c < r_.conns.size(); ++c) {
    if (r_.conns[c].end != Conn::End::open && !has(s.closed, c) && close_window(r_.conns[c]).second <= t) return false;
  }
  return true;
}

// At the horizon (S15, C13): whether the state explains the history, and
// its lateness with what the end adds.
bool Search::final(const State& s, std::int64_t& late) const {
  for (std::size_t o = 0; o < r_.seen.size(); ++o) {
    if (!has(s.explained, o)) return false;
  }
  if (r_.cluster) {
    // C13: a waiter still queued, owed on a connection the tester watched.
    for (const auto& w : s.waiters) {
      for (const auto& [key, st] : s.cluster->model.keys()) {
        for (const auto& q : st.queue) {
          if (q.id != w.id) continue;
          const auto conn = slot_of(q.connection);
          if (!owed_on(static_cast<std::int32_t>(w.send), conn)) continue;
          const std::int64_t late_us = r_.conns[conn].end_us - (q.deadline.value + 1 + tol_) * 1000;
          if (late_us > 0) late = std::max(late, (late_us + 999) / 1000);
        }
      }
    }
    return true;
  }
  // S15: a request never handled may have its answer unseen; a waiter
  // still queued, its `T`. (A connection that closed has its requests
  // handled and its waiters dropped: S7.)
  for (std::uint32_t i = 0; i < r_.sends.size(); ++i) {
    if (has(s.done, i)) continue;
    const auto& send = r_.sends[i];
    const auto& c = r_.conns[send.conn];
    if ((read_by(send) + 1 + tol_) * 1000 > c.end_us) continue;
    if (send.acquire && send.wait_ms > 0 && (read_by(send) + send.wait_ms + 1 + tol_) * 1000 > c.end_us) continue;
    return false;
  }
  for (const auto& [key, st] : s.simple->model.keys()) {
    for (const auto& q : st.queue) {
      for (const auto& w : s.waiters) {
        if (w.id != q.queued_order) continue;
        Produced p;
        p.conn = r_.sends[w.send].conn;
        p.at = instant_of(q.deadline);
        p.deferred = true;
        p.send = static_cast<std::int32_t>(w.send);
        if (!may_be_unseen_simple(p)) return false;
      }
    }
  }
  return true;
}

}  // namespace lockstep::history::reference
