// The real-time checker of a cluster from its clients' side
// (model/cluster_client_checker) on hand-made histories: a clean hand-off
// passes, and each rule is shown failing the history that breaks it and
// passing the nearest one that does not (concurrent requests whose tokens
// may come in either order, a second holder exactly at the allowance and one
// microsecond before it, a T on a retry, an N after the lease). Times are in
// microseconds on the clients' clock.
#include <gtest/gtest.h>

#include "model/cluster_client_checker.hpp"

namespace lockstep {
namespace {

constexpr std::int64_t ms = 1'000;

ClusterOperation acquire(std::string client, std::string key, std::int64_t lease_ms, std::int64_t wait_ms,
                         std::int64_t sent_us, std::optional<std::int64_t> answered_us, std::optional<Response> response,
                         std::uint32_t attempts = 1) {
  ClusterOperation op;
  op.client = std::move(client);
  op.key = std::move(key);
  op.owner = op.client;
  op.lease_ms = DurationMs{lease_ms};
  op.wait_ms = DurationMs{wait_ms};
  op.sent_us = sent_us;
  op.answered_us = answered_us;
  op.response = std::move(response);
  op.attempts = attempts;
  return op;
}

ClusterOperation grant(std::string client, std::string key, std::uint64_t token, std::int64_t lease_ms,
                       std::int64_t sent_us, std::int64_t answered_us, std::int64_t wait_ms = 0) {
  auto response = Response::granted(Token{token}, client, key);
  return acquire(client, key, lease_ms, wait_ms, sent_us, answered_us, response);
}

ClusterOperation release(std::string client, std::string key, std::uint64_t token, std::int64_t sent_us,
                         std::int64_t answered_us, bool released = true) {
  ClusterOperation op;
  op.client = std::move(client);
  op.acquire = false;
  op.key = key;
  op.token = Token{token};
  op.sent_us = sent_us;
  op.answered_us = answered_us;
  op.response = released ? Response::released(Token{token}, key) : Response::not_held(Token{token}, key);
  return op;
}

ClusterCheckReport check(const std::vector<ClusterOperation>& ops, std::int64_t allowance_ms = 5,
                         const std::vector<std::string>& unexpected = {}) {
  return check_cluster_history(ops, unexpected, ClusterCheckOptions{DurationMs{allowance_ms}});
}

TEST(ClusterClientChecker, AReleaseHandOffPasses) {
  const std::vector<ClusterOperation> ops{
      grant("alice", "k", 5, 100, 0, 1 * ms),
      grant("bob", "k", 6, 100, 10 * ms, 51 * ms, 1'000),  // waited; granted when alice released
      release("alice", "k", 5, 50 * ms, 52 * ms),
      release("bob", "k", 6, 60 * ms, 61 * ms),
  };
  const auto report = check(ops);
  EXPECT_EQ(report.violations, 0u) << report.messages.front();
  EXPECT_EQ(report.grants, 2u);
  EXPECT_EQ(report.releases, 2u);
}

TEST(ClusterClientChecker, ATokenGrantedTwiceFails) {
  const auto report = check({grant("alice", "k", 5, 100, 0, 1 * ms), grant("bob", "j", 5, 100, 0, 1 * ms)});
  EXPECT_GE(report.violations, 1u);
  EXPECT_NE(report.messages.front().find("token 5 granted twice"), std::string::npos);
}

TEST(ClusterClientChecker, TokensFollowRealTimeOrder) {
  // bob sent after alice's answer arrived: his token must be larger.
  auto report = check({grant("alice", "k", 7, 100, 0, 1 * ms), grant("bob", "j", 6, 100, 2 * ms, 3 * ms)});
  ASSERT_EQ(report.violations, 1u);
  EXPECT_NE(report.messages.front().find("tokens went back"), std::string::npos);
  // Concurrent requests may be applied in either order.
  report = check({grant("alice", "k", 7, 100, 0, 1 * ms), grant("bob", "j", 6, 100, 500, 3 * ms)});
  EXPECT_EQ(report.violations, 0u);
}

TEST(ClusterClientChecker, TwoHoldersOfOneKeyFailOnlyPastTheAllowance) {
  // alice's lease ends at 100 ms as she counts it; allowance 5 ms.
  auto at = [](std::int64_t answered_us) {
    return check({grant("alice", "k", 5, 100, 0, 1 * ms), grant("bob", "k", 6, 100, 10 * ms, answered_us, 1'000)});
  };
  EXPECT_EQ(at(95 * ms).violations, 0u);
  const auto report = at(95 * ms - 1);
  ASSERT_EQ(report.violations, 1u);
  EXPECT_NE(report.messages.front().find("two holders of `k`"), std::string::npos);
  // A release sent earlier ends alice's hold then.
  EXPECT_EQ(check({grant("alice", "k", 5, 100, 0, 1 * ms), release("alice", "k", 5, 20 * ms, 21 * ms),
                   grant("bob", "k", 6, 100, 10 * ms, 20 * ms, 1'000)})
                .violations,
            0u);
  // An indeterminate release still counts from when it was sent.
  auto lost = release("alice", "k", 5, 20 * ms, 0);
  lost.answered_us.reset();
  lost.response.reset();
  EXPECT_EQ(check({grant("alice", "k", 5, 100, 0, 1 * ms), lost, grant("bob", "k", 6, 100, 10 * ms, 20 * ms, 1'000)})
                .violations,
            0u);
}

TEST(ClusterClientChecker, ALostGrantIsAnEarlyN) {
  auto report = check({grant("alice", "k", 5, 100, 0, 1 * ms), release("alice", "k", 5, 20 * ms, 21 * ms, false)});
  ASSERT_EQ(report.violations, 1u);
  EXPECT_NE(report.messages.front().find("a grant was lost"), std::string::npos);
  // After the lease, N is right: the key expired.
  report = check({grant("alice", "k", 5, 100, 0, 1 * ms), release("alice", "k", 5, 90 * ms, 96 * ms, false)});
  EXPECT_EQ(report.violations, 0u);
}

TEST(ClusterClientChecker, AnEarlyTFailsUnlessItAnswersARetry) {
  auto early = acquire("bob", "k", 100, 200, 0, 150 * ms, Response::timed_out("bob", "k"));
  ASSERT_EQ(check({early}).violations, 1u);
  early.attempts = 2;  // the waiter left with its connection; the retry is T at once
  EXPECT_EQ(check({early}).violations, 0u);
  const auto on_time = acquire("bob", "k", 100, 200, 0, 196 * ms, Response::timed_out("bob", "k"));
  EXPECT_EQ(check({on_time}).violations, 0u);
}

TEST(ClusterClientChecker, ErrorsAndStrayLinesFail) {
  const auto refused = acquire("bob", "k", 100, 0, 0, 1 * ms, Response::error("stale request"));
  EXPECT_EQ(check({refused}).violations, 1u);
  const auto report = check({}, 5, {"A 9 bob k"});
  ASSERT_EQ(report.violations, 1u);
  EXPECT_NE(report.messages.front().find("answers no request"), std::string::npos);
}

TEST(ClusterClientChecker, IndeterminateRequestsAreCountedNotJudged) {
  auto unknown = acquire("bob", "k", 100, 0, 0, std::nullopt, std::nullopt, 30);
  const auto report = check({unknown, grant("carol", "k", 4, 100, 0, 1 * ms)});
  EXPECT_EQ(report.violations, 0u);
  EXPECT_EQ(report.indeterminate, 1u);
}

TEST(ClusterClientChecker, AKeyStuckPastTheLatenessFailsWhenAsked) {
  // alice's lease (100 ms) ended at the latest 101 ms after her A arrived at
  // 1 ms; bob's try-lock at 2 s is refused.
  const auto refused = acquire("bob", "k", 100, 0, 2'000 * ms, 2'001 * ms, Response::timed_out("bob", "k"));
  const std::vector<ClusterOperation> ops{grant("alice", "k", 5, 100, 0, 1 * ms), refused};
  EXPECT_EQ(check(ops).violations, 0u);  // not asked
  const auto lateness = [&](std::int64_t max_ms) {
    return check_cluster_history(ops, {}, ClusterCheckOptions{DurationMs{5}, DurationMs{max_ms}});
  };
  const auto report = lateness(1'000);
  ASSERT_EQ(report.violations, 1u);
  EXPECT_NE(report.messages.front().find("`k` stuck"), std::string::npos);
  EXPECT_EQ(lateness(1'900).violations, 0u);  // late, but within the bound
  // A release answered before the try-lock frees the key even sooner...
  auto released = ops;
  released.push_back(release("alice", "k", 5, 10 * ms, 11 * ms));
  EXPECT_EQ(check_cluster_history(released, {}, ClusterCheckOptions{DurationMs{5}, DurationMs{10'000}}).violations, 1u);
  // ...and an acquire whose fate is unknown may hold it.
  auto unknown = released;
  unknown.push_back(acquire("carol", "k", 100, 0, 1'500 * ms, std::nullopt, std::nullopt, 40));
  EXPECT_EQ(check_cluster_history(unknown, {}, ClusterCheckOptions{DurationMs{5}, DurationMs{1'000}}).violations, 0u);
}

}  // namespace
}  // namespace lockstep
