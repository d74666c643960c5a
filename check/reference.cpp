// The reference checker (reference.hpp). Every rule it applies cites the
// numbered rule of docs/protocol.md ("How lockstep reads these rules") it
// implements: S1.. for simple mode, C1.. for a cluster.
#include "check/reference.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "impl/cluster/sessions.hpp"
#include "impl/protocol.hpp"
#include "model/cluster_model.hpp"
#include "model/model.hpp"

namespace lockstep::history {
namespace {

constexpr std::int64_t none_ms = INT64_MAX / 4;

std::int64_t floor_ms(std::int64_t us) { return us >= 0 ? us / 1000 : -((-us + 999) / 1000); }

// ---- the history as the reference reads it ----------------------------------

struct Send {
  std::uint32_t conn = 0;  // slot in Reading::conns
  std::int64_t us = 0;
  std::string line;
  bool malformed = false;
  bool acquire = false;
  std::string key, owner;
  std::int64_t lease_ms = 0, wait_ms = 0;
  std::uint64_t token = 0;
  std::int32_t op = -1;   // cluster: the operation it sends (C4)
  bool errored = false;   // cluster: answered E, never applied (C3)
};

struct Seen {
  std::uint32_t conn = 0;
  std::int64_t read_us = 0, from_us = 0;
  std::optional<Response> response;  // nothing: not a response line
};

struct Conn {
  std::uint32_t id = 0;
  std::int64_t open_us = 0;
  std::int64_t end_us = 0;  // the end of its observation (S12, C13)
  enum class End { open, tester, server } end = End::open;
  std::vector<std::uint32_t> sends, seen;  // in order
};

struct Op {  // cluster: one operation (C4)
  std::vector<std::uint32_t> sends;
  std::string key;
};

struct Reading {
  Header header;
  bool cluster = false;
  std::vector<Conn> conns;
  std::vector<Send> sends;
  std::vector<Seen> seen;
  std::vector<Op> ops;
  std::int64_t first_ms = 0, end_us = 0;
  std::string violation;  // found while reading (an E nothing answers, C3)
  std::vector<std::uint32_t> errors_taken;  // the `E`s C3 gives to sends
};

// The fields of a well-formed request.
void take_request(Send& s, const Request& request) {
  std::visit(
      [&](const auto& q) {
        using Q = std::decay_t<decltype(q)>;
        s.key = std::string(q.key);
        if constexpr (std::is_same_v<Q, AcquireRequest>) {
          s.acquire = true;
          s.owner = std::string(q.owner);
          s.lease_ms = q.lease_ms.value;
          s.wait_ms = q.wait_ms.value;
        } else {
          s.token = q.token.value;
        }
      },
      request);
}

Reading read(const History& history) {
  Reading r;
  r.header = history.header;
  r.cluster = history.header.mode == Mode::cluster;
  std::map<std::uint32_t, std::uint32_t> slot;
  const auto conn_of = [&](const Event& e) {
    auto [it, fresh] = slot.emplace(e.conn, static_cast<std::uint32_t>(r.conns.size()));
    if (fresh) {
      Conn c;
      c.id = e.conn;
      c.open_us = e.t_us;
      r.conns.push_back(c);
    }
    return it->second;
  };
  for (const auto& e : history.events) {
    if (e.kind == EventKind::nemesis) continue;
    if (e.kind == EventKind::connect) conn_of(e);
    if (e.kind == EventKind::send) {
      Send s;
      s.conn = conn_of(e);
      s.us = e.t_us;
      s.line = e.line;
      if (r.cluster) {
        auto parsed = parse_session_request(e.line, r.header.limits);
        if (const auto* ok = std::get_if<SessionRequest>(&parsed)) {
          take_request(s, ok->request);
        } else {
          s.malformed = true;
        }
      } else {
        auto parsed = parse_request(e.line, r.header.limits);
        if (const auto* ok = std::get_if<Request>(&parsed)) {
          take_request(s, *ok);
        } else {
          s.malformed = true;
        }
      }
      r.conns[s.conn].sends.push_back(static_cast<std::uint32_t>(r.sends.size()));
      r.sends.push_back(std::move(s));
    }
    if (e.kind == EventKind::recv) {
      Seen o;
      o.conn = conn_of(e);
      o.read_us = e.t_us;
      o.from_us = e.arrived_from_us();
      o.response = parse_response(e.line);
      r.conns[o.conn].seen.push_back(static_cast<std::uint32_t>(r.seen.size()));
      r.seen.push_back(std::move(o));
    }
    if (e.kind == EventKind::close || e.kind == EventKind::eof) {
      auto& c = r.conns[conn_of(e)];
      if (c.end == Conn::End::open) {
        c.end = e.kind == EventKind::close ? Conn::End::tester : Conn::End::server;
        c.end_us = e.t_us;
      }
    }
  }
  if (!history.events.empty()) {
    r.first_ms = floor_ms(history.events.front().t_us);
    r.end_us = history.events.back().t_us;
  }
  for (auto& c : r.conns) {
    if (c.end == Conn::End::open) c.end_us = r.end_us;  // watched until the history's end (S12, C13)
  }
  if (!r.cluster) return r;
  // C4: the sends of one line with session fields (client, seq) are one
  // operation; a send without them is an operation of its own.
  std::map<std::string, std::int32_t> by_line;
  for (std::uint32_t i = 0; i < r.sends.size(); ++i) {
    auto& s = r.sends[i];
    const auto fields = std::count(s.line.begin(), s.line.end(), ' ');
    const bool session = !s.malformed && ((s.acquire && fields == 6) || (!s.acquire && fields == 4));
    auto found = session ? by_line.find(s.line) : by_line.end();
    if (found == by_line.end()) {
      s.op = static_cast<std::int32_t>(r.ops.size());
      r.ops.push_back(Op{{}, s.key});
      if (session) by_line.emplace(s.line, s.op);
    } else {
      s.op = found->second;
    }
    r.ops[static_cast<std::size_t>(s.op)].sends.push_back(i);
  }
  return r;
}

// ---- states -------------------------------------------------------------------

// A model and the text of everything in it that decides its future (its
// key) with the key's hash, computed once. States share a model until a
// step changes it: a step that does makes its own copy first (own_simple,
// own_cluster).
struct SimpleBox {
  Model model;
  mutable std::string key;  // empty until asked
  mutable std::size_t hash = 0;
};
struct ClusterBox {
  model::ClusterModel model;
  mutable std::string key;
  mutable std::size_t hash = 0;
};

// What the model's queues do not say: which send each waiter came from.
struct WaiterOf {
  std::uint64_t id = 0;  // simple: queued_order; cluster: waiter id
  std::uint32_t send = 0;
  friend bool operator==(const WaiterOf&, const WaiterOf&) = default;
};

constexpr std::size_t tokens_max = reference_requests_max;  // a request makes at most one grant

struct State {
  std::shared_ptr<const SimpleBox> simple;
  std::shared_ptr<const ClusterBox> cluster;
  std::uint32_t done = 0;       // per send, a bit: handled (simple) or applied (cluster)
  std::uint64_t explained = 0;  // per observation, a bit
  std::uint32_t closed = 0;     // simple: per connection, a bit: its close took effect
  // Per model token (value - 1): the history's token, 0 unbound (S13).
  std::array<std::uint64_t, tokens_max> bound{};
  std::vector<WaiterOf> waiters;
  // Cluster, per op: what it came to, for its retries (C4, C16).
  enum Outcome : std::uint8_t { not_applied, applied, busy };
  std::array<Outcome, reference_requests_max> outcome{};
  std::int64_t lateness_ms = 0;  // cluster (C10..C13)
  std::string path;              // what it did, kept for LOCKSTEP_REFERENCE_TRACE only
};

bool has(std::uint64_t bits, std::size_t i) { return ((bits >> i) & 1U) != 0; }

Model& own_simple(State& s) {
  auto box = std::make_shared<SimpleBox>(SimpleBox{s.simple->model, {}, 0});
  Model& model = box->model;
  s.simple = std::move(box);
  return model;
}
model::ClusterModel& own_cluster(State& s) {
  auto box = std::make_shared<ClusterBox>(ClusterBox{s.cluster->model, {}, 0});
  auto& model = box->model;
  s.cluster = std::move(box);
  return model;
}

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
         a.waiters == b.waiters && a.outcome == b.outcome;
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

// ---- the search ---------------------------------------------------------------

class Search {
 public:
  Search(const Reading& r, const ReferenceOptions& options) : r_(r), options_(options) {
    tol_ = r.header.tolerance_ms;
    allowance_ = r.cluster ? r.header.clock_allowance_ms : 0;
    hw_ = r.header.handled_within_ms;
  }

  ReferenceResult run() {
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
    } else {
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

 private:
  State initial() const {
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

  // S6: the model sweeps at multiples of sweep_ms of its own clock; instant
  // t of the history is that clock shifted so that the sweeps fall at
  // first_ms + phase + k * sweep_ms.
  TimeMs model_time(std::int64_t t) const {
    return TimeMs{t - r_.first_ms + r_.header.limits.sweep_ms.value - phase_};
  }
  std::int64_t instant_of(TimeMs model) const {
    return model.value + r_.first_ms - r_.header.limits.sweep_ms.value + phase_;
  }

  void explore(State start, std::int64_t from) {
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

  // ---- tokens (S13, C15) ----------------------------------------------------------

  // Binds the model's token `m` to the history's `h`: one token per grant,
  // and bound tokens increase in the order the model issued them.
  static bool bind(State& s, std::uint64_t m, std::uint64_t h) {
    if (m == 0 || m > tokens_max) throw std::logic_error("reference: more grants than requests");
    if (s.bound[m - 1] != 0) return s.bound[m - 1] == h;
    for (std::size_t i = 0; i < tokens_max; ++i) {
      const auto b = s.bound[i];
      if (b == 0) continue;
      if (b == h) return false;
      if ((i + 1 < m) != (b < h)) return false;
    }
    s.bound[m - 1] = h;
    return true;
  }

  // S13, C15: the model tokens a release carrying the history's token `h`
  // may name: the grant bound to it; or else any grant not seen (which it
  // then binds), or a token no grant carried.
  struct Named {
    State state;
    std::uint64_t model_token;
  };
  std::vector<Named> name_token(const State& s, std::uint64_t h, std::uint32_t send) const {
    std::vector<Named> out;
    for (std::size_t i = 0; i < tokens_max; ++i) {
      if (s.bound[i] == h) return {Named{s, i + 1}};
    }
    const std::uint64_t issued =
        (r_.cluster ? s.cluster->model.next_token().value : s.simple->model.next_token().value) - 1;
    for (std::uint64_t m = 1; m <= issued; ++m) {
      if (s.bound[m - 1] != 0) continue;
      State n = s;
      if (bind(n, m, h)) out.push_back(Named{std::move(n), m});
    }
    out.push_back(Named{s, (std::uint64_t{1} << 62) + send});  // never issued
    return out;
  }

  // ---- matching (S9..S12, C8, C12, C13) ---------------------------------------------

  struct Produced {
    Response response;  // as the model gave it
    std::uint32_t conn = 0;  // slot
    std::int64_t at = 0;     // the instant it was produced
    bool deferred = false;
    std::int32_t send = -1;       // the send it answers (its request), or -1
    std::uint64_t echo = 0;       // R/N: the history's token the request carried
    std::int64_t due_ms = 0;      // cluster: its cause's on-time instant (C12)
    std::int64_t not_before_us = 0;  // S9, S10, C8: the send of its request, or of the release that caused it
  };

  std::uint32_t slot_of(ConnectionId id) const {
    for (std::uint32_t i = 0; i < r_.conns.size(); ++i) {
      if (r_.conns[i].id == id.value) return i;
    }
    return 0;
  }

  // Whether observation `o` is the response `p` (tokens as bound), binding
  // a grant's token.
  static bool same(State& s, const Produced& p, const Response& o) {
    const auto& a = p.response;
    if (a.kind != o.kind) return false;
    switch (a.kind) {
      case ResponseKind::error:
        return true;
      case ResponseKind::timed_out:
      case ResponseKind::busy:
        return a.owner == o.owner && a.key == o.key;
      case ResponseKind::released:
      case ResponseKind::not_held:
        return a.key == o.key && p.echo == o.token.value;
      case ResponseKind::granted:
        return a.owner == o.owner && a.key == o.key && bind(s, a.token.value, o.token.value);
    }
    return false;
  }

  std::int64_t read_by(const Send& send) const { return floor_ms(send.us) + (hw_ >= 0 ? hw_ + 1 : 0); }

  // S12: the tester stopped watching the connection before `p` was owed.
  bool may_be_unseen_simple(const Produced& p) const {
    const auto& c = r_.conns[p.conn];
    std::int64_t at = p.at;
    if (p.send >= 0) {
      const auto& s = r_.sends[static_cast<std::size_t>(p.send)];
      if (!p.deferred) at = std::min(at, read_by(s));
      // A waiter's answer, its `T` or a hand-off's `A`, is owed by its
      // wait's end counted from when it was read.
      if (p.deferred && s.acquire) at = std::min(at, read_by(s) + s.wait_ms);
    }
    return (at + 1 + tol_) * 1000 > c.end_us;
  }

  bool of_key(const Seen& o, const Produced& p) const {
    return o.response && o.response->kind != ResponseKind::error && o.response->key == p.response.key;
  }

  void explain(State& n, std::uint32_t o, const Produced& p) const {
    n.explained |= std::uint64_t{1} << o;
    if (trace_) n.path += fmt::format(" [{} @{} = obs {}]", format_response(p.response), p.at, o);
  }

  void match(const State& s, const Produced& p, std::vector<State>& out) const {
    const auto& c = r_.conns[p.conn];
    const bool error = p.response.kind == ResponseKind::error;
    if (r_.cluster) {
      // C8: read no earlier than a millisecond and the allowance before it
      // was produced; any unexplained observation on its connection.
      for (const auto o : c.seen) {
        const auto& seen = r_.seen[o];
        if (has(s.explained, o) || !seen.response || seen.read_us < (p.at - allowance_ - 1) * 1000) continue;
        if (seen.read_us < p.not_before_us) continue;  // C8: never before the send it answers
        State n = s;
        if (!same(n, p, *seen.response)) continue;
        explain(n, o, p);
        if (p.deferred) {
          // C12: heard past its cause's on-time instant and the tolerance.
          const std::int64_t late_us = seen.from_us - (p.due_ms + 1 + tol_) * 1000;
          if (late_us > 0) n.lateness_ms = std::max(n.lateness_ms, (late_us + 999) / 1000);
        }
        out.push_back(std::move(n));
      }
      // C8: any answer may go unheard; C13: a deferred answer to an
      // operation sent once, on a connection the tester watched, is late by
      // that watch.
      State n = s;
      if (p.deferred && p.send >= 0 && owed_on(p.send, p.conn)) {
        const std::int64_t late_us = c.end_us - (p.due_ms + 1 + tol_) * 1000;
        if (late_us > 0) n.lateness_ms = std::max(n.lateness_ms, (late_us + 999) / 1000);
      }
      if (trace_) n.path += fmt::format(" [{} @{} unheard]", format_response(p.response), p.at);
      out.push_back(std::move(n));
      return;
    }
    // Simple mode. S11: an E matches any unexplained E of its connection.
    // S9: an answer given at once is the first unexplained observation of
    // its key on the connection, or one read in the same millisecond. S10:
    // a deferred answer, any that arrived within the tolerance.
    std::int64_t first_ms = -1;
    bool any_left = false;
    for (const auto o : c.seen) {
      const auto& seen = r_.seen[o];
      if (has(s.explained, o)) continue;
      if (error) {
        if (!seen.response || seen.response->kind != ResponseKind::error) continue;
      } else {
        if (!of_key(seen, p)) continue;
        any_left = true;
        if (first_ms < 0) first_ms = floor_ms(seen.read_us);
        if (p.deferred && seen.from_us > (p.at + 1 + tol_) * 1000) break;
        if (!p.deferred && floor_ms(seen.read_us) != first_ms) break;
      }
      if (seen.read_us < (p.at - 1) * 1000) continue;  // S9, S10: the grid's millisecond
      if (seen.read_us < p.not_before_us) continue;     // S9, S10: never before its request was sent
      State n = s;
      if (!same(n, p, *seen.response)) continue;
      explain(n, o, p);
      out.push_back(std::move(n));
    }
    // S12: unseen only when not owed; an answer given at once only when no
    // observation of its key is left behind it on the connection.
    if (may_be_unseen_simple(p) && (p.deferred || error || !any_left)) {
      out.push_back(s);
      if (trace_) out.back().path += fmt::format(" [{} @{} unseen]", format_response(p.response), p.at);
    }
  }

  // C13: the tester watched this connection for an answer to this send.
  bool owed_on(std::int32_t send, std::uint32_t conn) const {
    const auto& s = r_.sends[static_cast<std::size_t>(send)];
    if (r_.ops[static_cast<std::size_t>(s.op)].sends.size() != 1) return false;
    if (s.conn != conn) return false;
    return r_.conns[conn].end != Conn::End::server;
  }

  // Applies `produced` one after the other to every state of `states`.
  void match_all(std::vector<State> states, const std::vector<Produced>& produced, std::vector<State>& out) const {
    for (const auto& p : produced) {
      std::vector<State> next;
      for (const auto& s : states) {
        match(s, p, next);
        if (next.size() > options_.held_max) {
          held_over_ = true;
          return;
        }
      }
      states = std::move(next);
      if (states.empty()) return;
    }
    for (auto& s : states) out.push_back(std::move(s));
  }

  // The send a queued waiter came from, and forget it.
  static std::int32_t take_waiter(State& s, std::uint64_t id) {
    for (auto it = s.waiters.begin(); it != s.waiters.end(); ++it) {
      if (it->id == id) {
        const auto send = static_cast<std::int32_t>(it->send);
        s.waiters.erase(it);
        return send;
      }
    }
    return -1;
  }

  // A waiter in a queue, as both models have them, to see who left a queue
  // during a call of the model (names point into the model).
  struct Queued {
    std::uint64_t id;
    std::string_view key, owner;
    std::uint64_t conn;
    std::int64_t deadline;
  };
  template <class M>
  static std::vector<Queued> queues_of(const M& m) {
    std::vector<Queued> out;
    for (const auto& [key, st] : m.keys()) {
      for (const auto& w : st.queue) {
        if constexpr (std::is_same_v<M, Model>) {
          out.push_back(Queued{w.queued_order, key, w.owner, w.connection.value, w.deadline.value});
        } else {
          out.push_back(Queued{w.id, key, w.owner, w.connection.value, w.deadline.value});
        }
      }
    }
    return out;
  }
  static std::vector<Queued> gone(const std::vector<Queued>& before, const std::vector<Queued>& after) {
    std::vector<Queued> left;
    for (const auto& w : before) {
      if (std::none_of(after.begin(), after.end(), [&](const Queued& a) { return a.id == w.id; })) left.push_back(w);
    }
    return left;
  }
  static void remember_new(State& s, const std::vector<Queued>& before, const std::vector<Queued>& after,
                           std::uint32_t send) {
    for (const auto& w : gone(after, before)) s.waiters.push_back(WaiterOf{w.id, send});
  }
  // Ties the deferred answer `p` to the waiter it answers, the first of
  // `left` of its owner, key and connection (a `T` answers a waiter whose
  // deadline has come, an `A` one whose deadline is still ahead: the
  // models' own rule), and forgets that waiter; returns its deadline.
  static std::optional<std::int64_t> tie(State& s, Produced& p, std::uint64_t conn, std::int64_t now,
                                         std::vector<Queued>& left) {
    for (auto it = left.begin(); it != left.end(); ++it) {
      const bool timed_out = it->deadline <= now;
      if (it->owner == p.response.owner && it->key == p.response.key && it->conn == conn &&
          timed_out == (p.response.kind == ResponseKind::timed_out)) {
        const auto deadline = it->deadline;
        p.send = take_waiter(s, it->id);
        left.erase(it);
        return deadline;
      }
    }
    return std::nullopt;
  }

  // ---- simple mode ------------------------------------------------------------------

  // An answer the model gave at t to a request other than the one it was
  // handling (both models).
  Produced deferred_answer(const Outbound& out, std::int64_t t) const {
    Produced p;
    p.response = out.response;
    p.conn = slot_of(out.connection);
    p.at = t;
    p.deferred = true;
    return p;
  }

  // The deferred answers of one call of the model, each tied to the waiter
  // it answers.
  std::vector<Produced> deferred_simple(State& s, const std::vector<Queued>& before, const Outputs& outputs,
                                        std::size_t from, std::int64_t t) const {
    std::vector<Produced> out;
    auto left = gone(before, queues_of(s.simple->model));
    for (std::size_t i = from; i < outputs.size(); ++i) {
      auto p = deferred_answer(outputs[i], t);
      tie(s, p, outputs[i].connection.value, s.simple->model.now().value, left);
      // S10: never read before the request it answers was sent.
      if (p.send >= 0) p.not_before_us = r_.sends[static_cast<std::size_t>(p.send)].us;
      out.push_back(std::move(p));
    }
    return out;
  }

  // Whether anything happens to `s` at t: something due, or a step.
  bool busy(const State& s, std::int64_t t) const {
    if (!r_.cluster) {
      const auto due = s.simple->model.next_due();
      if (due && *due <= model_time(t)) return true;
      if (holds_expired(s, t)) return true;  // noted in expired_at_ (run)
    }
    return any_step(s, t);
  }

  // Whether a sweep at t would change `s`: a key's holder has expired.
  bool holds_expired(const State& s, std::int64_t t) const {
    const auto& keys = s.simple->model.keys();
    return std::any_of(keys.begin(), keys.end(), [&](const auto& entry) { return entry.second.expiry <= model_time(t); });
  }

  // S4, S6: what is due at t: the model's timeouts, then its sweep.
  void fire_due(State n, std::int64_t t, std::vector<State>& out) const {
    const auto due = n.simple->model.next_due();
    if (!due || *due > model_time(t)) {
      out.push_back(std::move(n));  // nothing: the model's clock may stay behind (model_key)
      return;
    }
    const auto old = n.simple;  // `before` points into its model
    const auto before = queues_of(old->model);
    auto& model = own_simple(n);
    Outputs outputs;
    model.advance(model_time(t), outputs);
    auto produced = deferred_simple(n, before, outputs, 0, t);
    match_all({std::move(n)}, produced, out);
  }

  // Whether some step is available to `s` at t (simple_steps and
  // cluster_steps would give something).
  bool any_step(const State& s, std::int64_t t) const {
    for (std::uint32_t i = 0; i < r_.sends.size(); ++i) {
      if (r_.cluster ? available_cluster(s, i, t) : available_simple(s, i, t)) return true;
    }
    if (r_.cluster) {
      for (const auto& [key, st] : s.cluster->model.keys()) {
        if (st.expiry.value <= t) return true;
        for (const auto& w : st.queue) {
          if (w.deadline.value <= t) return true;
        }
      }
      for (const auto& conn : r_.conns) {
        if (conn.end == Conn::End::open || t < close_from(conn)) continue;
        for (const auto& [key, st] : s.cluster->model.keys()) {
          for (const auto& w : st.queue) {
            if (w.connection.value == conn.id) return true;
          }
        }
      }
      return false;
    }
    for (std::uint32_t c = 0; c < r_.conns.size(); ++c) {
      const auto& conn = r_.conns[c];
      if (conn.end == Conn::End::open || has(s.closed, c)) continue;
      const auto [lo, hi] = close_window(conn);
      if (t >= lo && t <= hi) return true;
    }
    return false;
  }

  bool available_simple(const State& s, std::uint32_t i, std::int64_t t) const {
    const auto& send = r_.sends[i];
    if (has(s.done, i) || has(s.closed, send.conn)) return false;
    if (floor_ms(send.us) > t) return false;  // S3
    for (const auto j : r_.conns[send.conn].sends) {  // S4: in the order sent
      if (j == i) break;
      if (!has(s.done, j)) return false;
    }
    return true;
  }

  // S7: when the server drops a closed connection's waiters.
  std::pair<std::int64_t, std::int64_t> close_window(const Conn& c) const {
    if (c.end == Conn::End::tester) return {floor_ms(c.end_us), floor_ms(c.end_us) + 1 + tol_};
    return {floor_ms(c.open_us), floor_ms(c.end_us + 1000)};
  }

  void simple_steps(const State& s, std::int64_t t, std::vector<State>& out) const {
    for (std::uint32_t i = 0; i < r_.sends.size(); ++i) {
      if (!available_simple(s, i, t)) continue;
      const auto& send = r_.sends[i];
      std::vector<Named> names;
      if (!send.malformed && !send.acquire) {
        names = name_token(s, send.token, i);  // S13
      } else {
        names.push_back(Named{s, 0});
      }
      for (auto& [named, model_token] : names) {
        State n = std::move(named);
        n.done |= 1U << i;
        if (trace_) n.path += fmt::format(" {}:send{}", t, i);
        std::string line = send.line;
        if (!send.malformed && !send.acquire) line = fmt::format("R {} {}", send.key, model_token);
        auto& model = own_simple(n);
        const auto before = queues_of(s.simple->model);
        Outputs outputs;
        model.on_line(ConnectionId{r_.conns[send.conn].id}, line, model_time(t), outputs);
        std::vector<Produced> produced;
        std::size_t from = 0;
        if (send.acquire && outputs.empty()) {
          remember_new(n, before, queues_of(model), i);  // queued (simple mode point 4)
        } else if (!outputs.empty()) {
          Produced own;
          own.response = outputs[0].response;
          own.conn = send.conn;
          own.at = t;
          own.send = static_cast<std::int32_t>(i);
          own.echo = send.token;
          own.not_before_us = send.us;
          produced.push_back(std::move(own));
          from = 1;
        }
        auto handed = deferred_simple(n, before, outputs, from, t);
        // S10: nor before the request that caused it was sent.
        for (auto& p : handed) p.not_before_us = std::max(p.not_before_us, send.us);
        produced.insert(produced.end(), handed.begin(), handed.end());
        match_all({std::move(n)}, produced, out);
      }
    }
    // S7, S8: a close takes effect after its connection's requests.
    for (std::uint32_t c = 0; c < r_.conns.size(); ++c) {
      const auto& conn = r_.conns[c];
      if (conn.end == Conn::End::open || has(s.closed, c)) continue;
      const auto [lo, hi] = close_window(conn);
      if (t < lo || t > hi) continue;
      if (std::any_of(conn.sends.begin(), conn.sends.end(), [&](std::uint32_t i) { return !has(s.done, i); })) continue;
      bool may = true;
      for (const auto& [key, st] : s.simple->model.keys()) {
        for (const auto& w : st.queue) {
          if (w.connection.value == conn.id && !may_drop(s, w.queued_order, instant_of(w.deadline), t)) may = false;
        }
      }
      if (!may) continue;
      State n = s;
      n.closed |= 1U << c;
      if (trace_) n.path += fmt::format(" {}:close{}", t, c);
      auto& model = own_simple(n);
      const auto before = queues_of(s.simple->model);
      Outputs ignored;
      model.on_close(ConnectionId{conn.id}, model_time(t), ignored);
      for (const auto& w : gone(before, queues_of(model))) take_waiter(n, w.id);
      out.push_back(std::move(n));
    }
  }

  // S8: a close at `at` drops a waiter only before its `T` was owed.
  bool may_drop(const State& s, std::uint64_t id, std::int64_t deadline, std::int64_t at) const {
    for (const auto& w : s.waiters) {
      if (w.id != id) continue;
      const auto& send = r_.sends[w.send];
      const std::int64_t queued = deadline - send.wait_ms;
      return std::min(queued, read_by(send)) + send.wait_ms + 1 + tol_ > at;
    }
    return true;
  }

  // ---- cluster mode ---------------------------------------------------------------

  // C11: a step on `key` at t while its holder or a waiter is past due.
  void found_late(State& s, const std::string& key, std::int64_t t) const {
    const auto& keys = s.cluster->model.keys();
    const auto found = keys.find(key);
    if (found == keys.end()) return;
    const auto& st = found->second;
    s.lateness_ms = std::max(s.lateness_ms, t - allowance_ - st.expiry.value);
    for (const auto& w : st.queue) s.lateness_ms = std::max(s.lateness_ms, t - allowance_ - w.deadline.value);
  }

  // C8: the first send of operation `op` on connection `conn`, when it has
  // one: an answer to it there is read no earlier.
  std::int64_t op_sent_on(std::int32_t op, std::uint32_t conn) const {
    for (const auto i : r_.ops[static_cast<std::size_t>(op)].sends) {
      if (r_.sends[i].conn == conn) return r_.sends[i].us;
    }
    return 0;
  }

  // Applies one command, ties its outputs to their causes and matches them.
  void apply(State n, const cluster::Command& command, const std::string& key, std::int64_t t, std::int32_t send,
             std::uint64_t echo, std::int64_t hand_off_due, std::vector<State>& out) const {
    if (trace_) n.path += fmt::format(" {}:{}{}", t, "ARETC"[command.index()], send);
    found_late(n, key, t);
    const auto old = n.cluster;  // keeps what `before` looks into
    auto& model = own_cluster(n);
    const auto before = queues_of(old->model);
    const auto outputs = model.apply(command);
    const auto after = queues_of(model);
    auto left = gone(before, after);
    std::vector<Produced> produced;
    std::size_t from = 0;
    const bool request = std::holds_alternative<cluster::Acquire>(command) || std::holds_alternative<cluster::Release>(command);
    const Send* asked = request ? &r_.sends[static_cast<std::size_t>(send)] : nullptr;
    if (request) {
      if (!outputs.empty() && slot_of(outputs[0].connection) == asked->conn) {
        Produced own;
        own.response = outputs[0].response;
        own.conn = asked->conn;
        own.at = t;
        own.send = send;
        own.echo = echo;
        own.not_before_us = asked->us;
        produced.push_back(std::move(own));
        from = 1;
      }
      if (std::holds_alternative<cluster::Acquire>(command) && outputs.empty()) {
        remember_new(n, before, after, static_cast<std::uint32_t>(send));
      }
    }
    for (std::size_t i = from; i < outputs.size(); ++i) {
      auto p = deferred_answer(outputs[i], t);
      p.due_ms = hand_off_due;  // C12: a hand-off's cause
      const auto deadline = tie(n, p, outputs[i].connection.value, model.clock().value, left);
      if (deadline && p.response.kind == ResponseKind::timed_out) p.due_ms = *deadline;  // C12: a T's, its deadline
      // C8: never before the send it answers (on this connection), nor
      // before the request that caused it.
      if (p.send >= 0) p.not_before_us = op_sent_on(r_.sends[static_cast<std::size_t>(p.send)].op, p.conn);
      if (request) p.not_before_us = std::max(p.not_before_us, asked->us);
      produced.push_back(std::move(p));
    }
    for (const auto& w : left) take_waiter(n, w.id);  // dropped by a Close
    match_all({std::move(n)}, produced, out);
  }

  bool available_cluster(const State& s, std::uint32_t i, std::int64_t t) const {
    const auto& send = r_.sends[i];
    if (has(s.done, i) || send.errored || send.malformed) return false;  // C3
    if (floor_ms(send.us) > t) return false;                              // C2
    // C5: operations sent once, on one connection, in the order sent.
    if (r_.ops[static_cast<std::size_t>(send.op)].sends.size() == 1) {
      for (const auto j : r_.conns[send.conn].sends) {
        if (j == i) break;
        const auto& earlier = r_.sends[j];
        if (earlier.errored || earlier.malformed || r_.ops[static_cast<std::size_t>(earlier.op)].sends.size() != 1) {
          continue;
        }
        if (!has(s.done, j)) return false;
      }
    }
    return true;
  }

  // C16: a `B` answer given at once to send `i`.
  void answer_busy(State n, std::uint32_t i, std::int64_t t, std::vector<State>& out) const {
    const auto& send = r_.sends[i];
    found_late(n, send.key, t);
    Produced own;
    own.response = Response::busy(send.owner, send.key);
    own.conn = send.conn;
    own.at = t;
    own.send = static_cast<std::int32_t>(i);
    own.not_before_us = send.us;
    match_all({std::move(n)}, {own}, out);
  }

  void cluster_steps(const State& s, std::int64_t t, std::vector<State>& out) const {
    const TimeMs now{t};
    // C2, C4: a send applied; the first of its operation applies it, a
    // later one is a retry the model answers from the session.
    for (std::uint32_t i = 0; i < r_.sends.size(); ++i) {
      if (!available_cluster(s, i, t)) continue;
      const auto& send = r_.sends[i];
      const auto op = static_cast<std::size_t>(send.op);
      const auto conn = ConnectionId{r_.conns[send.conn].id};
      auto session = session_of(send);
      if (send.acquire) {
        State n = s;
        n.done |= 1U << i;
        if (n.outcome[op] == State::busy) {
          answer_busy(std::move(n), i, t, out);  // C16: a retry of an acquire answered B
          continue;
        }
        const bool first = n.outcome[op] == State::not_applied;
        n.outcome[op] = State::applied;
        // C16 (a relaxation): a waiting acquire that finds its key held may
        // be answered B, whatever the queue's size.
        if (first && send.wait_ms > 0 && n.cluster->model.keys().contains(send.key)) {
          State b = n;
          b.outcome[op] = State::busy;
          answer_busy(std::move(b), i, t, out);
        }
        apply(std::move(n),
              cluster::Acquire{session, conn, send.key, send.owner, DurationMs{send.lease_ms}, DurationMs{send.wait_ms},
                               now},
              send.key, t, static_cast<std::int32_t>(i), 0, t, out);
      } else {
        for (auto& [named, model_token] : name_token(s, send.token, i)) {
          State n = std::move(named);
          n.done |= 1U << i;
          n.outcome[op] = State::applied;
          // C12: a release's hand-off is due at the release's own instant.
          apply(std::move(n), cluster::Release{session, conn, send.key, Token{model_token}, now}, send.key, t,
                static_cast<std::int32_t>(i), send.token, t, out);
        }
      }
    }
    // C6: the Expire of a holder whose lease has run out on the table's
    // clock; the Timeout of a waiter whose deadline has come.
    for (const auto& [key, st] : s.cluster->model.keys()) {
      if (st.expiry.value <= t) {
        State n = s;
        // C10: late past its due instant and the allowance.
        n.lateness_ms = std::max(n.lateness_ms, t - allowance_ - st.expiry.value);
        apply(std::move(n), cluster::Expire{key, st.token, now}, key, t, -1, 0, st.expiry.value, out);
      }
      for (const auto& w : st.queue) {
        if (w.deadline.value > t) continue;
        State n = s;
        n.lateness_ms = std::max(n.lateness_ms, t - allowance_ - w.deadline.value);  // C10
        apply(std::move(n), cluster::Timeout{key, cluster::WaiterId{w.id}, now}, key, t, -1, 0, w.deadline.value, out);
      }
    }
    // C7: a connection that ended may have its waiters dropped.
    for (std::uint32_t c = 0; c < r_.conns.size(); ++c) {
      const auto& conn = r_.conns[c];
      if (conn.end == Conn::End::open || t < close_from(conn)) continue;
      bool has_waiter = false;
      for (const auto& [key, st] : s.cluster->model.keys()) {
        for (const auto& w : st.queue) has_waiter = has_waiter || w.connection.value == conn.id;
      }
      if (!has_waiter) continue;
      apply(s, cluster::Close{ConnectionId{conn.id}, now}, "", t, -1, 0, t, out);
    }
  }

  // C7: the first instant a connection's Close may have: any once it
  // opened, whoever ended it (a leader change may have dropped its waiters
  // while the connection stayed open).
  std::int64_t close_from(const Conn& conn) const { return floor_ms(conn.open_us); }

  static cluster::Session session_of(const Send& send) {
    // The fields after the request's own, when there are two more.
    std::vector<std::string> f;
    std::string cur;
    for (const char ch : send.line) {
      if (ch == ' ') {
        f.push_back(cur);
        cur.clear();
      } else {
        cur += ch;
      }
    }
    f.push_back(cur);
    const std::size_t own = send.acquire ? 5 : 3;
    if (f.size() != own + 2) return {};
    return cluster::Session{f[own], std::stoull(f[own + 1])};
  }

  // ---- life and the end ---------------------------------------------------------------

  // After instant t: a state dies when an observation can no longer be
  // caused (S14, C9), or (simple) a request or a close passed its latest
  // instant (S5, S7); with a maximum lateness, past it (C14).
  bool alive(const State& s, std::int64_t t) const {
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
  bool final(const State& s, std::int64_t& late) const {
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

  const Reading& r_;
  ReferenceOptions options_;
  bool trace_ = options_.trace;
  std::int64_t tol_ = 0, allowance_ = 0, hw_ = -1;
  std::int64_t horizon_ = 0, phase_ = 0;
  std::int64_t bound_ = -1;  // cluster: the maximum lateness of this search (C14), -1 none
  mutable bool pruned_late_ = false;  // this search pruned a state past bound_
  std::vector<std::int64_t> expired_at_;  // simple: the instants at which a state held an expired key (run)
  std::uint64_t states_ = 0;
  mutable bool held_over_ = false;  // a layer or a step's readings passed held_max
  // Either budget ran out: the verdict is unknown.
  bool spent() const { return states_ > options_.states_max || held_over_; }
  std::int64_t best_lateness_ = none_ms;
  std::string furthest_;
};

}  // namespace

namespace {

// The key a request line or a response line names, if any.
std::optional<std::string> key_named(const Event& e) {
  if (e.kind == EventKind::recv) {
    const auto response = parse_response(e.line);
    if (!response || response->kind == ResponseKind::error) return std::nullopt;
    return response->key;
  }
  const auto space = e.line.find(' ');
  if (space == std::string::npos) return std::nullopt;
  const auto next = e.line.find(' ', space + 1);
  return e.line.substr(space + 1, next == std::string::npos ? std::string::npos : next - space - 1);
}

// ReferenceOptions::per_key: the part of the history about `key`: every
// event of a connection's life, its requests that parse, the responses
// that name it.
History part_of(const History& history, const std::string& key) {
  History part;
  part.header = history.header;
  for (const auto& e : history.events) {
    if (e.kind == EventKind::send || e.kind == EventKind::recv) {
      if (key_named(e) != key) continue;
      if (e.kind == EventKind::send) {
        const bool cluster = history.header.mode == Mode::cluster;
        const bool parses = cluster ? std::holds_alternative<SessionRequest>(parse_session_request(e.line, history.header.limits))
                                    : std::holds_alternative<Request>(parse_request(e.line, history.header.limits));
        if (!parses) continue;
      }
    }
    part.events.push_back(e);
  }
  return part;
}

}  // namespace

std::optional<std::string> reference_refusal(const History& history) {
  std::set<std::uint32_t> conns;
  std::set<std::string> keys;
  std::size_t requests = 0, responses = 0;
  for (const auto& e : history.events) {
    if (e.kind == EventKind::down || e.kind == EventKind::up) {
      return std::string("the reference reads no restart of the target (down, up)");
    }
    if (e.kind == EventKind::connect || e.kind == EventKind::send || e.kind == EventKind::recv) conns.insert(e.conn);
    if (e.kind == EventKind::recv) ++responses;
    if (e.kind != EventKind::send) continue;
    ++requests;
    if (e.line.size() > history.header.limits.max_line_bytes) {
      return std::string("the reference reads no line over max_line_bytes");
    }
    if (auto key = key_named(e)) keys.insert(std::move(*key));
  }
  if (conns.size() > reference_connections_max) {
    return fmt::format("the reference reads at most {} connections, the history has {}", reference_connections_max,
                       conns.size());
  }
  if (keys.size() > reference_keys_max) {
    return fmt::format("the reference reads at most {} keys, the history has {}", reference_keys_max, keys.size());
  }
  if (requests > reference_requests_max) {
    return fmt::format("the reference reads at most {} requests, the history has {}", reference_requests_max,
                       requests);
  }
  if (responses > reference_responses_max) {
    return fmt::format("the reference reads at most {} responses, the history has {}", reference_responses_max,
                       responses);
  }
  if (!history.events.empty()) {
    const auto span = floor_ms(history.events.back().t_us) - floor_ms(history.events.front().t_us);
    if (span > reference_span_ms_max) {
      return fmt::format("the reference reads a history of at most {} ms, this one lasts {} ms",
                         reference_span_ms_max, span);
    }
  }
  return std::nullopt;
}

// C3: every way the `E`s of the connections may answer their sends. On a
// connection, the `E`s answer sends in order, each `E` a send made before
// it was read, one send each; a send an `E` answers was never applied. The
// readings are every such choice on every connection (their product); a
// connection whose `E`s no choice places gives one violation. Past
// `readings_max` readings: nullopt (the reference's verdict is unknown).
constexpr std::size_t readings_max = 256;

std::optional<std::vector<Reading>> error_readings(const Reading& base) {
  std::vector<Reading> readings{base};
  if (!base.cluster) return readings;
  for (const auto& c : base.conns) {
    std::vector<std::uint32_t> errors;
    for (const auto o : c.seen) {
      if (base.seen[o].response && base.seen[o].response->kind == ResponseKind::error) errors.push_back(o);
    }
    if (errors.empty()) continue;
    // Every increasing choice of sends for the `E`s, in order.
    std::vector<std::vector<std::uint32_t>> choices;
    std::vector<std::uint32_t> chosen;
    const std::function<void(std::size_t, std::size_t)> place = [&](std::size_t e, std::size_t from) {
      if (e == errors.size()) {
        choices.push_back(chosen);
        return;
      }
      for (std::size_t k = from; k < c.sends.size(); ++k) {
        if (base.sends[c.sends[k]].us > base.seen[errors[e]].read_us) break;
        chosen.push_back(c.sends[k]);
        place(e + 1, k + 1);
        chosen.pop_back();
      }
    };
    place(0, 0);
    if (choices.empty()) {
      Reading r = base;
      r.violation = fmt::format("an E on connection {} answers no request (rule C3)", c.id);
      return std::vector<Reading>{r};
    }
    if (readings.size() * choices.size() > readings_max) return std::nullopt;
    std::vector<Reading> next;
    for (const auto& r : readings) {
      for (const auto& choice : choices) {
        Reading made = r;
        for (const auto send : choice) made.sends[send].errored = true;
        for (const auto o : errors) made.errors_taken.push_back(o);
        next.push_back(std::move(made));
      }
    }
    readings = std::move(next);
  }
  return readings;
}

ReferenceResult check_reference(const History& history, const ReferenceOptions& options) {
  if (!options.per_key) {
    // C3: an explanation may read the `E`s any way they may answer; the
    // verdict is the best of the readings (one conforms, or the least
    // lateness any has).
    const auto readings = error_readings(read(history));
    if (!readings) {
      ReferenceResult unknown;
      unknown.reason = fmt::format("more than {} ways to read the `E`s (rule C3)", readings_max);
      return unknown;
    }
    ReferenceResult best;
    for (const auto& reading : *readings) {
      Search search(reading, options);
      auto one = search.run();
      const auto states = best.states + one.states;
      const bool first = &reading == &readings->front();
      using V = ReferenceResult::Verdict;
      const auto rank = [](V v) { return v == V::conforms ? 2 : v == V::unknown ? 1 : 0; };
      const auto least = best.least_lateness_ms < 0 ? one.least_lateness_ms
                         : one.least_lateness_ms < 0 ? best.least_lateness_ms
                                                     : std::min(best.least_lateness_ms, one.least_lateness_ms);
      if (first || rank(one.verdict) > rank(best.verdict)) best = std::move(one);
      best.states = states;
      best.least_lateness_ms = least;
    }
    return best;
  }
  std::vector<std::string> keys;
  for (const auto& e : history.events) {
    if (e.kind != EventKind::send) continue;
    if (auto key = key_named(e); key && std::find(keys.begin(), keys.end(), *key) == keys.end()) keys.push_back(*key);
  }
  ReferenceResult all;
  all.verdict = ReferenceResult::Verdict::conforms;
  all.least_lateness_ms = history.header.mode == Mode::cluster ? 0 : -1;
  ReferenceOptions whole = options;
  whole.per_key = false;
  for (const auto& key : keys) {
    const auto one = check_reference(part_of(history, key), whole);
    all.states += one.states;
    if (one.verdict != ReferenceResult::Verdict::conforms && all.verdict == ReferenceResult::Verdict::conforms) {
      all.verdict = one.verdict;
      all.reason = fmt::format("key `{}`: {}", key, one.reason);
    }
    if (one.least_lateness_ms < 0) {
      all.least_lateness_ms = -1;
    } else if (all.least_lateness_ms >= 0) {
      all.least_lateness_ms = std::max(all.least_lateness_ms, one.least_lateness_ms);
    }
  }
  return all;
}

}  // namespace lockstep::history
