// The cluster node (impl/cluster/node.hpp) driven by hand, input by input,
// as a driver would drive it, with its outputs rendered as text: what a
// follower answers, that a leader answers only after the command comes back
// committed, and only on the connections it holds; which connections it
// closes when a request's fate becomes unknowable (leadership lost, a
// proposal failed) and that such a connection's waiters still leave with
// it; that a failed deadline is proposed again at the next tick and not
// before; that what is due goes into the log ahead of a request read
// between two ticks; that a new leader's heap comes from the applied table; that
// proposals batched into one entry all apply; that an old leadership's
// proposal committing late is not taken for a new one's; leader changes and
// waiters (a node that stops leading closes their connections; the next
// leader drops those no retry attached again, after the grace, and never
// grants them); the test clock (C
// instant by instant, markers after, lines held meanwhile; X; C on a
// follower); Close proposals; the in-flight bound; compaction, snapshots
// and the digest; and the answer-before-commit bug.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "impl/cluster/node.hpp"

namespace lockstep::cluster::testing {
namespace {

// Every output as one line of text, proposals first (each kind in its
// order): `propose#ID@EPOCH COMMAND`, `cN LINE`, `cN close`,
// `compaction@INDEX`.
std::string show(const NodeOutputs& out) {
  std::string text;
  const auto add = [&](const std::string& line) { text += (text.empty() ? "" : "\n") + line; };
  for (const auto& p : out.proposals) {
    const auto frames = decode_entry(p.bytes);
    EXPECT_TRUE(std::holds_alternative<std::vector<Framed>>(frames));
    for (const auto& f : std::get<std::vector<Framed>>(frames)) {
      // The command carries the proposal's epoch, which the line shows once.
      EXPECT_EQ(command_epoch(f.command), p.epoch.value);
      auto command = f.command;
      set_epoch(command, 0);
      add(fmt::format("propose#{}@{} {}", p.id, p.epoch.value, describe(command)));
    }
  }
  for (const auto& m : out.to_clients) {
    if (m.kind == ToClient::Kind::close) {
      add(fmt::format("c{} close", m.connection.value));
    } else {
      add(fmt::format("c{} {}", m.connection.value, to_client_line(m)));
    }
  }
  if (out.compaction) add(fmt::format("compaction@{}", out.compaction->index));
  return text;
}

NodeConfig config(bool test_clock = false) {
  NodeConfig c;
  c.test_clock = test_clock;
  return c;
}

// A node and a log: what it proposes waits until commit() puts it in the
// log, in order, one entry per proposal (or all in one entry).
struct Driver {
  Node node;
  LogIndex index = 0;
  std::vector<Proposal> proposed;

  explicit Driver(NodeConfig c = config()) : node(std::move(c)) {}

  std::string take(NodeOutputs out) {
    for (const auto& p : out.proposals) proposed.push_back(p);
    node.check_invariants();
    return show(out);
  }
  std::string line(std::uint64_t connection, std::string_view text, std::int64_t now = 0) {
    NodeOutputs out;
    node.on_line(ConnectionId{connection}, text, TimeMs{now}, out);
    return take(std::move(out));
  }
  std::string lead(std::uint64_t epoch, std::int64_t now = 0) {
    NodeOutputs out;
    node.on_leadership_gained(Epoch{epoch}, TimeMs{now}, out);
    return take(std::move(out));
  }
  std::string lose() {
    NodeOutputs out;
    node.on_leadership_lost(out);
    return take(std::move(out));
  }
  std::string tick(std::int64_t now) {
    NodeOutputs out;
    node.on_tick(TimeMs{now}, out);
    return take(std::move(out));
  }
  std::string close(std::uint64_t connection, std::int64_t now = 0) {
    NodeOutputs out;
    node.on_close(ConnectionId{connection}, TimeMs{now}, out);
    return take(std::move(out));
  }
  std::string fail(std::uint64_t proposal) {
    NodeOutputs out;
    node.on_proposal_failed(proposal, out);
    return take(std::move(out));
  }
  std::string entry(std::string_view bytes) {
    NodeOutputs out;
    node.on_committed(++index, bytes, out);
    return take(std::move(out));
  }
  // Commits what was proposed so far, one entry each; returns what that
  // produced (commits of later proposals included).
  std::string commit() {
    std::string text;
    while (!proposed.empty()) {
      auto batch = std::move(proposed);
      proposed.clear();
      for (const auto& p : batch) {
        const auto produced = entry(p.bytes);
        if (!produced.empty()) text += (text.empty() ? "" : "\n") + produced;
      }
    }
    return text;
  }
};

TEST(Node, AFollowerRedirectsAndProposesNothing) {
  Driver d;
  EXPECT_EQ(d.line(1, "A k alice 100 0"), "c1 E not-leader");
  d.node.on_leader_address("10.0.0.2:7878");
  EXPECT_EQ(d.line(1, "R k 7 laptop 3"), "c1 E not-leader 10.0.0.2:7878");
  EXPECT_EQ(d.line(1, "A k alice 100"), "c1 E expected: A <key> <owner> <lease_ms> <wait_ms> [<client> <seq>]");
  EXPECT_EQ(d.node.stats().redirects, 2u);
}

TEST(Node, ALeaderAnswersOnlyOnceTheCommandComesBackCommitted) {
  Driver d;
  EXPECT_EQ(d.lead(5), "");
  EXPECT_EQ(d.line(1, "A k alice 100 0 laptop 1", 40),
            "propose#1@5 Acquire(client laptop seq 1, c1, k alice lease 100 wait 0, @40)");
  EXPECT_EQ(d.node.in_flight(), 1u);
  EXPECT_EQ(d.commit(), "c1 A 1 alice k");
  EXPECT_EQ(d.node.in_flight(), 0u);
  EXPECT_EQ(d.node.machine().keys().at("k").expiry, TimeMs{140});  // stamped with the leader's clock
  // The retry on another connection: answered from the session, applied once.
  d.line(2, "A k alice 100 0 laptop 1", 50);
  EXPECT_EQ(d.commit(), "c2 A 1 alice k");
  EXPECT_EQ(d.node.machine().next_token(), Token{2});
}

TEST(Node, AnswersOnlyTheConnectionsItHolds) {
  Driver leader, follower;
  leader.lead(1);
  leader.line(1, "A k alice 100 0");
  // The follower applies the same entry; connection 1 is not its own.
  EXPECT_EQ(follower.entry(leader.proposed.at(0).bytes), "");
  EXPECT_EQ(leader.commit(), "c1 A 1 alice k");
  EXPECT_EQ(follower.node.digest(), leader.node.digest());
}

TEST(Node, LosingLeadershipClosesTheConnectionsWithRequestsInFlight) {
  Driver d;
  d.lead(1);
  d.line(1, "A k alice 100 0");
  d.commit();
  d.line(2, "A j bob 100 0");
  d.line(3, "R k 1");
  d.line(4, "A i carol 100 0");
  d.commit();  // bob's, the release and carol's are in the log...
  d.line(2, "A h bob 100 0");
  d.line(4, "A g carol 100 0");  // ...these two are not
  EXPECT_EQ(d.lose(), "c2 close\nc4 close");
  EXPECT_EQ(d.node.stats().connections_closed_unknown, 2u);
  EXPECT_EQ(d.line(1, "A k alice 100 0"), "c1 E not-leader");  // connection 1 stays usable
  // The lost proposals may still commit under the next leader: applied, no
  // answer (their connections are gone), and not taken for the node's own.
  EXPECT_EQ(d.commit(), "");
  EXPECT_EQ(d.node.machine().keys().size(), 4u);
}

TEST(Node, AFailedRequestClosesItsConnectionAndAFailedDeadlineWaitsForTheNextTick) {
  Driver d;
  d.lead(1);
  d.line(1, "A k alice 100 0");
  d.commit();
  d.line(2, "A j bob 100 0");
  EXPECT_EQ(d.fail(2), "c2 close");
  d.proposed.clear();  // never made it
  EXPECT_EQ(d.tick(99), "");
  EXPECT_EQ(d.tick(100), "propose#3@1 Expire(k, 1, @100)");
  EXPECT_EQ(d.tick(5'000), "");  // in flight, however long it takes
  d.proposed.clear();
  EXPECT_EQ(d.fail(3), "");       // not again at once: a driver that cannot propose would spin
  EXPECT_EQ(d.tick(5'001), "propose#4@1 Expire(k, 1, @5001)");
  EXPECT_EQ(d.commit(), "");
  EXPECT_TRUE(d.node.machine().keys().empty());
  EXPECT_EQ(d.fail(4), "");  // reported after it applied: nothing to do
}

TEST(Node, WhatIsDueGoesAheadOfARequestReadBetweenTicks) {
  Driver d;
  d.lead(1);
  d.line(1, "A k alice 100 0", 0);
  d.commit();  // alice holds k until 100
  // At 105, before any tick: the Expire due at 100 is proposed first (what
  // is due at an instant comes before that instant's requests), so bob's
  // Acquire finds k free instead of held past its lease.
  EXPECT_EQ(d.line(2, "A k bob 100 0", 105),
            "propose#2@1 Expire(k, 1, @105)\n"
            "propose#3@1 Acquire(client - seq 0, c2, k bob lease 100 wait 0, @105)");
  EXPECT_EQ(d.commit(), "c2 A 2 bob k");
  EXPECT_EQ(d.tick(110), "");  // proposed once: nothing left due
}

TEST(Node, AConnectionClosedForAFailedRequestLosesItsWaitersAtTheNextTick) {
  Driver d;
  d.lead(1);
  d.line(1, "A k alice 100 0");
  d.line(2, "A k bob 100 500");
  d.commit();
  EXPECT_EQ(d.line(2, "A j bob 100 0", 5), "propose#3@1 Acquire(client - seq 0, c2, j bob lease 100 wait 0, @5)");
  d.proposed.clear();
  EXPECT_EQ(d.fail(3), "c2 close");
  EXPECT_EQ(d.tick(6), "propose#4@1 Close(c2, @6)");  // as if bob had closed it
  EXPECT_EQ(d.commit(), "");
  EXPECT_EQ(d.node.machine().waiter_count(), 0u);
}

TEST(Node, ANewLeadersHeapComesFromTheAppliedTable) {
  Driver leader, follower;
  leader.lead(1);
  leader.line(1, "A k alice 100 0");
  leader.line(2, "A k bob 100 30");
  for (const auto& p : leader.proposed) follower.entry(p.bytes);
  EXPECT_EQ(follower.tick(500), "");  // following: nothing proposed
  EXPECT_EQ(follower.lead(2), "");
  EXPECT_EQ(follower.node.next_due(), TimeMs{30});
  EXPECT_EQ(follower.tick(500), "propose#1@2 Timeout(k, waiter 1, @500)\npropose#2@2 Expire(k, 1, @500)");
  EXPECT_EQ(follower.lose(), "");  // deadlines in flight close nothing
  EXPECT_EQ(follower.node.next_due(), std::nullopt);
}

// No ghost grants (docs/protocol.md, "Waiters and leader changes"): a node
// that stops leading closes its waiters' connections as well, so that their
// clients retry on the next leader; a connection with nothing pending stays.
TEST(Node, LosingLeadershipClosesTheConnectionsOfItsWaiters) {
  Driver d;
  d.lead(1);
  d.line(1, "A k alice 100 0");
  d.line(2, "A k bob 100 5000");
  d.line(3, "A j carol 100 0");
  d.commit();
  EXPECT_EQ(d.lose(), "c2 close");
  EXPECT_EQ(d.node.stats().connections_closed_waiting, 1u);
  EXPECT_EQ(d.line(3, "A j carol 100 0"), "c3 E not-leader");
}

// The next leader: its first command detaches the waiters of the earlier
// leadership; the one whose client retried there is attached again and
// keeps its place, the other is dropped by a Timeout at the end of the
// grace (silently) and its late retry hears T; the key goes to the one that
// came back.
TEST(Node, ANewLeaderDropsTheWaitersNoRetryAttachedWithinTheGrace) {
  auto with_grace = config();
  with_grace.waiter_grace_ms = DurationMs{300};
  Driver old_leader(with_grace), next(with_grace);
  old_leader.lead(1);
  old_leader.line(1, "A k alice 10000 0 a 1");
  old_leader.line(2, "A k bob 100 5000 b 1");
  old_leader.line(3, "A k carol 100 5000 c 1");
  for (const auto& p : old_leader.proposed) next.entry(p.bytes);
  EXPECT_EQ(next.lead(2, 50), "");
  EXPECT_EQ(next.tick(60), "");  // nothing of epoch 2 applied: nobody detached yet
  // carol's client comes back on the new leader: the first command of epoch
  // 2 detaches bob (and carol, whom her retry then attaches again).
  EXPECT_EQ(next.line(7, "A k carol 100 5000 c 1", 100),
            "propose#1@2 Acquire(client c seq 1, c7, k carol lease 100 wait 5000, @100)");
  EXPECT_EQ(next.commit(), "");
  EXPECT_EQ(next.node.next_due(), TimeMs{400});  // bob: 100 + the grace
  EXPECT_EQ(next.tick(399), "");
  EXPECT_EQ(next.tick(400), "propose#2@2 Timeout(k, waiter 1, @400)");
  EXPECT_EQ(next.commit(), "");  // no T: bob's connection is gone
  EXPECT_EQ(next.node.machine().waiter_count(), 1u);
  EXPECT_EQ(next.line(8, "A k bob 100 5000 b 1", 410),
            "propose#3@2 Acquire(client b seq 1, c8, k bob lease 100 wait 5000, @410)");
  EXPECT_EQ(next.commit(), "c8 T bob k");
  next.line(9, "R k 1 a 2", 420);
  EXPECT_EQ(next.commit(), "c9 R 1 k\nc7 A 2 carol k");
}

// The ghost the rule is for: the holder's lease ends right after the
// leader change, before any client came back. The Expire (the first command
// of the new leadership) detaches both waiters and passes over them: the key
// is free at once, not held by a grant nobody hears.
TEST(Node, AnExpireAfterALeaderChangePassesOverTheWaitersNobodyListensTo) {
  Driver old_leader, next;
  old_leader.lead(1);
  old_leader.line(1, "A k alice 100 0 a 1");
  old_leader.line(2, "A k bob 20000 5000 b 1");
  for (const auto& p : old_leader.proposed) next.entry(p.bytes);
  next.lead(2, 50);
  EXPECT_EQ(next.tick(100), "propose#1@2 Expire(k, 1, @100)");
  EXPECT_EQ(next.commit(), "");
  EXPECT_TRUE(next.node.machine().keys().empty());
  EXPECT_EQ(next.line(3, "A k dave 100 0 d 1", 110),
            "propose#2@2 Acquire(client d seq 1, c3, k dave lease 100 wait 0, @110)");
  EXPECT_EQ(next.commit(), "c3 A 2 dave k");
}

TEST(Node, ProposalsBatchedIntoOneEntryAllApply) {
  Driver d;
  d.lead(1);
  d.line(1, "A a alice 100 0");
  d.line(2, "A b bob 100 0");
  d.line(3, "A c carol 100 0");
  std::string batch;
  for (const auto& p : d.proposed) batch += p.bytes;
  d.proposed.clear();
  EXPECT_EQ(d.entry(batch), "c1 A 1 alice a\nc2 A 2 bob b\nc3 A 3 carol c");
  EXPECT_EQ(d.node.applied(), 1u);
  EXPECT_EQ(d.node.in_flight(), 0u);
  EXPECT_EQ(d.entry(""), "");  // an empty entry (a Raft no-op) moves the index only
  EXPECT_EQ(d.node.applied(), 2u);
  EXPECT_EQ(d.entry("garbage"), "");
  EXPECT_EQ(d.node.rejected_commands(), 1u);
}

TEST(Node, AnOldLeadershipsProposalIsNotTakenForANewOnes) {
  Driver d;
  d.lead(1);
  d.line(1, "A k alice 100 0");
  const auto old = d.proposed.at(0);  // proposal 1 of epoch 1
  d.proposed.clear();
  EXPECT_EQ(d.lose(), "c1 close");
  d.lead(3);
  d.line(2, "A j bob 100 0");  // proposal 2 of epoch 3
  // Epoch 1's proposal commits late: applied, but not bob's.
  EXPECT_EQ(d.entry(old.bytes), "");
  EXPECT_EQ(d.node.in_flight(), 1u);
  EXPECT_EQ(d.commit(), "c2 A 2 bob j");
}

TEST(Node, CloseProposedOnlyForConnectionsWithWaitersOrRequestsInFlight) {
  Driver d;
  d.lead(1);
  d.line(1, "A k alice 100 0");
  d.commit();
  d.line(2, "A k bob 100 500");
  d.commit();
  EXPECT_EQ(d.close(1, 10), "");  // a holder's close: its lock stays
  EXPECT_EQ(d.close(2, 10), "propose#3@1 Close(c2, @10)");
  EXPECT_EQ(d.commit(), "");
  EXPECT_EQ(d.node.machine().waiter_count(), 0u);
  EXPECT_EQ(d.close(2, 11), "");  // not known any more
}

TEST(Node, InFlightRequestsAreBounded) {
  NodeConfig c = config();
  c.in_flight_max = 2;
  Driver d(c);
  d.lead(1);
  d.line(1, "A a o 100 0");
  d.line(1, "A b o 100 0");
  EXPECT_EQ(d.line(1, "A c o 100 0"), "c1 E too many requests in flight");
  d.commit();
  EXPECT_EQ(d.line(1, "A c o 100 0"), "propose#3@1 Acquire(client - seq 0, c1, c o lease 100 wait 0, @0)");
}

TEST(Node, AnOverlongLineIsEThenTheConnectionEnds) {
  Driver d;
  d.lead(1);
  const std::string line = "A " + std::string(1'100, 'k') + " o 1 0";
  EXPECT_EQ(d.line(1, line), "c1 E line longer than 1024 bytes\nc1 close");
}

TEST(Node, SnapshotsAreOfferedForCompactionAndRestoreTheSameState) {
  NodeConfig c = config();
  c.snapshot_every_entries = 3;
  c.log_keep_entries = 2;
  Driver d(c);
  d.lead(1);
  for (int i = 0; i < 3; ++i) d.line(1, fmt::format("A k{} o 100 0", i));
  d.commit();
  EXPECT_EQ(d.tick(1), "");  // taken at 3, offered once 2 more applied
  d.line(1, "A k3 o 100 0");
  d.line(1, "A k4 o 100 0");
  d.commit();
  NodeOutputs out;
  d.node.on_tick(TimeMs{2}, out);
  ASSERT_TRUE(out.compaction);
  EXPECT_EQ(out.compaction->index, 3u);
  // A node restored from it, then fed the log after it, holds the same state.
  Driver copy;
  copy.node.restore(*out.compaction, out);
  EXPECT_NE(copy.node.digest(), d.node.digest());
  copy.index = 3;
  Driver replay;
  replay.lead(1);
  for (int i = 3; i < 5; ++i) replay.line(1, fmt::format("A k{} o 100 0", i));
  for (const auto& p : replay.proposed) copy.entry(p.bytes);
  EXPECT_EQ(copy.node.applied(), d.node.applied());
  EXPECT_EQ(copy.node.digest(), d.node.digest());
  NodeOutputs ignored;
  EXPECT_THROW(copy.node.restore(TableSnapshot{7, "bad bytes"}, ignored), std::invalid_argument);
  EXPECT_EQ(copy.node.digest(), d.node.digest());
}

TEST(NodeBugs, AnswerBeforeCommitGrantsAtOnce) {
  NodeConfig c = config();
  c.bug = ClusterBug::answer_before_commit;
  Driver d(c);
  d.lead(1);
  EXPECT_EQ(d.line(1, "A k alice 100 0"),
            "propose#1@1 Acquire(client - seq 0, c1, k alice lease 100 wait 0, @0)\nc1 A 1 alice k");
}

// ---- the test clock ------------------------------------------------------------------

TEST(NodeTestClock, CAdvancesInstantByInstantThenSendsTheMarkers) {
  Driver d(config(true));
  d.lead(1);
  d.line(1, "A k alice 100 0");
  d.line(2, "A k bob 50 1000");
  d.commit();
  // C 300: alice's Expire at 100 hands k to bob (lease 50 from 100), whose
  // Expire is then due at 150: two instants, each once the one before it
  // is applied; the markers only after both.
  EXPECT_EQ(d.line(1, "C 300"), "propose#3@1 Expire(k, 1, @100)");
  d.line(3, "A k carol 10 0");  // read during the advance: held
  EXPECT_EQ(d.entry(d.proposed.at(0).bytes), "propose#4@1 Expire(k, 2, @150)\nc2 A 2 bob k");
  d.proposed.erase(d.proposed.begin());
  EXPECT_EQ(d.entry(d.proposed.at(0).bytes),
            "propose#5@1 Acquire(client - seq 0, c3, k carol lease 10 wait 0, @300)\nc1 C 300\nc2 C 300\nc3 C 300");
  d.proposed.erase(d.proposed.begin());
  EXPECT_EQ(d.commit(), "c3 A 3 carol k");
  EXPECT_EQ(d.line(1, "C 299"), "c1 E C must not move the clock back");
  EXPECT_EQ(d.line(1, "C x"), "c1 E expected C <now_ms>");
  EXPECT_EQ(d.line(1, "C 300"), "c1 C 300\nc2 C 300\nc3 C 300");  // a barrier
}

TEST(NodeTestClock, MarkersWaitForEveryRequestReadBeforeTheC) {
  Driver d(config(true));
  d.lead(1);
  d.line(1, "A k alice 100 0");
  EXPECT_EQ(d.line(2, "C 0"), "");
  EXPECT_EQ(d.commit(), "c1 A 1 alice k\nc1 C 0\nc2 C 0");
}

TEST(NodeTestClock, XDropsTheWaitersThenClosesOnceTheCloseIsApplied) {
  Driver d(config(true));
  d.lead(1);
  d.line(1, "A k alice 100 0");
  d.line(2, "A k bob 100 1000");
  d.commit();
  EXPECT_EQ(d.line(2, "X"), "propose#3@1 Close(c2, @0)");
  EXPECT_EQ(d.line(2, "A j bob 100 0"), "");  // after X: discarded
  EXPECT_EQ(d.commit(), "c2 close");
  EXPECT_EQ(d.node.machine().waiter_count(), 0u);
  EXPECT_EQ(d.line(1, "X"), "c1 close");  // nothing to drop: at once
}

TEST(NodeTestClock, AFollowerMovesItsClockAndSendsTheMarkersAtOnce) {
  Driver d(config(true));
  EXPECT_EQ(d.line(1, "C 40"), "c1 C 40");
  EXPECT_EQ(d.node.test_clock_now(), TimeMs{40});
}

TEST(NodeTestClock, WithoutTheTestClockCAndXAreMalformed) {
  Driver d;
  d.lead(1);
  EXPECT_EQ(d.line(1, "C 40"), "c1 E unknown request; expected A or R");
  EXPECT_EQ(d.line(1, "X"), "c1 E unknown request; expected A or R");
}

}  // namespace
}  // namespace lockstep::cluster::testing
