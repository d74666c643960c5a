// One key of one incarnation of the target, as a search problem: is there
// an assignment of server instants to this key's requests (within their
// windows, in order per connection), of sweep instants and of causes for
// deferred answers (within the tolerance) under which the contract gives
// exactly the responses observed for this key? DESIGN.md beside this file
// gives the algorithm and the argument that it never reports a violation
// that has an explanation.
//
// Times of observations are microseconds on the tester's clock; server
// instants are whole milliseconds, instant n standing for [n ms, n+1 ms).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "impl/limits.hpp"
#include "impl/protocol.hpp"
#include "model/history/phase_set.hpp"
#include "model/history/search.hpp"

namespace lockstep::history {

inline constexpr std::int64_t unbounded_ms = std::numeric_limits<std::int64_t>::max() / 4;

struct KeyRequest {
  std::uint32_t conn = 0;  // slot in KeyInput::conns
  std::int64_t sent_us = 0;
  std::int64_t latest_ms = unbounded_ms;  // handled no later (from answered later requests of its connection)
  bool acquire = true;
  std::uint32_t owner = 0;  // interned (acquire)
  std::int64_t lease_ms = 0, wait_ms = 0;
  std::uint64_t token = 0;  // release
  std::string line;
};

struct KeyObservation {
  std::uint32_t conn = 0;
  std::int64_t received_us = 0;
  ResponseKind kind = ResponseKind::error;
  std::uint32_t owner = 0;  // A, T, B
  std::uint64_t token = 0;  // A, R, N
  std::string line;
};

struct KeyConnection {
  std::uint32_t id = 0;                 // the history's connection number
  std::vector<std::uint32_t> requests;  // indices into KeyInput::requests, in the order sent
  std::vector<std::uint32_t> observations;  // indices into KeyInput::observations, by arrival
  std::int64_t end_us = 0;              // nothing is observed on it after this
  bool closes = false;                  // its waiters are dropped some time after end_us
  // The history stops while it is open (or a prefix was cut from it): an
  // immediate answer may then still be on its way, however long ago its
  // request was handled.
  bool cut = false;
};

// What may couple keys, answered by the checker from the whole history:
// whether a global limit may have been reached at an instant (so that a `B`
// for a new key or a new waiter has a cause), and whether a token was seen
// in some grant (so that it cannot be a grant whose answer was lost).
struct KeyOracles {
  std::function<bool(std::int64_t instant_ms)> keys_may_be_full;
  std::function<bool(std::int64_t instant_ms)> waiters_may_be_full;
  std::function<bool(std::uint64_t token)> token_was_seen;
};

struct KeyInput {
  std::string key;
  Limits limits;
  std::int64_t tolerance_ms = 0;
  std::vector<KeyRequest> requests;          // by send time
  std::vector<KeyObservation> observations;  // by arrival time
  std::vector<KeyConnection> conns;
  std::vector<std::string> owners;           // interned names
  std::int64_t horizon_ms = 0;               // after the last observation of the incarnation
  // Where the server's millisecond grid seems to start within the tester's
  // milliseconds (0..999 us), estimated from its timeouts. Only the order in
  // which instants are tried depends on it, never what is accepted.
  std::int64_t grid_offset_us = 0;
};

class KeyProblem {
 public:
  struct Holder {
    std::int32_t request = -1;  // the grant's request; -1 when none
    std::uint32_t conn = 0, owner = 0;
    std::uint64_t token = 0;  // 0 when its answer was lost: unknown
    // The grant's instant is known to lie in [granted_ms, granted_late_ms]:
    // an immediate grant may have been at any instant of its request's
    // window, and later answers narrow it only when they depend on it.
    std::int64_t granted_ms = 0, granted_late_ms = 0, lease_ms = 0;
    std::int64_t expiry_ms() const { return granted_ms + lease_ms; }
    std::int64_t expiry_late_ms() const { return granted_late_ms + lease_ms; }
  };
  struct Waiter {
    std::uint32_t request = 0;
    std::int64_t queued_ms = 0, deadline_ms = 0;
    // The request's window: a waiter whose window reaches back before the
    // end of an earlier waiter's may in truth have been queued first.
    std::int64_t early_ms = 0, late_ms = 0;
  };
  // One point of an explanation: what the server did at `instant_ms`.
  struct Step {
    std::int64_t instant_ms = 0;
    std::int32_t request = -1;      // the request handled, or -1
    std::int32_t observation = -1;  // the response it explains, or -1
    char what = '?';                // 'h' handled, 'a' answer, 't' timeout, 's' sweep, 'c' close
  };
  struct StepNode {
    Step step;
    std::shared_ptr<const StepNode> previous;
  };
  struct State {
    std::int64_t now_ms = 0;
    bool sweep_passed = false;  // at now_ms: the sweep's turn is over, requests may be handled
    bool held = false;
    Holder holder;
    std::vector<Waiter> queue;
    std::uint64_t last_token = 0;
    std::vector<std::uint32_t> next_request;  // per connection: requests handled so far
    std::vector<bool> closed;                 // per connection: its close was handled
    std::uint32_t observed_mark = 0;          // observations below are all explained
    std::vector<std::uint32_t> observed_extra;  // explained ones above the mark, sorted
    PhaseSet phases;
    std::uint32_t explained = 0;
    // The last request handled changed nothing but what is explained (an
    // `N`, a waitless `T`, a `B`): handling it later cannot help.
    bool inert = false;
    // The explanation so far, newest first, shared between states (not part
    // of the fingerprint: two paths to one state explain equally well).
    std::shared_ptr<const StepNode> steps;
  };

  KeyProblem(const KeyInput& input, KeyOracles oracles, PhaseSet phases);

  State initial() const;
  bool is_final(const State& state) const;
  void successors(const State& state, std::vector<State>& out) const;
  Fingerprint fingerprint(const State& state) const;
  std::uint64_t progress(const State& state) const { return state.explained; }

  // The steps of an explanation, oldest first.
  static std::vector<Step> steps_of(const State& state);

 private:
  using Sink = std::function<void(State&&)>;
  std::int64_t earliest_unexplained_ms(const State& state) const;
  bool explained(const State& state, std::uint32_t observation) const;
  void explain(State& state, std::uint32_t observation) const;
  bool may_be_unseen(std::uint32_t conn, std::int64_t cause_ms, bool deferred = true) const;

  void advance(State state, std::int64_t to_ms, bool then_requests, const Sink& sink) const;
  bool forbid_sweeps_until(State& state, std::int64_t last_ms) const;
  void answer(State state, std::uint32_t conn, ResponseKind kind, std::uint32_t owner, std::uint64_t token,
              std::int64_t cause_ms, bool deferred, std::int32_t request, const Sink& sink) const;
  // Whether a grant seen at `received_us` fits the holder's grant interval;
  // narrows it to the instants that could have caused that arrival.
  bool fit_grant(State& state, std::int64_t received_us, bool deferred) const;
  void grant(State state, std::uint32_t request, std::int64_t at_ms, bool deferred, const Sink& sink,
             std::int64_t late_ms = -1) const;
  // Calls `then(state, expired)` for each answer to "is the holder expired
  // at `at_ms`?" that its grant interval allows, narrowing the interval.
  void by_expiry(State state, std::int64_t at_ms, const std::function<void(State&&, bool)>& then) const;
  void handle(State state, std::uint32_t conn, std::int64_t at_ms, const Sink& sink) const;
  void handle_acquire(State state, std::uint32_t request, std::int64_t at_ms, const Sink& sink) const;
  void handle_release(State state, std::uint32_t request, std::int64_t at_ms, const Sink& sink) const;
  void release_holder(State state, std::int64_t at_ms, std::int32_t request, const Sink& sink) const;
  void release_valid(State state, std::int64_t at_ms, std::int32_t request, const Sink& sink) const;
  void handle_held(State state, std::uint32_t request, std::int64_t at_ms, const Sink& sink) const;
  bool waiter_can_be_answered(const State& state, const Waiter& waiter) const;
  void sweep_moves(const State& state, const Sink& sink) const;
  // Hands the key to a waiter that may be at the head of the queue (FIFO up
  // to the order of waiters queued at overlapping windows), one branch each.
  void hand_off(State state, std::int64_t at_ms, std::int64_t late_ms, const Sink& sink) const;
  void close_moves(const State& state, const Sink& sink) const;

  const KeyInput& in_;
  std::vector<std::uint64_t> grant_tokens_;  // of the grants seen on this key, sorted
  KeyOracles oracles_;
  PhaseSet phases_;
};

}  // namespace lockstep::history
