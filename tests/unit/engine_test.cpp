// The engine through its public interface: scenarios of the contract that
// vectors express less directly (token scheme and mark, next_due, driver
// preconditions, inspection), each driving inputs and checking outputs.
#include <gtest/gtest.h>

#include "impl/engine.hpp"

namespace lockstep {
namespace {

const ConnectionId c1{1}, c2{2}, c3{3};

Limits limits_with_sweep(std::int64_t sweep_ms) {
  Limits limits;
  limits.sweep_ms = DurationMs{sweep_ms};
  return limits;
}

struct Harness {
  explicit Harness(Limits limits = limits_with_sweep(100), Token first = Token{1}, std::uint64_t block = 1024)
      : engine({limits, first, block, InjectedBug::none}) {}
  Outputs line(ConnectionId c, std::string_view text, std::int64_t at) {
    Outputs out;
    engine.on_line(c, text, TimeMs{at}, out);
    engine.check_invariants();
    return out;
  }
  Outputs advance(std::int64_t at) {
    Outputs out;
    engine.advance(TimeMs{at}, out);
    engine.check_invariants();
    return out;
  }
  Outputs close(ConnectionId c, std::int64_t at) {
    Outputs out;
    engine.on_close(c, TimeMs{at}, out);
    engine.check_invariants();
    return out;
  }
  Engine engine;
};

Outbound to(ConnectionId c, Response r) { return Outbound{c, std::move(r)}; }

TEST(Engine, GrantsAnUnregisteredKeyAtOnce) {
  Harness h;
  EXPECT_EQ(h.line(c1, "A k alice 100 0", 0), Outputs{to(c1, Response::granted(Token{1}, "alice", "k"))});
  EXPECT_EQ(h.engine.key_count(), 1u);
}

TEST(Engine, TokensStartAtTheConfiguredFirstAndIncrease) {
  Harness h(limits_with_sweep(100), Token{5000});
  EXPECT_EQ(h.line(c1, "A a o 10 0", 0).at(0).response.token, Token{5000});
  EXPECT_EQ(h.line(c1, "A b o 10 0", 0).at(0).response.token, Token{5001});
  EXPECT_EQ(h.line(c1, "A a o 10 0", 10).at(0).response.token, Token{5002});  // takeover
}

TEST(Engine, TokenMarkCoversEveryIssuedTokenAndMovesInBlocks) {
  Harness h(limits_with_sweep(100), Token{1}, 4);
  EXPECT_EQ(h.engine.token_mark(), Token{0});  // nothing issued yet
  h.line(c1, "A a o 10 0", 0);
  EXPECT_EQ(h.engine.token_mark(), Token{4});
  for (int i = 0; i < 3; ++i) h.line(c1, "A k" + std::to_string(i) + " o 10 0", 0);
  EXPECT_EQ(h.engine.token_mark(), Token{4});  // tokens 1..4 fit the first block
  h.line(c1, "A z o 10 0", 0);
  EXPECT_EQ(h.engine.token_mark(), Token{8});
}

TEST(Engine, RestartFromMarkKeepsTokensIncreasing) {
  // A driver persists the mark and starts the next engine just above it.
  Token mark;
  Token last_before;
  {
    Harness first(limits_with_sweep(100), Token{1}, 16);
    for (int i = 0; i < 20; ++i) last_before = first.line(c1, "A k" + std::to_string(i) + " o 10 0", 0).at(0).response.token;
    mark = first.engine.token_mark();
  }
  Harness second(limits_with_sweep(100), Token{mark.value + 1}, 16);
  const auto after = second.line(c1, "A k0 o 10 0", 0).at(0).response.token;
  EXPECT_GT(after, last_before);
}

TEST(Engine, NextDueIsTheEarliestDeadlineOrSweepWithWork) {
  Harness h;
  EXPECT_FALSE(h.engine.next_due().has_value());
  h.line(c1, "A k alice 150 0", 0);  // expires at 150: swept at 200
  EXPECT_EQ(h.engine.next_due(), TimeMs{200});
  h.line(c2, "A k bob 10 30", 5);  // bob's deadline: 35
  EXPECT_EQ(h.engine.next_due(), TimeMs{35});
  EXPECT_EQ(h.advance(35), Outputs{to(c2, Response::timed_out("bob", "k"))});
  EXPECT_EQ(h.engine.next_due(), TimeMs{200});
  EXPECT_TRUE(h.advance(200).empty());  // the sweep deletes the expired key silently
  EXPECT_EQ(h.engine.key_count(), 0u);
  EXPECT_FALSE(h.engine.next_due().has_value());
}

TEST(Engine, SweepHandsExpiredKeysToHeadWaitersInTokenOrder) {
  Harness h;
  h.line(c1, "A b o 50 0", 0);   // token 1, expires 50
  h.line(c1, "A a o 40 0", 0);   // token 2, expires 40
  h.line(c2, "A a w1 10 500", 1);
  h.line(c3, "A b w2 10 500", 1);
  const auto out = h.advance(100);
  const Outputs expected{to(c3, Response::granted(Token{3}, "w2", "b")),
                         to(c2, Response::granted(Token{4}, "w1", "a"))};
  EXPECT_EQ(out, expected);
}

TEST(Engine, TimeoutsAtOneInstantFireInQueueOrder) {
  Harness h;
  h.line(c1, "A a o 50 0", 0);
  h.line(c1, "A b o 50 0", 0);
  h.line(c2, "A b late 10 20", 0);   // deadline 20, queued first
  h.line(c3, "A a early 10 15", 5);  // deadline 20, queued second
  const Outputs expected{to(c2, Response::timed_out("late", "b")), to(c3, Response::timed_out("early", "a"))};
  EXPECT_EQ(h.advance(20), expected);
}

TEST(Engine, CloseDropsOnlyThatConnectionsWaiters) {
  Harness h;
  h.line(c1, "A k o 50 0", 0);
  h.line(c2, "A k w2 10 100", 0);
  h.line(c3, "A k w3 10 100", 0);
  h.line(c2, "A k w2b 10 100", 0);
  EXPECT_EQ(h.engine.waiter_count(), 3u);
  EXPECT_TRUE(h.close(c2, 1).empty());
  EXPECT_EQ(h.engine.waiter_count(), 1u);
  const auto out = h.line(c1, "R k 1", 2);
  const Outputs expected{to(c1, Response::released(Token{1}, "k")), to(c3, Response::granted(Token{2}, "w3", "k"))};
  EXPECT_EQ(out, expected);
}

TEST(Engine, MalformedLineChangesNothing) {
  Harness h;
  h.line(c1, "A k o 50 0", 0);
  const auto before = h.engine.view("k");
  const auto out = h.line(c1, "A k o 0 10", 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].response.kind, ResponseKind::error);
  EXPECT_EQ(h.engine.view("k")->token, before->token);
  EXPECT_TRUE(h.engine.view("k")->queue.empty());
  EXPECT_EQ(h.engine.counters().malformed, 1u);
}

TEST(Engine, OverlongLineAsksToCloseTheConnection) {
  Harness h;
  Outputs out;
  const std::string line(2000, 'A');
  EXPECT_EQ(h.engine.on_line(c1, line, TimeMs{0}, out), LineOutcome::close_connection);
  EXPECT_EQ(out.at(0).response.kind, ResponseKind::error);
  EXPECT_EQ(h.engine.on_line(c1, "A", TimeMs{0}, out), LineOutcome::keep_open);
}

TEST(Engine, TimeGoingBackIsADriverBug) {
  Harness h;
  h.advance(10);
  Outputs out;
  EXPECT_THROW(h.engine.advance(TimeMs{9}, out), InvariantViolation);
}

TEST(Engine, RefusesInvalidConfiguration) {
  Limits limits;
  limits.sweep_ms = DurationMs{0};
  EXPECT_THROW(Engine({limits, Token{1}, 1024, InjectedBug::none}), std::invalid_argument);
  EXPECT_THROW(Engine({Limits{}, Token{0}, 1024, InjectedBug::none}), std::invalid_argument);
  EXPECT_THROW(Engine({Limits{}, Token{1}, 0, InjectedBug::none}), std::invalid_argument);
}

TEST(Engine, ViewShowsHolderAndQueue) {
  Harness h;
  h.line(c1, "A k o 50 0", 10);
  h.line(c2, "A k w 7 30", 12);
  const auto view = h.engine.view("k");
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->token, Token{1});
  EXPECT_EQ(view->expiry, TimeMs{60});
  ASSERT_EQ(view->queue.size(), 1u);
  EXPECT_EQ(view->queue[0].owner, "w");
  EXPECT_EQ(view->queue[0].deadline, TimeMs{42});
  EXPECT_FALSE(h.engine.view("nope").has_value());
}

TEST(Engine, ManyKeysChurnKeepsIndexAndBucketsConsistent) {
  Harness h(limits_with_sweep(7));
  std::vector<Token> held(500);
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 500; ++i) {
      const auto out = h.line(c1, "A key" + std::to_string(i) + " o " + std::to_string(1 + i % 13) + " 0", round * 20);
      if (!out.empty() && out[0].response.kind == ResponseKind::granted) held[static_cast<std::size_t>(i)] = out[0].response.token;
    }
    for (int i = 0; i < 500; i += 3) h.line(c1, "R key" + std::to_string(i) + " " + std::to_string(held[static_cast<std::size_t>(i)].value), round * 20 + 1);
  }
  h.advance(1000);
  EXPECT_EQ(h.engine.key_count(), 0u);
}

// Keys that leave a sweep bucket early leave a dead entry behind; churn on one
// key while others stay held in the same bucket piles them up until the bucket
// is compacted. check_invariants (after every step) holds the bucket to at most
// its live keys plus a slack of dead ones, and each live key's entry to its
// recorded position; the sweep must still visit the held keys in token order.
TEST(Engine, ChurnInOneSweepBucketIsCompactedAndTheSweepKeepsTokenOrder) {
  Harness h(limits_with_sweep(1000));
  std::vector<Token> tokens;
  for (int i = 0; i < 5; ++i) tokens.push_back(h.line(c1, "A k" + std::to_string(i) + " o 900 0", 0).at(0).response.token);
  for (int cycle = 0; cycle < 400; ++cycle) {
    // All at instant 0: every grant expires at 900, in the bucket of instant 1000.
    const auto token = h.line(c1, "A churn o 900 0", 0).at(0).response.token;
    if (cycle == 200) {
      // k2 leaves from the middle of a bucket that was compacted before.
      EXPECT_EQ(h.line(c1, "R k2 " + std::to_string(tokens[2].value), 0).at(0).response.kind, ResponseKind::released);
    }
    EXPECT_EQ(h.line(c1, "R churn " + std::to_string(token.value), 0).at(0).response.kind, ResponseKind::released);
  }
  const auto last = h.line(c1, "A churn o 500 0", 450).at(0).response.token;
  for (const char* key : {"k4", "churn", "k0", "k3", "k1"}) h.line(c2, std::string("A ") + key + " w 100 5000", 460);
  // At the sweep of instant 1000, each key goes to its waiter in the order of
  // its holder's token: k0, k1, k3, k4 (granted at 0), then churn.
  Outputs swept = h.advance(1000);
  std::vector<std::string> order;
  for (const auto& o : swept) {
    ASSERT_EQ(o.response.kind, ResponseKind::granted);
    order.push_back(o.response.key);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"k0", "k1", "k3", "k4", "churn"}));
  EXPECT_LT(tokens[4], last);
}

}  // namespace
}  // namespace lockstep
