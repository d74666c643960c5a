// The black-box checker on small hand-written histories whose verdict can
// be seen by reading them: each test states the timing that explains a
// history (or why none does), and the checker must agree. Times are in
// microseconds on the tester's clock; the limits are the fuzzer's (sweep
// every 1,000 ms) unless a test says otherwise.
#include <algorithm>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "check/checker.hpp"
#include "check/history.hpp"
#include "check/phase_set.hpp"

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
  Recorder& eof(std::uint32_t conn, std::int64_t us) { return add(us, EventKind::eof, conn, ""); }
  Recorder& down(std::int64_t us) { return add(us, EventKind::down, 0, ""); }
  Recorder& up(std::int64_t us) { return add(us, EventKind::up, 0, ""); }
  History& history() { return history_; }
  CheckResult check() const { return check_history(history_); }

 private:
  Recorder& add(std::int64_t us, EventKind kind, std::uint32_t conn, const std::string& line) {
    history_.events.push_back(Event{us, kind, conn, line});
    return *this;
  }
  History history_;
};

TEST(HistoryChecker, GrantReleaseAndTryLockConform) {
  Recorder r;
  r.connect(1, 0).connect(2, 0);
  r.send(1, 1'200, "A k alice 500 0").recv(1, 1'300, "A 7 alice k");
  r.send(2, 2'100, "A k bob 500 0").recv(2, 2'150, "T bob k");  // held: a try-lock times out at once
  r.send(1, 3'000, "R k 7").recv(1, 3'100, "R 7 k");
  r.send(2, 4'000, "A k bob 500 0").recv(2, 4'050, "A 9 bob k");
  r.close(1, 600'000).close(2, 600'000);
  const auto result = r.check();
  EXPECT_EQ(result.verdict, Verdict::conforms) << summary_lines(result).back();
}

TEST(HistoryChecker, HandOffAtReleaseConforms) {
  Recorder r;
  r.connect(1, 0).connect(2, 0);
  r.send(1, 1'000, "A k alice 5000 0").recv(1, 1'100, "A 3 alice k");
  r.send(2, 2'000, "A k bob 5000 900").send(2, 2'010, "R k 999").recv(2, 2'050, "N 999 k");  // bob waits
  r.send(1, 10'000, "R k 3").recv(1, 10'080, "R 3 k").recv(2, 10'090, "A 4 bob k");
  r.close(1, 600'000).close(2, 600'000);
  EXPECT_EQ(r.check().verdict, Verdict::conforms);
}

TEST(HistoryChecker, TimeoutBeforeTheDeadlineIsAViolation) {
  // bob queues at 2 ms with a 100 ms wait: his `T` cannot come before
  // about 101 ms (the grid allows 1 ms); it came at 60 ms.
  Recorder r;
  r.connect(1, 0).connect(2, 0);
  r.send(1, 1'000, "A k alice 5000 0").recv(1, 1'100, "A 3 alice k");
  r.send(2, 2'000, "A k bob 5000 100").send(2, 2'010, "R k 999").recv(2, 2'050, "N 999 k");
  r.recv(2, 60'000, "T bob k");
  r.close(1, 600'000).close(2, 600'000);
  const auto result = r.check();
  ASSERT_EQ(result.verdict, Verdict::violation);
  EXPECT_EQ(result.violations.front().key, "k");
  EXPECT_NE(result.violations.front().summary.find("T bob k"), std::string::npos);
}

TEST(HistoryChecker, TimeoutWithinTheGridOfTheDeadlineConforms) {
  // Sent at 2.4 ms with a 100 ms wait, answered at 101.9 ms: half a
  // millisecond before send + wait, which the server's grid allows.
  Recorder r;
  r.connect(1, 0).connect(2, 0);
  r.send(1, 1'000, "A k alice 5000 0").recv(1, 1'100, "A 3 alice k");
  r.send(2, 2'400, "A k bob 5000 100").send(2, 2'410, "R k 999").recv(2, 2'450, "N 999 k");
  r.recv(2, 101'900, "T bob k");
  r.close(1, 600'000).close(2, 600'000);
  EXPECT_EQ(r.check().verdict, Verdict::conforms);
}

TEST(HistoryChecker, ALateReadIsNotALateAnswerWhenTheConnectionWasLastFoundEmptyInTime) {
  // bob's `T` is due at about 102 ms; the tester reads it at 180 ms, 78 ms
  // late with a tolerance of 10 ms. Read alone, that is a late answer. With
  // after_us = 101 ms (the tester last found the connection empty then and
  // was not scheduled again until 180 ms), it may have arrived on time.
  for (const std::int64_t after_us : {std::int64_t{-1}, std::int64_t{101'000}}) {
    Recorder r;
    r.connect(1, 0).connect(2, 0);
    r.send(1, 1'000, "A k alice 5000 0").recv(1, 1'100, "A 3 alice k");
    r.send(2, 2'400, "A k bob 5000 100").send(2, 2'410, "R k 999").recv(2, 2'450, "N 999 k");
    r.recv(2, 180'000, "T bob k", after_us);
    r.close(1, 600'000).close(2, 600'000);
    EXPECT_EQ(r.check().verdict, after_us < 0 ? Verdict::violation : Verdict::conforms) << "after_us " << after_us;
  }
}

// Eleven clients ask for a held key while the server stalls; after 40 ms
// all answers come at once: three were queued (only their probes' `N`
// arrives), eight found the queue full. Every order of the burst is possible
// until the holder releases at 50 ms and the key goes to the third of the
// queued (FIFO for some order of their instants inside the stall). A late
// waiter queues at 51 ms, certainly after the other two; when the key is
// released again it must go to one of them, not to the late one.
History stalled_burst(bool late_one_overtakes) {
  Recorder r;
  r.history().header.limits.max_waiters_per_key = 3;
  for (std::uint32_t conn = 1; conn <= 12; ++conn) r.connect(conn, 0);
  r.send(1, 500, "A k holder 9000 0").recv(1, 600, "A 5 holder k");
  for (std::uint32_t conn = 2; conn <= 12; ++conn) {
    const std::int64_t at = 1'000 + 100 * conn;
    r.send(conn, at, fmt::format("A k o{} 5000 300", conn)).send(conn, at + 10, fmt::format("R k {}", 900 + conn));
  }
  for (std::uint32_t conn = 2; conn <= 12; ++conn) {
    const bool queued = conn == 3 || conn == 6 || conn == 9;
    if (!queued) r.recv(conn, 40'000 + conn, fmt::format("B o{} k", conn));
    r.recv(conn, 40'020 + conn, fmt::format("N {} k", 900 + conn));
  }
  r.send(1, 50'000, "R k 5").recv(1, 50'100, "R 5 k").recv(9, 50'200, "A 6 o9 k");
  r.send(2, 51'000, "A k late 5000 300").send(2, 51'010, "R k 999").recv(2, 51'100, "N 999 k");
  r.send(9, 60'000, "R k 6").recv(9, 60'100, "R 6 k");
  if (late_one_overtakes) {
    r.recv(2, 60'200, "A 7 late k");
    r.recv(3, 301'800, "T o3 k").recv(6, 302'100, "T o6 k");
  } else {
    r.recv(3, 60'200, "A 7 o3 k");
    r.recv(6, 302'100, "T o6 k").recv(2, 351'500, "T late k");
  }
  for (std::uint32_t conn = 1; conn <= 12; ++conn) r.close(conn, 900'000);
  return r.history();
}

TEST(HistoryChecker, ABurstWhoseOrderIsUnknownIsDecidedAndFifoStillHolds) {
  const auto fair = check_history(stalled_burst(false));
  EXPECT_EQ(fair.verdict, Verdict::conforms) << summary_lines(fair).back();
  EXPECT_LT(fair.frontier_peak, 2'000u);
  const auto overtaken = check_history(stalled_burst(true));
  EXPECT_EQ(overtaken.verdict, Verdict::violation) << summary_lines(overtaken).back();
}

TEST(HistoryChecker, MissingTimeoutIsAViolation) {
  // bob's wait ends at about 102 ms and the connection stays open for
  // seconds: the contract owes him a `T` (the no-timeout bug).
  Recorder r;
  r.connect(1, 0).connect(2, 0);
  r.send(1, 1'000, "A k alice 5000 0").recv(1, 1'100, "A 3 alice k");
  r.send(2, 2'000, "A k bob 5000 100").send(2, 2'010, "R k 999").recv(2, 2'050, "N 999 k");
  r.close(1, 4'000'000).close(2, 4'000'000);
  EXPECT_EQ(r.check().verdict, Verdict::violation);
}

TEST(HistoryChecker, LifoHandOffIsAViolation) {
  // bob queued well before carol; the release must hand the key to bob.
  Recorder r;
  r.connect(1, 0).connect(2, 0).connect(3, 0);
  r.send(1, 1'000, "A k alice 5000 0").recv(1, 1'100, "A 3 alice k");
  r.send(2, 2'000, "A k bob 5000 2000").send(2, 2'010, "R k 999").recv(2, 2'050, "N 999 k");
  r.send(3, 20'000, "A k carol 5000 2000").send(3, 20'010, "R k 998").recv(3, 20'050, "N 998 k");
  r.send(1, 40'000, "R k 3").recv(1, 40'080, "R 3 k").recv(3, 40'090, "A 4 carol k");
  r.close(1, 600'000).close(2, 600'000).close(3, 600'000);
  EXPECT_EQ(r.check().verdict, Verdict::violation);
}

TEST(HistoryChecker, ExpiredHolderIsTakenOverAndSweptKeyAnswersN) {
  Recorder r;
  r.connect(1, 0).connect(2, 0);
  r.send(1, 1'000, "A k alice 50 0").recv(1, 1'100, "A 3 alice k");
  r.send(2, 60'000, "A k bob 50 0").recv(2, 60'100, "A 4 bob k");  // alice expired at ~51 ms: taken over
  // bob's lease ends at ~110 ms; 2 s later a sweep has certainly run.
  r.send(2, 2'200'000, "R k 4").recv(2, 2'200'100, "N 4 k");
  r.close(1, 3'000'000).close(2, 3'000'000);
  EXPECT_EQ(r.check().verdict, Verdict::conforms);
}

TEST(HistoryChecker, ReleaseOfAKeyThatMustHaveBeenSweptIsAViolation) {
  // bob's lease ended at ~110 ms; by 2.2 s two sweeps have run, so `R`
  // (instead of `N`) has no explanation.
  Recorder r;
  r.connect(2, 0);
  r.send(2, 60'000, "A k bob 50 0").recv(2, 60'100, "A 4 bob k");
  r.send(2, 2'200'000, "R k 4").recv(2, 2'200'100, "R 4 k");
  r.close(2, 3'000'000);
  EXPECT_EQ(r.check().verdict, Verdict::violation);
}

TEST(HistoryChecker, TokensMustIncreaseAcrossKeysAndRestarts) {
  Recorder r;
  r.connect(1, 0);
  r.send(1, 1'000, "A a alice 500 0").recv(1, 1'100, "A 10 alice a");
  r.close(1, 5'000).down(6'000).up(7'000);
  r.connect(2, 8'000);
  r.send(2, 9'000, "A b bob 500 0").recv(2, 9'100, "A 5 bob b");  // issued later, smaller token
  r.close(2, 20'000);
  const auto result = r.check();
  ASSERT_EQ(result.verdict, Verdict::violation);
  EXPECT_EQ(result.violations.front().check, "tokens");
}

// A server that was told to stop and still accepts (a shell that did not
// `exec` it exited first) can take connections after the `down`. They are
// no incarnation's the tester knows: here the old server, still holding
// `k`, refuses bob's try-lock, which the new incarnation (where `k` is
// free) would grant. Charged to the new incarnation that `T` is a
// violation; opened before the `up`, it is not judged, and the summary
// says so. Without an `up` after the `down`, the older reading stands.
TEST(HistoryChecker, ConnectionsOpenedWhileTheTargetIsDownAreNotJudged) {
  const auto record = [](bool with_up) {
    Recorder r;
    r.connect(1, 0);
    r.send(1, 1'000, "A k alice 60000 0").recv(1, 1'100, "A 10 alice k");
    r.down(5'000);
    r.connect(2, 6'000);
    r.send(2, 7'000, "A k bob 500 0").recv(2, 7'100, "T bob k");
    r.close(2, 8'000);
    if (with_up) r.up(9'000);
    r.connect(3, 10'000);
    r.send(3, 11'000, "A k carol 500 0").recv(3, 11'100, "A 12 carol k");
    r.close(3, 500'000);
    return r.check();
  };
  const auto with_up = record(true);
  EXPECT_EQ(with_up.verdict, Verdict::conforms) << summary_lines(with_up).back();
  EXPECT_EQ(with_up.limbo_connections, 1u);
  const auto lines = summary_lines(with_up);
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& line) {
    return line.starts_with("not judged: 1 connection(s) opened while the target was down");
  }));
  const auto without_up = record(false);
  EXPECT_EQ(without_up.verdict, Verdict::violation);
  EXPECT_EQ(without_up.limbo_connections, 0u);
}

// A violation soon after a restart is told as one: the story points at the
// restart (an old server still running) instead of at the limits, says what
// its `+ms` times count from, and tells a connection the server ended
// (`eof`) from one the tester closed.
TEST(HistoryChecker, AViolationSoonAfterARestartPointsAtTheRestart) {
  Recorder r;
  r.connect(1, 0);
  r.send(1, 1'000, "A k alice 60000 0").recv(1, 1'100, "A 10 alice k");
  r.down(5'000).up(9'000);
  r.connect(3, 10'000).connect(4, 10'000);
  r.send(3, 11'000, "A k carol 60000 0").recv(3, 11'100, "A 12 carol k");
  r.send(4, 12'000, "A k dave 60000 0").recv(4, 12'100, "A 13 dave k");  // held by carol: the contract says T
  r.eof(4, 13'000);
  r.close(3, 500'000);
  const auto result = r.check();
  ASSERT_EQ(result.verdict, Verdict::violation);
  const auto& finding = result.violations.front();
  EXPECT_EQ(finding.incarnation, 1u);
  std::string story;
  for (const auto& line : finding.story) story += line + "\n";
  EXPECT_NE(story.find("times count from the target's restart 1 (the `up` after its `down` at 9.000 ms into the "
                       "history)"),
            std::string::npos)
      << story;
  EXPECT_NE(story.find("after the target's restart 1"), std::string::npos) << story;
  EXPECT_NE(story.find("did not `exec` it"), std::string::npos) << story;
  EXPECT_EQ(story.find("a wrong limit would explain it"), std::string::npos) << story;
  EXPECT_NE(story.find("c4    eof      (the server closed it)"), std::string::npos) << story;
  EXPECT_EQ(story.find("c4    closed"), std::string::npos) << story;
}

// One sweep hands expired keys over in the order their holders' tokens
// were issued (docs/protocol.md, simple mode point 8). ka's holder has the
// older token (10), kb's the newer (11); both leases end at about 301 ms,
// and each key has a waiter whose probe shows it queued while the key was
// held. Nothing releases them: only a sweep hands them over, and both
// hand-offs arrive within a few ms, so one sweep made both. The waiter of
// ka must get the smaller token; swapped, it is a `tokens` violation that
// names the sweep.
TEST(HistoryChecker, OneSweepHandsKeysOverInTheOrderOfTheirHoldersTokens) {
  const auto record = [](std::uint64_t bob_token, std::uint64_t carol_token) {
    Recorder r;
    r.connect(1, 0).connect(2, 0).connect(3, 0);
    r.send(1, 1'000, "A ka alice 300 0").recv(1, 1'100, "A 10 alice ka");
    r.send(1, 1'200, "A kb alice 300 0").recv(1, 1'300, "A 11 alice kb");
    r.send(2, 5'000, "A ka bob 5000 3000").send(2, 5'010, "R ka 999").recv(2, 5'100, "N 999 ka");
    r.send(3, 6'000, "A kb carol 5000 3000").send(3, 6'010, "R kb 999").recv(3, 6'100, "N 999 kb");
    r.recv(2, 1'000'400, fmt::format("A {} bob ka", bob_token));
    r.recv(3, 1'000'500, fmt::format("A {} carol kb", carol_token));
    r.close(1, 9'000'000).close(2, 9'000'000).close(3, 9'000'000);
    return r.check();
  };
  const auto in_order = record(12, 13);
  EXPECT_EQ(in_order.verdict, Verdict::conforms) << summary_lines(in_order).back();
  const auto swapped = record(13, 12);
  ASSERT_EQ(swapped.verdict, Verdict::violation);
  ASSERT_EQ(swapped.violations.size(), 1u);
  EXPECT_EQ(swapped.violations.front().check, "tokens");
  EXPECT_NE(swapped.violations.front().summary.find("a sweep visits expired keys in the order their holders' tokens"),
            std::string::npos)
      << swapped.violations.front().summary;
}

TEST(HistoryChecker, DuplicateTokensAreAViolation) {
  Recorder r;
  r.connect(1, 0);
  r.send(1, 1'000, "A a alice 500 0").recv(1, 1'100, "A 10 alice a");
  r.send(1, 2'000, "A b alice 500 0").recv(1, 2'100, "A 10 alice b");
  r.close(1, 20'000);
  EXPECT_EQ(r.check().verdict, Verdict::violation);
}

TEST(HistoryChecker, MalformedLinesAreAnsweredE) {
  Recorder ok;
  ok.connect(1, 0).send(1, 1'000, "A k").recv(1, 1'050, "E bad request").close(1, 50'000);
  EXPECT_EQ(ok.check().verdict, Verdict::conforms);
  Recorder extra;
  extra.connect(1, 0).send(1, 1'000, "A k alice 10 0").recv(1, 1'050, "E why").close(1, 50'000);
  EXPECT_EQ(extra.check().verdict, Verdict::violation);
}

TEST(HistoryChecker, BusyOnlyAtTheLimit) {
  // max_waiters_per_key 1: carol's `B` is right while bob waits, wrong
  // before anyone waits (the busy-early bug).
  for (const bool bob_waits : {true, false}) {
    Recorder r;
    r.history().header.limits.max_waiters_per_key = 1;
    r.connect(1, 0).connect(2, 0).connect(3, 0);
    r.send(1, 1'000, "A k alice 5000 0").recv(1, 1'100, "A 3 alice k");
    if (bob_waits) r.send(2, 2'000, "A k bob 5000 900").send(2, 2'010, "R k 999").recv(2, 2'050, "N 999 k");
    r.send(3, 3'000, "A k carol 5000 900").recv(3, 3'050, "B carol k");
    if (bob_waits) r.recv(2, 902'500, "T bob k");
    r.close(1, 2'000'000).close(2, 2'000'000).close(3, 2'000'000);
    EXPECT_EQ(r.check().verdict, bob_waits ? Verdict::conforms : Verdict::violation) << bob_waits;
  }
}

TEST(HistoryFormat, RoundTripsAndRefusesDamage) {
  Recorder r;
  r.connect(1, 0).send(1, 10, "A k alice 5 0").recv(1, 20, "A 1 alice k").close(1, 30);
  std::stringstream text;
  write_history(text, r.history());
  auto read = read_history(text);
  ASSERT_TRUE(std::holds_alternative<History>(read));
  EXPECT_EQ(std::get<History>(read).events.size(), 4u);
  EXPECT_EQ(std::get<History>(read).events[1].line, "A k alice 5 0");
  // Lines with escapes, one the fast reader takes (quotes, backslash, tab)
  // and one it leaves to the general reader (a control byte written \u0001),
  // and after_us, read back exactly.
  Recorder odd;
  odd.connect(1, 0).send(1, 10, "A \"k\\ x\t 5 0").send(1, 11, std::string("A k\x01 o 5 0")).recv(1, 20, "E bad", 15);
  std::stringstream odd_text;
  write_history(odd_text, odd.history());
  auto odd_read = read_history(odd_text);
  ASSERT_TRUE(std::holds_alternative<History>(odd_read));
  const auto& events = std::get<History>(odd_read).events;
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[1].line, "A \"k\\ x\t 5 0");
  EXPECT_EQ(events[2].line, std::string("A k\x01 o 5 0"));
  EXPECT_EQ(events[3].after_us, 15);
  EXPECT_EQ(events[1].after_us, -1);
  std::stringstream late_after(header_line(Header{}) + "\n{\"t_us\":5,\"ev\":\"recv\",\"conn\":1,\"line\":\"N 1 k\",\"after_us\":6}\n");
  EXPECT_TRUE(std::holds_alternative<ReadError>(read_history(late_after)));  // after_us above t_us
  std::stringstream wrong_schema("{\"schema\":\"other/9\"}\n");
  EXPECT_TRUE(std::holds_alternative<ReadError>(read_history(wrong_schema)));
  std::stringstream backwards(header_line(Header{}) + "\n{\"t_us\":5,\"ev\":\"up\"}\n{\"t_us\":4,\"ev\":\"up\"}\n");
  auto error = read_history(backwards);
  ASSERT_TRUE(std::holds_alternative<ReadError>(error));
  EXPECT_EQ(std::get<ReadError>(error).line, 3u);
}

TEST(PhaseSet, ForbidAndRequireWrapAroundThePeriod) {
  PhaseSet phases(1'000);
  phases.forbid_instants(1'990, 2'010);  // residues 990..999 and 0..10
  EXPECT_FALSE(phases.contains_instant(5));
  EXPECT_FALSE(phases.contains_instant(3'995));
  EXPECT_TRUE(phases.contains_instant(11));
  EXPECT_EQ(phases.size(), 1'000 - 21);
  phases.require_one_of(4'500, 4'520);
  EXPECT_EQ(phases.size(), 21);
  phases.forbid_instants(0, 999);
  EXPECT_TRUE(phases.empty());
}

TEST(PhaseSet, UniteJoinsAndNextInstantWraps) {
  PhaseSet a(1'000), b(1'000);
  a.require_one_of(10, 20);
  b.require_one_of(21, 30);
  a.unite(b);
  ASSERT_EQ(a.ranges().size(), 1u);  // touching ranges become one
  EXPECT_EQ(a.ranges().front(), std::make_pair(std::int64_t{10}, std::int64_t{30}));
  EXPECT_EQ(a.next_instant(5'000, -1), 5'010);
  EXPECT_EQ(a.next_instant(5'015, -1), 5'015);
  EXPECT_EQ(a.next_instant(5'031, -1), 6'010);  // past the last range: the next period
  PhaseSet none(1'000);
  none.forbid_instants(0, 999);
  EXPECT_EQ(none.next_instant(7, -1), -1);
}

}  // namespace
}  // namespace lockstep::history
