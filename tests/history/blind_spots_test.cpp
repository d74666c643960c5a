// Histories the black-box checker once judged wrongly, each written by hand
// so that its verdict can be read off it: violations it missed (a token
// issued out of order across keys at a hand-off, requests never answered,
// a history that tests nothing), an explanation it refused (a deferred
// answer overtaken, within the tolerance, by a later response on its
// connection), and histories that made it run away (many clients, nothing
// answered): those must end within the search and memory budgets with a
// verdict that is not a pass. Times are microseconds on the tester's clock;
// sweep every 1,000 ms and a tolerance of 10 ms unless a test says otherwise.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "check/checker.hpp"
#include "check/history.hpp"

namespace lockstep::history {
namespace {

class Recorder {
 public:
  Recorder() {
    history_.header.limits.sweep_ms = DurationMs{1'000};
    history_.header.tolerance_ms = 10;
  }
  Recorder& connect(std::uint32_t conn, std::int64_t us) { return add(us, EventKind::connect, conn, ""); }
  Recorder& send(std::uint32_t conn, std::int64_t us, const std::string& line) { return add(us, EventKind::send, conn, line); }
  Recorder& recv(std::uint32_t conn, std::int64_t us, const std::string& line, std::int64_t after_us = -1) {
    add(us, EventKind::recv, conn, line);
    history_.events.back().after_us = after_us;
    return *this;
  }
  Recorder& close(std::uint32_t conn, std::int64_t us) { return add(us, EventKind::close, conn, ""); }
  History& history() { return history_; }
  CheckResult check(const CheckOptions& options = {}) const { return check_history(history_, options); }

 private:
  Recorder& add(std::int64_t us, EventKind kind, std::uint32_t conn, const std::string& line) {
    history_.events.push_back(Event{us, kind, conn, line});
    return *this;
  }
  History history_;
};

std::string last_line(const CheckResult& result) {
  std::string text;
  for (const auto& line : summary_lines(result)) text += line + "\n";
  return text;
}

bool has_finding(const CheckResult& result, const std::string& check) {
  for (const auto& finding : result.violations) {
    if (finding.check == check) return true;
  }
  return false;
}

std::string story_of(const CheckResult& result) {
  std::string text;
  for (const auto& finding : result.violations) {
    text += finding.summary + "\n";
    for (const auto& line : finding.story) text += line + "\n";
  }
  return text;
}

// ---- tokens across keys: compared with the instant that caused each grant ----

// alice holds `a` (token 10); bob waits for it. carol is granted `b` with
// token 20 at about 20 ms. alice releases `a` at 100 ms and bob gets it with
// token 15: issued at the release, after token 20, yet smaller. The grant's
// request was sent at 2 ms, before carol's; only its cause, the release,
// shows the order.
TEST(TokenOrder, AHandOffIssuedAfterAnotherKeysGrantMustCarryALargerToken) {
  for (const std::uint64_t bob_token : {15u, 25u}) {
    Recorder r;
    r.connect(1, 0).connect(2, 0).connect(3, 0);
    r.send(1, 1'000, "A a alice 5000 0").recv(1, 1'100, "A 10 alice a");
    r.send(2, 2'000, "A a bob 5000 3000").send(2, 2'010, "R a 999").recv(2, 2'050, "N 999 a");
    r.send(3, 20'000, "A b carol 5000 0").recv(3, 20'100, "A 20 carol b");
    r.send(1, 100'000, "R a 10").recv(1, 100'080, "R 10 a").recv(2, 100'090, fmt::format("A {} bob a", bob_token));
    r.close(1, 600'000).close(2, 600'000).close(3, 600'000);
    const auto result = r.check();
    if (bob_token == 25) {
      EXPECT_EQ(result.verdict, Verdict::conforms) << last_line(result);
    } else {
      ASSERT_EQ(result.verdict, Verdict::violation) << last_line(result);
      EXPECT_TRUE(has_finding(result, "tokens")) << last_line(result);
    }
  }
}

// The same through expiry: alice's lease ends at about 501 ms, the sweep
// hands `a` to bob (at 501 ms at the earliest, whatever the phase); carol's
// token 20 on `b` arrived at 400 ms. Token 15 at the sweep is out of order.
TEST(TokenOrder, ASweepHandOffIsComparedWithTheExpiryThatCausedIt) {
  Recorder r;
  r.connect(1, 0).connect(2, 0).connect(3, 0);
  r.send(1, 1'000, "A a alice 500 0").recv(1, 1'100, "A 10 alice a");
  r.send(2, 2'000, "A a bob 5000 3000").send(2, 2'010, "R a 999").recv(2, 2'050, "N 999 a");
  r.send(3, 399'000, "A b carol 5000 0").recv(3, 400'000, "A 20 carol b");
  r.recv(2, 1'000'500, "A 15 bob a");
  r.close(1, 6'000'000).close(2, 6'000'000).close(3, 6'000'000);
  const auto result = r.check();
  ASSERT_EQ(result.verdict, Verdict::violation) << last_line(result);
  EXPECT_TRUE(has_finding(result, "tokens")) << last_line(result);
}

// ---- overtaking: a deferred answer may arrive behind later responses ----

// alice releases at 100 ms; bob's hand-off `A` is produced then but
// arrives at 130 ms, after the `N` to a release bob sent at 110 ms on the
// same connection (produced later, arrived first). Within a tolerance of
// 50 ms that is allowed (docs/protocol.md, "Black box, in real time"); at 170 ms it is late.
TEST(Overtaking, ADeferredAnswerMayBeOvertakenWithinTheTolerance) {
  for (const std::int64_t arrival_us : {std::int64_t{130'000}, std::int64_t{170'000}}) {
    Recorder r;
    r.history().header.tolerance_ms = 50;
    r.connect(1, 0).connect(2, 0);
    r.send(1, 1'000, "A a alice 5000 0").recv(1, 1'100, "A 10 alice a");
    r.send(2, 2'000, "A a bob 5000 3000").send(2, 2'010, "R a 999").recv(2, 2'050, "N 999 a");
    r.send(1, 100'000, "R a 10").recv(1, 100'080, "R 10 a");
    r.send(2, 110'000, "R a 777").recv(2, 110'500, "N 777 a");
    r.recv(2, arrival_us, "A 11 bob a", arrival_us - 1'000);
    r.close(1, 600'000).close(2, 600'000);
    const auto result = r.check();
    EXPECT_EQ(result.verdict, arrival_us < 150'000 ? Verdict::conforms : Verdict::violation)
        << "arrival " << arrival_us << "\n" << last_line(result);
  }
}

// ---- an answer taken by the wrong request of its owner ----

// alice holds the key, w1 and w2 fill its queue (two places); w1's wait
// ends at 22 ms. x asks to wait at 21.5 ms: the server reads it at 22,
// after w1's `T`, and queues it; x times out at 52. At 52 y queues, then x
// asks again and is answered `B`; x reads that `T` and that `B` in one
// read. A search that handled x's first request at 21, answered `B` (an
// answer that changes nothing) and matched that `B`, without also trying a
// later instant, found no explanation of the `T`: a false alarm on a
// correct server, seen on the simulator's clean seed 45.
TEST(InertAnswers, ABusyMayBelongToALaterRequestOfTheSameOwner) {
  Recorder r;
  r.history().header.limits.max_waiters_per_key = 2;
  for (std::uint32_t conn = 1; conn <= 5; ++conn) r.connect(conn, 0);
  r.send(1, 1'000, "A k alice 5000 0").recv(1, 1'100, "A 3 alice k");
  r.send(2, 2'000, "A k w1 5000 20").send(2, 2'010, "R k 999").recv(2, 2'050, "N 999 k");
  r.send(3, 3'000, "A k w2 5000 500").send(3, 3'010, "R k 998").recv(3, 3'050, "N 998 k");
  r.send(4, 21'500, "A k x 5000 30");
  r.recv(2, 22'200, "T w1 k");
  r.send(5, 52'000, "A k y 5000 400").send(5, 52'010, "R k 997");
  r.send(4, 52'020, "A k x 5000 30");
  r.recv(5, 52'050, "N 997 k").recv(4, 52'300, "T x k").recv(4, 52'300, "B x k");
  r.recv(5, 452'300, "T y k").recv(3, 503'300, "T w2 k");
  for (std::uint32_t conn = 1; conn <= 5; ++conn) r.close(conn, 600'000);
  const auto result = r.check();
  EXPECT_EQ(result.verdict, Verdict::conforms) << story_of(result) << last_line(result);
}

// A burst on a held key: fourteen owners ask to wait within one
// millisecond, each on its own connection with a probe behind, and each
// connection closes soon after (so a waiter could have been dropped
// unanswered). Three fill the queue and time out; the others read `B`. A
// waiter whose own `B` was read, and that no other request can have
// caused, is never queued: otherwise every choice of three of the fourteen,
// in every order, is a configuration, and the search gives up on a history
// with one answer each (seen on a 60 s run of a loaded machine).
TEST(InertAnswers, ABurstOfBusyAnswersIsDecidedWithinASmallBudget) {
  Recorder r;
  r.history().header.limits.max_waiters_per_key = 3;
  r.history().header.tolerance_ms = 50;
  r.connect(1, 0).send(1, 1'000, "A k alice 5000 0").recv(1, 1'100, "A 3 alice k");
  for (std::uint32_t conn = 2; conn <= 15; ++conn) {
    const std::int64_t sent = 10'000 + 40 * conn;
    r.connect(conn, 0)
        .send(conn, sent, fmt::format("A k o{} 5000 100", conn))
        .send(conn, sent + 5, fmt::format("R k {}", 900 + conn));
  }
  for (std::uint32_t conn = 2; conn <= 15; ++conn) {
    const std::int64_t read = 11'000 + 10 * conn;
    if (conn <= 4) {
      r.recv(conn, read, fmt::format("N {} k", 900 + conn));
    } else {
      r.recv(conn, read, fmt::format("B o{} k", conn)).recv(conn, read + 1, fmt::format("N {} k", 900 + conn));
    }
  }
  for (std::uint32_t conn = 2; conn <= 4; ++conn) r.recv(conn, 110'500 + conn, fmt::format("T o{} k", conn));
  for (std::uint32_t conn = 5; conn <= 15; ++conn) r.close(conn, 12'000);
  r.close(1, 300'000).close(2, 300'000).close(3, 300'000).close(4, 300'000);
  CheckOptions options;
  options.budget_states = 2'000;  // about 100 are needed; a search that queues them, some 14,000
  const auto result = r.check(options);
  EXPECT_EQ(result.verdict, Verdict::conforms) << story_of(result) << last_line(result);
}

// ---- silent passes: what the contract answers must be answered ----

TEST(SilentPass, TryLocksNeverAnsweredAreAViolation) {
  Recorder r;
  for (std::uint32_t conn = 1; conn <= 5; ++conn) {
    r.connect(conn, 0).send(conn, 1'000 * conn, fmt::format("A k o{} 100 0", conn));
  }
  for (std::uint32_t conn = 1; conn <= 5; ++conn) r.close(conn, 2'000'000);
  const auto result = r.check();
  EXPECT_EQ(result.verdict, Verdict::violation) << last_line(result);
}

TEST(SilentPass, AMalformedLineNeverAnsweredIsAViolation) {
  Recorder r;
  r.connect(1, 0).send(1, 1'000, "A k").close(1, 2'000'000);
  const auto result = r.check();
  ASSERT_EQ(result.verdict, Verdict::violation) << last_line(result);
  EXPECT_TRUE(has_finding(result, "errors")) << last_line(result);
}

// A request sent within the tolerance of the end may still be on its way:
// that is no violation (but the history tests nothing: not a pass either).
TEST(SilentPass, ARequestSentAtTheEndMayBeUnanswered) {
  Recorder r;
  r.connect(1, 0).send(1, 1'000, "A k alice 100 0").recv(1, 1'100, "A 3 alice k");
  r.send(1, 1'995'000, "R k 3").close(1, 2'000'000);
  EXPECT_EQ(r.check().verdict, Verdict::conforms);
}

// bob's acquire waits on a held key; the server never answers it, nor
// anything after it, and the history ends (the connection still open)
// seconds after his wait ran out: his `T` was due.
TEST(SilentPass, AWaiterNeverAnsweredIsAViolationEvenWithoutAProbe) {
  Recorder r;
  r.connect(1, 0).connect(2, 0);
  r.send(1, 1'000, "A k alice 5000 0").recv(1, 1'100, "A 3 alice k");
  r.send(2, 2'000, "A k bob 5000 100");
  r.send(1, 3'000'000, "A x alice 10 0").recv(1, 3'000'100, "A 4 alice x");  // the history goes on
  const auto result = r.check();
  EXPECT_EQ(result.verdict, Verdict::violation) << last_line(result);
}

TEST(SilentPass, AHistoryWithoutResponsesIsNotAPass) {
  Recorder empty;
  EXPECT_EQ(empty.check().verdict, Verdict::unknown);
  Recorder unanswered;
  unanswered.connect(1, 0).send(1, 1'000, "A k alice 100 0").close(1, 1'005);  // closed within the tolerance
  const auto result = unanswered.check();
  EXPECT_EQ(result.verdict, Verdict::unknown) << last_line(result);
}

// ---- reports: the culprit, what was expected, and limits that would explain ----

// bob waits 100 ms on a held key; his `T` never comes, but a probe's `N`
// does, later. The report must blame the missing `T` (expected by about
// +113 ms), not the innocent `N`.
TEST(Reports, AMissingTimeoutIsNamedWithItsDeadline) {
  Recorder r;
  r.connect(1, 0).connect(2, 0);
  r.send(1, 1'000, "A k alice 5000 0").recv(1, 1'100, "A 3 alice k");
  r.send(2, 2'000, "A k bob 5000 100").send(2, 2'010, "R k 999").recv(2, 2'050, "N 999 k");
  r.send(2, 300'000, "R k 998").recv(2, 300'050, "N 998 k");
  r.close(1, 4'000'000).close(2, 4'000'000);
  const auto result = r.check();
  ASSERT_EQ(result.verdict, Verdict::violation);
  const auto& summary = result.violations.front().summary;
  EXPECT_NE(summary.find("expected `T bob k` on connection 2 by +"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("N 998"), std::string::npos) << summary;
}

// bob queues on alice's key, then carol does (8 ms later: within the 1 ms
// an instant stands for, their order would be free); alice releases and carol, not
// bob, is handed the key (a LIFO hand-off). Where bob is watched past the
// release, the report names bob's missing `A` with its deadline and what
// came instead (his `T`). Where bob's connection closes right after the
// release, his `A` may have been lost with it; then carol's grant is the
// culprit, and the report says where she stands: behind bob, who holds
// the key.
TEST(Reports, AGrantToTheWrongWaiterNamesTheHeadWaitersAnswer) {
  const auto lifo = [](std::int64_t bob_closed_us) {
    Recorder r;
    r.connect(1, 0).connect(2, 0).connect(3, 0);
    r.send(1, 1'000, "A k alice 5000 0").recv(1, 1'100, "A 3 alice k");
    r.send(2, 2'000, "A k bob 5000 3000").send(2, 2'010, "R k 999").recv(2, 2'050, "N 999 k");
    r.send(3, 10'000, "A k carol 5000 3000").send(3, 10'010, "R k 998").recv(3, 10'050, "N 998 k");
    r.send(1, 100'000, "R k 3").recv(1, 100'080, "R 3 k").recv(3, 100'090, "A 4 carol k");
    if (bob_closed_us > 3'002'000) r.recv(2, 3'002'500, "T bob k");
    r.close(2, bob_closed_us).close(1, 4'000'000).close(3, 4'000'000);
    return r.check();
  };
  const auto watched = lifo(4'000'000);
  ASSERT_EQ(watched.verdict, Verdict::violation) << last_line(watched);
  const auto& missing = watched.violations.front().summary;
  EXPECT_NE(missing.find("expected `A <token> bob k` on connection 2 by +"), std::string::npos) << missing;
  EXPECT_NE(missing.find("(the release `R k 3` at +"), std::string::npos) << missing;
  EXPECT_NE(missing.find("got `T bob k`"), std::string::npos) << missing;

  const auto closed = lifo(105'000);
  ASSERT_EQ(closed.verdict, Verdict::violation) << last_line(closed);
  const auto& culprit = closed.violations.front().summary;
  EXPECT_NE(culprit.find("`A 4 carol k` on connection 3 at +100.090 ms has no explanation"), std::string::npos)
      << culprit;
  EXPECT_NE(culprit.find("`carol` is the head waiter, but `bob` holds the key"), std::string::npos) << culprit;
}

// The key is released with its token 2 s after its 50 ms lease ended: a
// server sweeping every 1,000 ms (as assumed) must have deleted it (`N`);
// one that sweeps every 5,000 ms answers `R`. The violation says that a
// wrong limit would explain it.
TEST(Reports, AViolationThatAnotherSweepPeriodExplainsSaysSo) {
  Recorder r;
  r.connect(1, 0);
  r.send(1, 1'000, "A k alice 50 0").recv(1, 1'100, "A 3 alice k");
  r.send(1, 2'200'000, "R k 3").recv(1, 2'200'100, "R 3 k");
  r.close(1, 3'000'000);
  const auto result = r.check();
  ASSERT_EQ(result.verdict, Verdict::violation);
  EXPECT_NE(story_of(result).find("a wrong limit would explain it"), std::string::npos) << story_of(result);
}

// carol is answered `B` while nobody waits and the limits assumed are
// the protocol's defaults: a violation, which a lower limit of the target explains.
TEST(Reports, ABusyThatALowerLimitExplainsSaysSo) {
  Recorder r;
  r.history().header.limits = Limits{};
  r.connect(1, 0).connect(2, 0);
  r.send(1, 1'000, "A k alice 5000 0").recv(1, 1'100, "A 3 alice k");
  r.send(2, 2'000, "A k carol 5000 900").recv(2, 2'050, "B carol k");
  r.close(1, 2'000'000).close(2, 2'000'000);
  const auto result = r.check();
  ASSERT_EQ(result.verdict, Verdict::violation);
  EXPECT_NE(story_of(result).find("`B` anywhere"), std::string::npos) << story_of(result);
}

// An `E` to a well-formed request is named as such, with the line it may
// answer and the limits an `E` would need.
TEST(Reports, AnErrorToAWellFormedRequestIsNamedSo) {
  Recorder r;
  r.connect(1, 0).send(1, 1'000, "A k alice 5000 2000").recv(1, 1'050, "E lease too long").close(1, 2'000'000);
  const auto result = r.check();
  ASSERT_EQ(result.verdict, Verdict::violation);
  const auto text = story_of(result);
  EXPECT_NE(text.find("is an error to a well-formed request"), std::string::npos) << text;
  EXPECT_NE(text.find("A k alice 5000 2000"), std::string::npos) << text;
  EXPECT_EQ(text.find("before malformed line"), std::string::npos) << text;
}

// ---- budgets: many clients, nothing answered ----

// One grant seen, then forty clients ask for the held key with waits of
// 3 s and nothing is answered. Closed after 4 s, their `T`s were owed: a
// violation, found at once. Closed after 2.5 s, nothing was owed yet, and
// which of them were queued, and when, stays open: the configurations
// multiply, and the search must stop at its memory budget with `unknown`,
// never pass, never grow past it.
History crowd_never_answered(std::uint32_t clients, std::int64_t closed_us) {
  Recorder r;
  r.history().header.tolerance_ms = 50;
  r.history().header.limits.max_waiters_per_key = 1'024;
  r.connect(1, 0).send(1, 1'000, "A k holder 60000 0").recv(1, 1'100, "A 1 holder k");
  for (std::uint32_t conn = 2; conn <= clients + 1; ++conn) {
    r.connect(conn, 0).send(conn, 2'000 + 100 * conn, fmt::format("A k c{} 5000 3000", conn));
  }
  for (std::uint32_t conn = 1; conn <= clients + 1; ++conn) r.close(conn, closed_us);
  return r.history();
}

TEST(Budgets, ACrowdNeverAnsweredIsAViolationOnceItsTimeoutsWereOwed) {
  const auto result = check_history(crowd_never_answered(40, 4'000'000));
  EXPECT_EQ(result.verdict, Verdict::violation) << last_line(result);
}

TEST(Budgets, ACrowdStillWaitingEndsWithinTheMemoryBudget) {
  CheckOptions options;
  options.memory_max_bytes = 64ull << 20;
  const auto result = check_history(crowd_never_answered(40, 2'500'000), options);
  ASSERT_EQ(result.verdict, Verdict::unknown) << last_line(result);
  EXPECT_NE(last_line(result).find("MiB"), std::string::npos) << last_line(result);
  EXPECT_LE(result.memory_peak_bytes, options.memory_max_bytes + (1ull << 20)) << last_line(result);
}

}  // namespace
}  // namespace lockstep::history
