// The vector format and the judge: the parser refuses broken files with the
// line at fault, and the runner fails a service that answers wrongly, late,
// early, twice, on the wrong connection, or with tokens that break the
// binding rules of docs/protocol.md, "Conformance vectors". Each failure case is a correct engine run
// against a deliberately wrong vector, so the judge is what is tested.
#include <gtest/gtest.h>

#include "model/runner.hpp"

namespace lockstep {
namespace {

VectorVerdict run(std::string_view text, ServiceKind kind = ServiceKind::engine) {
  auto parsed = parse_vector(text);
  if (auto* error = std::get_if<VectorError>(&parsed)) {
    return VectorVerdict{VectorVerdict::Status::fail, error->line, "bad vector: " + error->message};
  }
  return run_vector(std::get<Vector>(parsed), kind);
}

void expect_ok(std::string_view text) {
  for (auto kind : {ServiceKind::engine, ServiceKind::model}) {
    const auto verdict = run(text, kind);
    EXPECT_EQ(verdict.status, VectorVerdict::Status::ok) << verdict.line << ": " << verdict.message;
  }
}

void expect_fail_at(std::string_view text, int line, std::string_view words) {
  for (auto kind : {ServiceKind::engine, ServiceKind::model}) {
    const auto verdict = run(text, kind);
    EXPECT_EQ(verdict.status, VectorVerdict::Status::fail);
    EXPECT_EQ(verdict.line, line) << verdict.message;
    EXPECT_NE(verdict.message.find(words), std::string::npos) << verdict.message;
  }
}

TEST(VectorParser, ReadsConfigStepsAndComments) {
  auto parsed = parse_vector(
      "# a story\n"
      "config max_keys=2 sweep_ms=100 mode=simple\n"
      "\n"
      "at 0 c1 A k#1 alice 100 0   # trailing comment\n"
      "expect 0 c1 A $a alice k#1\n"
      "close 5 c1\n"
      "end 300\n");
  ASSERT_TRUE(std::holds_alternative<Vector>(parsed));
  const auto& v = std::get<Vector>(parsed);
  EXPECT_EQ(v.limits.max_keys, 2u);
  EXPECT_EQ(v.limits.sweep_ms.value, 100);
  ASSERT_EQ(v.steps.size(), 4u);
  EXPECT_EQ(v.steps[0].text, "A k#1 alice 100 0");
  EXPECT_EQ(v.steps[0].line, 4);
  EXPECT_EQ(v.final_time, TimeMs{300});
}

TEST(VectorParser, RefusesBrokenFiles) {
  const auto line_of = [](std::string_view text) {
    auto parsed = parse_vector(text);
    return std::holds_alternative<VectorError>(parsed) ? std::get<VectorError>(parsed).line : -1;
  };
  EXPECT_EQ(line_of("at 5 c1 A k o 1 0\nat 4 c1 A k o 1 0\n"), 2);  // time going back
  EXPECT_EQ(line_of("at 0 c1 A k o 1 0\nconfig max_keys=3\n"), 2);  // config after a step
  EXPECT_EQ(line_of("config max_keys=0\n"), 1);
  EXPECT_EQ(line_of("config bogus=1\n"), 1);
  EXPECT_EQ(line_of("config mode=raft\n"), 1);
  EXPECT_EQ(line_of("wait 5\n"), 1);
  EXPECT_EQ(line_of("at x c1 A k o 1 0\n"), 1);
  EXPECT_EQ(line_of("at 1 c1\n"), 1);
  EXPECT_EQ(line_of("end 5\nat 6 c1 A k o 1 0\n"), 2);
  EXPECT_EQ(line_of("close 1 c1 extra\n"), 1);
  // `order`: two $names or more, each once, not after end, before any config.
  EXPECT_EQ(line_of("at 0 c1 A k o 1 0\norder $a\n"), 2);
  EXPECT_EQ(line_of("at 0 c1 A k o 1 0\norder a b\n"), 2);
  EXPECT_EQ(line_of("at 0 c1 A k o 1 0\norder $a $b $a\n"), 2);
  EXPECT_EQ(line_of("at 0 c1 A k o 1 0\nend 5\norder $a $b\n"), 3);
  EXPECT_EQ(line_of("order $a $b\nconfig max_keys=3\n"), 2);
}

TEST(VectorParser, ReadsOrderLines) {
  auto parsed = parse_vector("at 0 c1 A k o 1 0\norder $a $b $c  # issued in this order\n");
  ASSERT_TRUE(std::holds_alternative<Vector>(parsed));
  const auto& orders = std::get<Vector>(parsed).orders;
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].line, 2);
  EXPECT_EQ(orders[0].names, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(VectorRunner, PassesTheFormatExample) {
  expect_ok(
      "config max_keys=2 max_waiters_per_key=1 max_waiters=10 sweep_ms=5000\n"
      "at 0 c1 A k alice 100 0\n"
      "expect 0 c1 A $a alice k\n"
      "at 50 c2 A k bob 100 1000\n"
      "at 60 c1 R k $a\n"
      "expect 60 c1 R $a k\n"
      "expect 60 c2 A $b bob k\n"
      "close 70 c2\n"
      "end 6000\n");
}

TEST(VectorRunner, FailsAMissingResponse) {
  expect_fail_at("at 0 c1 A k alice 100 0\nexpect 0 c1 A $a alice k\nexpect 0 c1 T bob k\n", 3, "expected");
}

TEST(VectorRunner, FailsAnUnexpectedResponse) {
  expect_fail_at("at 0 c1 A k alice 100 0\nat 1 c1 A k bob 100 0\nexpect 0 c1 A $a alice k\n", 3,
                 "got 'T bob k' on c1");
}

TEST(VectorRunner, FailsAResponseAtAnUnnamedInstant) {
  // bob's T comes at 30, which the vector does not name.
  expect_fail_at(
      "at 0 c1 A k alice 100 0\nexpect 0 c1 A $a alice k\nat 10 c2 A k bob 100 20\nexpect 31 c2 T bob k\n", 3,
      "at 30 (an instant the vector does not name)");
}

TEST(VectorRunner, FailsTheWrongConnection) {
  expect_fail_at("at 0 c1 A k alice 100 0\nexpect 0 c2 A $a alice k\n", 2, "on c2");
}

TEST(VectorRunner, FailsATokenBoundToTwoNames) {
  expect_fail_at(
      "at 0 c1 A k alice 100 0\nexpect 0 c1 A $a alice k\nat 1 c1 R k $a\nexpect 1 c1 R $b k\n", 4, "expected");
}

TEST(VectorRunner, FailsAMismatchedBoundName) {
  expect_fail_at(
      "at 0 c1 A k alice 100 0\nexpect 0 c1 A $a alice k\nat 1 c1 A j bob 100 0\nexpect 1 c1 A $a bob j\n", 4,
      "expected");
}

TEST(VectorRunner, FailsAnUnboundNameInARequest) {
  expect_fail_at("at 0 c1 R k $nope\n", 1, "not bound");
}

// Two grants at one instant: the multiset of expect lines accepts their
// tokens in either order; an `order` line fixes it, and the judge names
// that line when the service issued them the other way.
TEST(VectorRunner, AnOrderLineFixesTheOrderOfTokensOfOneInstant) {
  const std::string grants =
      "at 0 c1 A k o 10 0\n"
      "at 0 c2 A j o 10 0\n"
      "expect 0 c2 A $j o j\n"
      "expect 0 c1 A $k o k\n";
  expect_ok(grants + "order $k $j\n");
  expect_fail_at(grants + "order $j $k\n", 5, "not issued in the order `order $j $k` states");
  // Across instants the order is the instants' already; a line that says
  // otherwise fails at the instant its last name binds.
  expect_fail_at(
      "at 0 c1 A k o 10 0\nexpect 0 c1 A $k o k\nat 1 c2 A j o 10 0\nexpect 1 c2 A $j o j\norder $j $k\n", 5,
      "not issued in the order");
}

TEST(VectorRunner, AnOrderLineNamesOnlyTokensExpectLinesBind) {
  expect_fail_at("at 0 c1 A k o 10 0\nexpect 0 c1 A $k o k\norder $k $nope\n", 3, "which no expect line binds");
}

TEST(VectorRunner, BareEMatchesAnyReason) {
  expect_ok("at 0 c1 A k alice 0 0\nexpect 0 c1 E\nat 1 c1 bogus\nexpect 1 c1 E\n");
}

TEST(VectorRunner, ResponsesOfOneInstantAreAMultiset) {
  expect_ok(
      "at 0 c1 A k o 10 0\n"
      "at 0 c2 A j o 10 0\n"
      "expect 0 c2 A $j o j\n"
      "expect 0 c1 A $k o k\n");
}

TEST(VectorRunner, RunsClusterModeOnAOneNodeCluster) {
  // Expire at t=10 deletes k, so the release then is N (simple mode: R).
  const std::string text =
      "config mode=cluster\nat 0 c1 A k o 10 0\nexpect 0 c1 A $a o k\nat 10 c1 R k $a\nexpect 10 c1 N $a k\n";
  for (const auto kind : {ServiceKind::engine, ServiceKind::model}) {
    EXPECT_EQ(run(text, kind).status, VectorVerdict::Status::ok);
  }
  // The same story in simple mode: the unswept key still releases.
  const std::string simple = "at 0 c1 A k o 10 0\nexpect 0 c1 A $a o k\nat 10 c1 R k $a\nexpect 10 c1 R $a k\n";
  for (const auto kind : {ServiceKind::engine, ServiceKind::model}) {
    EXPECT_EQ(run(simple, kind).status, VectorVerdict::Status::ok);
  }
}

TEST(VectorRunner, ReportsVerdictLines) {
  EXPECT_EQ(verdict_line("f.vec", VectorVerdict{}), "ok f.vec");
  EXPECT_EQ(verdict_line("f.vec", VectorVerdict{VectorVerdict::Status::fail, 3, "why"}), "FAIL f.vec:3: why");
}

}  // namespace
}  // namespace lockstep
