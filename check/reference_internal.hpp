// The reference checker's internals (reference.cpp): the history as it
// reads it, its states, and its search, declared here so that the search
// may be defined by part, each beside the rules it cites: reference_search.cpp
// the search over instants and its end, reference_match.cpp tokens and
// the matching of answers to observations, reference_simple.cpp simple
// mode's steps, reference_cluster.cpp a cluster's. Only those files include
// it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "check/reference.hpp"
#include "impl/cluster/sessions.hpp"
#include "impl/protocol.hpp"
#include "model/cluster_model.hpp"
#include "model/model.hpp"

namespace lockstep::history::reference {

inline constexpr std::int64_t none_ms = INT64_MAX / 4;

inline std::int64_t floor_ms(std::int64_t us) { return us >= 0 ? us / 1000 : -((-us + 999) / 1000); }

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

// The history read (reference.cpp).
Reading read(const History& history);

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
  // S13: history tokens a release named as no grant's, with how many
  // tokens the model had issued then: bound later only to a token issued
  // after (a release may name a token not issued yet, not one it passed).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> unissued;
  // Cluster, per op: what it came to, for its retries (C4, C16).
  enum Outcome : std::uint8_t { not_applied, applied, busy };
  std::array<Outcome, reference_requests_max> outcome{};
  std::int64_t lateness_ms = 0;  // cluster (C10..C13)
  // Cluster: the latest first send (µs) of the operations applied so far
  // (C18).
  std::int64_t latest_sent_us = INT64_MIN;
  // Cluster, per op: latest_sent_us when its outcome was decided (the
  // command that answered it), for its retries' answers (C18).
  std::array<std::int64_t, reference_requests_max> decided_sent_us{};
  std::string path;              // what it did, kept for LOCKSTEP_REFERENCE_TRACE only
};

inline bool has(std::uint64_t bits, std::size_t i) { return ((bits >> i) & 1U) != 0; }

inline Model& own_simple(State& s) {
  auto box = std::make_shared<SimpleBox>(SimpleBox{s.simple->model, {}, 0});
  Model& model = box->model;
  s.simple = std::move(box);
  return model;
}
inline model::ClusterModel& own_cluster(State& s) {
  auto box = std::make_shared<ClusterBox>(ClusterBox{s.cluster->model, {}, 0});
  auto& model = box->model;
  s.cluster = std::move(box);
  return model;
}

// ---- the search ---------------------------------------------------------------

class Search {
 public:
  Search(const Reading& r, const ReferenceOptions& options);
  ReferenceResult run();

 private:
  void search_by_lateness();  // cluster mode's searches (C14)
  void search_by_phase();     // simple mode's (S6)
  State initial() const;

  // S6: the model sweeps at multiples of sweep_ms of its own clock; instant
  // t of the history is that clock shifted so that the sweeps fall at
  // first_ms + phase + k * sweep_ms.
  TimeMs model_time(std::int64_t t) const {
    return TimeMs{t - r_.first_ms + r_.header.limits.sweep_ms.value - phase_};
  }
  std::int64_t instant_of(TimeMs model) const {
    return model.value + r_.first_ms - r_.header.limits.sweep_ms.value + phase_;
  }

  void explore(State start, std::int64_t from);

  // ---- tokens (S13, C15) ----------------------------------------------------------

  static bool bind(State& s, std::uint64_t m, std::uint64_t h);

  // S13, C15: the model tokens a release carrying the history's token `h`
  // may name: the grant bound to it; or else any grant not seen (which it
  // then binds), or a token no grant carried.
  struct Named {
    State state;
    std::uint64_t model_token;
  };
  std::vector<Named> name_token(const State& s, std::uint64_t h, std::uint32_t send) const;

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
    // C18: the latest first send (µs) of the operations applied up to the
    // command that produced it (for a retry answered from the session, the
    // command that decided its operation's outcome).
    std::int64_t after_sent_us = INT64_MIN;
  };

  std::uint32_t slot_of(ConnectionId id) const;
  static bool same(State& s, const Produced& p, const Response& o);

  std::int64_t read_by(const Send& send) const { return floor_ms(send.us) + (hw_ >= 0 ? hw_ + 1 : 0); }

  bool may_be_unseen_simple(const Produced& p) const;
  bool of_key(const Seen& o, const Produced& p) const;
  void explain(State& n, std::uint32_t o, const Produced& p) const;
  void match(const State& s, const Produced& p, std::vector<State>& out) const;
  bool owed_on(std::int32_t send, std::uint32_t conn) const;
  void match_all(std::vector<State> states, const std::vector<Produced>& produced, std::vector<State>& out) const;
  static std::int32_t take_waiter(State& s, std::uint64_t id);

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
  static std::vector<Queued> gone(const std::vector<Queued>& before, const std::vector<Queued>& after);
  static void remember_new(State& s, const std::vector<Queued>& before, const std::vector<Queued>& after,
                           std::uint32_t send);
  static std::optional<std::int64_t> tie(State& s, Produced& p, std::uint64_t conn, std::int64_t now,
                                         std::vector<Queued>& left);

  // ---- simple mode ------------------------------------------------------------------

  Produced deferred_answer(const Outbound& out, std::int64_t t) const;
  std::vector<Produced> deferred_simple(State& s, const std::vector<Queued>& before, const Outputs& outputs,
                                        std::size_t from, std::int64_t t) const;

  bool busy(const State& s, std::int64_t t) const;
  bool holds_expired(const State& s, std::int64_t t) const;
  void fire_due(State n, std::int64_t t, std::vector<State>& out) const;
  bool any_step(const State& s, std::int64_t t) const;
  bool available_simple(const State& s, std::uint32_t i, std::int64_t t) const;
  std::pair<std::int64_t, std::int64_t> close_window(const Conn& c) const;
  void simple_steps(const State& s, std::int64_t t, std::vector<State>& out) const;
  bool may_drop(const State& s, std::uint64_t id, std::int64_t deadline, std::int64_t at) const;

  // ---- cluster mode ---------------------------------------------------------------

  void found_late(State& s, const std::string& key, std::int64_t t) const;
  std::int64_t op_sent_on(std::int32_t op, std::uint32_t conn) const;
  void apply(State n, const cluster::Command& command, const std::string& key, std::int64_t t, std::int32_t send,
             std::uint64_t echo, std::int64_t hand_off_due, std::vector<State>& out, bool replay = false) const;

  bool available_cluster(const State& s, std::uint32_t i, std::int64_t t) const;
  bool sent_once(std::int32_t op) const;
  void answer_busy(State n, std::uint32_t i, std::int64_t t, std::vector<State>& out, bool replay = false) const;
  std::int64_t first_sent_us(std::int32_t op) const;
  void remember_decided(State& n, std::size_t op) const;
  void forget_decided(State& n, std::size_t op) const;
  bool retries_done(const State& n, std::size_t op) const;
  void cluster_steps(const State& s, std::int64_t t, std::vector<State>& out) const;

  // C7: the first instant a connection's Close may have: any once it
  // opened, whoever ended it (a leader change may have dropped its waiters
  // while the connection stayed open).
  std::int64_t close_from(const Conn& conn) const { return floor_ms(conn.open_us); }

  static cluster::Session session_of(const Send& send);

  // ---- life and the end ---------------------------------------------------------------

  bool alive(const State& s, std::int64_t t) const;
  bool final(const State& s, std::int64_t& late) const;

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

}  // namespace lockstep::history::reference
