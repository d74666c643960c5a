// The cluster's lock table against its reference model, command by command
// (RapidCheck rc::state). Random committed commands over small alphabets and
// tight limits (acquires over a few keys, owners and connections; releases
// with the holder's, an old or an unknown token; Expire and Timeout with
// valid and invalid tokens and waiter ids, as a late or repeated proposal
// would carry; closes; stamps that mostly move forward and sometimes lag, as
// a new leader's may) are applied to LockMachine and to model::ClusterModel.
// Requests carry sessions from three string client ids under a tight window
// (3) and client table (2): mostly the client's next sequence number, often a
// retry of a recent one (the same request again: answered from the session,
// moved, or refused as stale once out of the window or evicted), a recent
// number reused for another request (refused), sometimes a jump ahead (a
// pipelining client), sometimes none at all (anonymous). Every command
// carries the epoch of the leadership that proposed it: mostly the newest,
// sometimes a newer one (a leader change, which detaches the waiters queued
// before it), sometimes an older one (a deposed leader's entry committed
// late).
// After every command both must have produced the same responses, in the
// same order, and hold the same table (the canonical text) and next token;
// the machine's invariants must hold. A failure shrinks to the shortest
// sequence that shows the difference.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <array>
#include <fmt/format.h>

#include "impl/cluster/lock_machine.hpp"
#include "model/cluster_model.hpp"
#include "tests/property/alphabet.hpp"

namespace lockstep::testing {
namespace {

// Tight session limits, so that windows slide and clients are evicted.
cluster::SessionLimits small_sessions() { return cluster::SessionLimits{2, 3}; }
constexpr int client_count = 3;
std::string client_name(int index) { return std::string("client-") + static_cast<char>('a' + index); }

// The rc model: the reference model, each client's next sequence number,
// and the connection of each slot (a closed slot opens a fresh id).
struct State {
  model::ClusterModel model{small_limits(), Token{1}, small_sessions()};
  std::array<std::uint64_t, client_count> next_sequence{1, 1, 1};
  // The requests sent with a session, the latest few, for retries.
  std::vector<cluster::Command> sent;
  std::array<std::uint64_t, connection_count> generation{};
  ConnectionId connection(int slot) const {
    return ConnectionId{static_cast<std::uint64_t>(slot + 1) * 1'000'000 + generation[static_cast<std::size_t>(slot)]};
  }
};

// A request's session: the client's next number, a retry of a recent one
// (or of one long gone), a jump ahead, or none.
rc::Gen<cluster::Session> gen_session(const State& state) {
  const int client = *rc::gen::inRange(0, client_count);
  const std::uint64_t next = state.next_sequence[static_cast<std::size_t>(client)];
  const auto retry = next > 1 ? *rc::gen::inRange<std::uint64_t>(next > 6 ? next - 6 : 1, next) : next;
  const std::uint64_t sequence = *rc::gen::weightedElement<std::uint64_t>({{5, next}, {3, retry}, {1, next + 1}});
  return rc::gen::weightedElement<cluster::Session>({{9, cluster::Session{client_name(client), sequence}},
                                                     {1, cluster::Session{}}});
}

struct System {
  cluster::LockMachine machine;
  raft::Index index = 0;
};

std::string show_outputs(const Outputs& outputs) {
  std::string text;
  for (const auto& o : outputs) text += fmt::format("[c{} {}] ", o.connection.value, format_response(o.response));
  return text.empty() ? "(nothing)" : text;
}

// A stamp relative to the table's clock: mostly later or the same, sometimes
// earlier (the table then acts at its own clock).
rc::Gen<std::int64_t> gen_stamp_step() {
  return rc::gen::weightedOneOf<std::int64_t>(
      {{9, gen_time_step()}, {1, rc::gen::inRange<std::int64_t>(-10, 0)}});
}
TimeMs stamp(const State& state, std::int64_t step) {
  return TimeMs{std::max<std::int64_t>(0, state.model.clock().value + step)};
}

// The proposer's epoch: mostly the newest, sometimes the next (a leader
// change), sometimes the one before (a deposed leader's entry).
std::uint64_t gen_epoch(const State& state) {
  const auto newest = state.model.epoch();
  return *rc::gen::weightedElement<std::uint64_t>(
      {{8, newest}, {1, newest + 1}, {1, newest > 0 ? newest - 1 : 0}});
}

// Tokens a command may carry: every holder's, the last and next few issued,
// and small ones long gone.
rc::Gen<std::uint64_t> gen_token(const State& state) {
  std::vector<std::uint64_t> tokens{1, 2, 3};
  for (const auto& [key, k] : state.model.keys()) tokens.push_back(k.token.value);
  const auto next = state.model.next_token().value;
  if (next > 1) tokens.push_back(next - 1);
  tokens.push_back(next);
  tokens.push_back(next + 5);
  return rc::gen::elementOf(tokens);
}

// Waiter ids a Timeout may name: every queued waiter's, and a few that name
// nobody (granted, timed out, dropped or never issued).
rc::Gen<std::uint64_t> gen_waiter(const State& state) {
  std::vector<std::uint64_t> ids{1, 2, 3, 40};
  for (const auto& [key, k] : state.model.keys()) {
    for (const auto& w : k.queue) ids.push_back(w.id);
  }
  return rc::gen::elementOf(ids);
}

// A key with a holder (a valid Expire or Timeout names one), or any key.
rc::Gen<std::string> gen_key_name(const State& state) {
  std::vector<std::string> keys;
  for (const auto& [key, k] : state.model.keys()) keys.push_back(key);
  auto any = rc::gen::map(gen_key(), [](int key) { return key_name(key); });
  if (keys.empty()) return any;
  return rc::gen::oneOf(rc::gen::elementOf(keys), any);
}

using Step = rc::state::Command<State, System>;

// One committed command: applied to a copy of the model and to the machine.
struct Apply : Step {
  cluster::Command command;
  int closed_slot = -1;

  void apply(State& state) const override {
    state.model.apply(command);
    const cluster::Session* session = nullptr;
    if (const auto* a = std::get_if<cluster::Acquire>(&command)) session = &a->session;
    if (const auto* r = std::get_if<cluster::Release>(&command)) session = &r->session;
    if (session != nullptr && !session->anonymous()) {
      state.sent.push_back(command);
      if (state.sent.size() > 8) state.sent.erase(state.sent.begin());
      for (int client = 0; client < client_count; ++client) {
        auto& next = state.next_sequence[static_cast<std::size_t>(client)];
        if (session->client == client_name(client)) next = std::max(next, session->sequence + 1);
      }
    }
    if (closed_slot >= 0) ++state.generation[static_cast<std::size_t>(closed_slot)];
  }

  void run(const State& state, System& system) const override {
    model::ClusterModel expected = state.model;
    const Outputs want = expected.apply(command);
    const cluster::Applied got = system.machine.apply_command(command, ++system.index);
    system.machine.check_invariants();
    RC_ASSERT(show_outputs(got.responses) == show_outputs(want));
    RC_ASSERT(cluster::canonical_table(system.machine) == expected.canonical());
    RC_ASSERT(system.machine.next_token() == expected.next_token());
  }

  void show(std::ostream& os) const override { os << cluster::describe(command); }
};

struct AcquireStep : Apply {
  explicit AcquireStep(const State& state) {
    const int slot = *gen_connection();
    command = cluster::Acquire{*gen_session(state),           state.connection(slot),
                               key_name(*gen_key()),          owner_name(*gen_owner()),
                               DurationMs{*gen_lease()},      DurationMs{*gen_wait()},
                               stamp(state, *gen_stamp_step()), gen_epoch(state)};
  }
};

// A request sent before, sent again (a retry, maybe after a leader change,
// on another connection): the same request under the same session.
struct RetryStep : Apply {
  explicit RetryStep(const State& state) {
    RC_PRE(!state.sent.empty());
    command = *rc::gen::elementOf(state.sent);
    const auto connection = state.connection(*gen_connection());
    const auto at = stamp(state, *gen_stamp_step());
    const auto epoch = gen_epoch(state);
    if (auto* a = std::get_if<cluster::Acquire>(&command)) {
      a->connection = connection;
      a->now = at;
      a->epoch = epoch;
    } else {
      auto& r = std::get<cluster::Release>(command);
      r.connection = connection;
      r.now = at;
      r.epoch = epoch;
    }
  }
};

struct ReleaseStep : Apply {
  explicit ReleaseStep(const State& state) {
    const int slot = *gen_connection();
    command = cluster::Release{*gen_session(state),   state.connection(slot),          *gen_key_name(state),
                               Token{*gen_token(state)}, stamp(state, *gen_stamp_step()), gen_epoch(state)};
  }
};

struct ExpireStep : Apply {
  explicit ExpireStep(const State& state) {
    // Mostly the key's own holder token, as the heap proposes it; else any.
    const std::string key = *gen_key_name(state);
    const auto found = state.model.keys().find(key);
    const bool own = found != state.model.keys().end() && *rc::gen::inRange(0, 4) > 0;
    command = cluster::Expire{key, own ? found->second.token : Token{*gen_token(state)},
                              stamp(state, *gen_stamp_step()), gen_epoch(state)};
  }
};

struct TimeoutStep : Apply {
  explicit TimeoutStep(const State& state) {
    command = cluster::Timeout{*gen_key_name(state), cluster::WaiterId{*gen_waiter(state)},
                               stamp(state, *gen_stamp_step()), gen_epoch(state)};
  }
};

struct CloseStep : Apply {
  explicit CloseStep(const State& state) {
    const int slot = *gen_connection();
    command = cluster::Close{state.connection(slot), stamp(state, *gen_stamp_step()), gen_epoch(state)};
    closed_slot = slot;
  }
};

void check_machine_against_model(cluster::ClusterBug bug, Token first_token = Token{1}) {
  State initial;
  initial.model = model::ClusterModel{small_limits(), first_token, small_sessions()};
  System system{cluster::LockMachine(cluster::MachineConfig{small_limits(), small_sessions(), first_token, bug})};
  rc::state::check(initial, system,
                   rc::state::gen::execOneOfWithArgs<AcquireStep, AcquireStep, AcquireStep, RetryStep, RetryStep,
                                                     ReleaseStep, ReleaseStep, ExpireStep, ExpireStep, TimeoutStep,
                                                     CloseStep>());
}

RC_GTEST_PROP(LockMachineVsClusterModel, SameResponsesAndTableForEveryCommandSequence, ()) {
  check_machine_against_model(cluster::ClusterBug::none);
}

// The last tokens: a few grants from 2^64 - 1 the tokens run out, and from
// then on both must answer every acquire E and every waiter whose turn
// comes T, while releases are still served (docs/protocol.md, "Tokens").
RC_GTEST_PROP(LockMachineVsClusterModel, SameAnswersWhenTheTokensRunOut, ()) {
  const auto left = *rc::gen::inRange<std::uint64_t>(1, 6);
  check_machine_against_model(cluster::ClusterBug::none, Token{UINT64_MAX - left + 1});
}

// The comparison bites: a table whose Expire ignores the token is told apart
// from the model (an Expire with a stale token hands the key on).
TEST(LockMachineVsClusterModelCatchesBug, ExpireWithoutTokenCheck) {
  const bool passed = rc::check("lock table with expire-without-token-check vs model", [] {
    check_machine_against_model(cluster::ClusterBug::expire_without_token_check);
  });
  EXPECT_FALSE(passed) << "an Expire that ignores its token was not told apart from the model";
}

// And it reaches sessions: a table that applies a retried Acquire again is
// told apart from the model, which answers it from the session.
TEST(LockMachineVsClusterModelCatchesBug, SessionReapply) {
  const bool passed = rc::check("lock table with session-reapply vs model", [] {
    check_machine_against_model(cluster::ClusterBug::session_reapply);
  });
  EXPECT_FALSE(passed) << "a retry applied twice was not told apart from the model";
}

// And the request a session recorded: a table that answers a number reused
// for another request with the first one's outcome is told apart.
TEST(LockMachineVsClusterModelCatchesBug, SessionIgnoresRequest) {
  const bool passed = rc::check("lock table with session-ignores-request vs model", [] {
    check_machine_against_model(cluster::ClusterBug::session_ignores_request);
  });
  EXPECT_FALSE(passed) << "a reused number answered with another request's outcome was not told apart";
}

// And leader changes: a table that grants a waiter a newer leadership
// detached is told apart.
TEST(LockMachineVsClusterModelCatchesBug, GhostGrant) {
  const bool passed = rc::check("lock table with ghost-grant vs model", [] {
    check_machine_against_model(cluster::ClusterBug::ghost_grant);
  });
  EXPECT_FALSE(passed) << "a detached waiter granted was not told apart from the model";
}

}  // namespace
}  // namespace lockstep::testing
