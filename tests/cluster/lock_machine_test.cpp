// The replicated lock table, command by command: the cluster rules that
// differ from simple mode (no takeover in place, Expire and Timeout checked
// when applied), sessions (a retry is answered from its session and applied
// once; the window and the LRU bound; another request reusing an applied
// number is refused), leader changes (a newer epoch detaches the older
// waiters, which are never granted: dropped by a hand-off or a Timeout,
// attached again by a retry), snapshots (restore gives back the same table,
// bytes and behaviour), garbage entries, and each injected bug changing what
// the table does.
#include <gtest/gtest.h>

#include "impl/assert.hpp"
#include "tests/cluster/helpers.hpp"

namespace lockstep::cluster::testing {
namespace {

TEST(LockMachine, GrantsQueuesAndHandsOffFifoOnRelease) {
  Driven d;
  EXPECT_EQ(d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0)), "c1 A 1 alice k");
  EXPECT_EQ(d.run(acquire(2, 1, 2, "k", "bob", 50, 1000, 10)), "");
  EXPECT_EQ(d.run(acquire(3, 1, 3, "k", "carol", 50, 1000, 20)), "");
  EXPECT_EQ(d.run(release(1, 2, 1, "k", 1, 30)), "c1 R 1 k; c2 A 2 bob k");
  EXPECT_EQ(d.machine.keys().at("k").expiry, TimeMs{80});  // bob's lease from the release
  EXPECT_EQ(d.run(release(2, 2, 2, "k", 2, 40)), "c2 R 2 k; c3 A 3 carol k");
  EXPECT_EQ(d.run(release(3, 2, 3, "k", 3, 50)), "c3 R 3 k");
  EXPECT_TRUE(d.machine.keys().empty());
}

// A key's queue reads as a std::map whether or not it holds its map: empty,
// it finds nothing and iterates nothing; it keeps FIFO order by id; the
// last waiter's removal leaves it empty again; copies are deep and compare
// by content.
TEST(LockMachine, WaiterQueueReadsAsAMapAndIsEmptyAgainAfterItsLastWaiter) {
  using Queue = LockMachine::WaiterQueue;
  const auto waiter = [](std::uint64_t id, std::string owner) {
    LockMachine::Waiter w;
    w.id = WaiterId{id};
    w.owner = std::move(owner);
    return w;
  };
  Queue queue;
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.size(), 0u);
  EXPECT_EQ(queue.begin(), queue.end());
  EXPECT_EQ(queue.find(WaiterId{1}), queue.end());
  EXPECT_FALSE(queue.contains(WaiterId{1}));
  EXPECT_THROW(queue.at(WaiterId{1}), std::out_of_range);
  queue.emplace(WaiterId{3}, waiter(3, "carol"));
  queue.emplace(WaiterId{2}, waiter(2, "bob"));
  EXPECT_FALSE(queue.emplace(WaiterId{2}, waiter(2, "again")).second);
  ASSERT_EQ(queue.size(), 2u);
  EXPECT_EQ(queue.begin()->second.owner, "bob");
  EXPECT_EQ(queue.rbegin()->second.owner, "carol");
  const Queue copy = queue;
  EXPECT_EQ(copy, queue);
  queue.erase(queue.find(WaiterId{2}));
  EXPECT_NE(copy, queue);
  EXPECT_EQ(copy.size(), 2u);
  queue.erase(queue.find(WaiterId{3}));
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.begin(), queue.end());
  EXPECT_EQ(queue, Queue{});
  EXPECT_NE(copy, queue);
}

TEST(LockMachine, NeverTakesOverAnExpiredKeyInPlace) {
  Driven d;
  d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
  // Long past alice's expiry, but no Expire applied: k is held.
  EXPECT_EQ(d.run(acquire(2, 1, 2, "k", "bob", 100, 0, 500)), "c2 T bob k");
  EXPECT_EQ(d.run(acquire(2, 2, 2, "k", "bob", 100, 50, 500)), "");
  EXPECT_EQ(d.machine.waiter_count(), 1u);
  // alice's token still releases it (it is still hers), and bob gets it.
  EXPECT_EQ(d.run(release(1, 2, 1, "k", 1, 510)), "c1 R 1 k; c2 A 2 bob k");
}

TEST(LockMachine, ExpireChecksTheTokenThenHandsOnOrDeletes) {
  Driven d;
  d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
  d.run(acquire(2, 1, 2, "k", "bob", 70, 1000, 10));
  EXPECT_EQ(d.run(Expire{"k", Token{7}, TimeMs{100}}), "");  // not the holder's token
  EXPECT_EQ(d.machine.keys().at("k").token, Token{1});
  EXPECT_EQ(d.run(Expire{"k", Token{1}, TimeMs{100}}), "c2 A 2 bob k");
  EXPECT_EQ(d.machine.keys().at("k").expiry, TimeMs{170});  // lease from the Expire's instant
  EXPECT_EQ(d.run(Expire{"k", Token{1}, TimeMs{101}}), "");  // a repeat is harmless
  EXPECT_EQ(d.run(Expire{"k", Token{2}, TimeMs{170}}), "");  // no waiter: deleted
  EXPECT_TRUE(d.machine.keys().empty());
  EXPECT_EQ(d.run(release(1, 2, 1, "k", 1, 171)), "c1 N 1 k");
}

TEST(LockMachine, TimeoutAnswersOnlyAWaiterStillQueued) {
  Driven d;
  d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
  const auto queued = d.apply(acquire(2, 1, 2, "k", "bob", 70, 50, 10));
  ASSERT_EQ(queued.deadlines.size(), 1u);
  const WaiterId bob{queued.deadlines[0].target.id};
  EXPECT_EQ(queued.deadlines[0].at, TimeMs{60});
  EXPECT_EQ(d.run(Timeout{"other", bob, TimeMs{60}}), "");
  EXPECT_EQ(d.run(Timeout{"k", bob, TimeMs{60}}), "c2 T bob k");
  EXPECT_EQ(d.run(Timeout{"k", bob, TimeMs{61}}), "");
  EXPECT_EQ(d.machine.waiter_count(), 0u);
}

TEST(LockMachine, HandOffSkipsWaitersPastTheirDeadline) {
  // A release applied at bob's deadline, before bob's Timeout: bob is T
  // (never granted at or after his deadline) and carol gets the key.
  Driven d;
  d.run(acquire(1, 1, 1, "k", "alice", 1000, 0, 0));
  d.run(acquire(2, 1, 2, "k", "bob", 70, 50, 10));
  d.run(acquire(3, 1, 3, "k", "carol", 70, 500, 20));
  EXPECT_EQ(d.run(release(1, 2, 1, "k", 1, 60)), "c1 R 1 k; c2 T bob k; c3 A 2 carol k");
}

// docs/protocol.md, "Tokens": the last token is 2^64 - 1. Once it is issued,
// every acquire is E at once (whatever its key's state) and changes nothing,
// releases are served, and a waiter whose turn comes is T, its key deleted.
TEST(LockMachine, AfterTheLastTokenAcquiresAreErrorsAndWaitersTimeOut) {
  Driven d({Limits{}, SessionLimits{}, Token{UINT64_MAX - 1}, ClusterBug::none});
  EXPECT_EQ(d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0)), "c1 A 18446744073709551614 alice k");
  EXPECT_EQ(d.run(acquire(2, 1, 2, "k", "bob", 100, 500, 0)), "");
  EXPECT_EQ(d.run(acquire(3, 1, 3, "j", "carol", 100, 500, 0)), "c3 A 18446744073709551615 carol j");
  EXPECT_TRUE(d.machine.tokens_exhausted());
  EXPECT_EQ(d.run(acquire(4, 1, 4, "x", "dave", 100, 0, 10)), "c4 E tokens exhausted");
  EXPECT_EQ(d.run(acquire(4, 2, 4, "k", "dave", 100, 500, 10)), "c4 E tokens exhausted");
  EXPECT_EQ(d.machine.waiter_count(), 1u);
  EXPECT_FALSE(d.machine.keys().contains("x"));
  // alice's release is served; bob's turn comes and he is T; k is gone.
  EXPECT_EQ(d.run(release(1, 2, 1, "k", UINT64_MAX - 1, 20)), "c1 R 18446744073709551614 k; c2 T bob k");
  EXPECT_FALSE(d.machine.keys().contains("k"));
  EXPECT_EQ(d.run(release(3, 2, 3, "j", UINT64_MAX, 30)), "c3 R 18446744073709551615 j");
  // The exhausted counter survives a snapshot.
  Driven restored({Limits{}, SessionLimits{}, Token{1}, ClusterBug::none});
  restored.machine.restore(d.index, d.machine.snapshot());
  EXPECT_TRUE(restored.machine.tokens_exhausted());
}

TEST(LockMachine, LimitsAnswerBusyAsInSimpleMode) {
  Driven d({tight_limits(), SessionLimits{}, Token{1}, ClusterBug::none});
  d.run(acquire(1, 1, 1, "a", "o", 100, 0, 0));
  d.run(acquire(1, 2, 1, "b", "o", 100, 0, 0));
  EXPECT_EQ(d.run(acquire(1, 3, 1, "c", "o", 100, 100, 0)), "c1 B o c");         // max_keys
  EXPECT_EQ(d.run(acquire(1, 4, 1, "a", "p", 100, 0, 0)), "c1 T p a");           // wait 0: T, not B
  d.run(acquire(1, 5, 1, "a", "p", 100, 100, 0));
  d.run(acquire(1, 6, 1, "a", "q", 100, 100, 0));
  EXPECT_EQ(d.run(acquire(1, 7, 1, "a", "r", 100, 100, 0)), "c1 B r a");         // per key
  d.run(acquire(1, 8, 1, "b", "s", 100, 100, 0));
  EXPECT_EQ(d.run(acquire(1, 9, 1, "b", "t", 100, 100, 0)), "c1 B t b");         // global
}

TEST(LockMachine, CloseDropsTheConnectionsWaitersSilently) {
  Driven d;
  d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
  d.run(acquire(2, 1, 2, "k", "bob", 70, 1000, 10));
  d.run(acquire(3, 1, 3, "k", "carol", 70, 1000, 20));
  EXPECT_EQ(d.run(Close{ConnectionId{2}, TimeMs{30}}), "");
  EXPECT_EQ(d.run(Close{ConnectionId{1}, TimeMs{31}}), "");  // a holder's close keeps its lock
  EXPECT_EQ(d.run(release(1, 2, 9, "k", 1, 40)), "c9 R 1 k; c3 A 2 carol k");
}

TEST(LockMachine, StampedTimeNeverGoesBack) {
  Driven d;
  d.run(acquire(1, 1, 1, "a", "o", 100, 0, 500));
  d.run(acquire(1, 2, 1, "b", "o", 100, 0, 300));  // a new leader's clock behind
  EXPECT_EQ(d.machine.clock(), TimeMs{500});
  EXPECT_EQ(d.machine.keys().at("b").expiry, TimeMs{600});
}

// ---- sessions ------------------------------------------------------------------

TEST(LockMachineSessions, RetryIsAnsweredFromTheSessionAndAppliedOnce) {
  Driven d;
  EXPECT_EQ(d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0)), "c1 A 1 alice k");
  // The retry (say, after a leader change) arrives on a new connection.
  EXPECT_EQ(d.run(acquire(1, 1, 5, "k", "alice", 100, 0, 10)), "c5 A 1 alice k");
  EXPECT_EQ(d.machine.next_token(), Token{2});
  EXPECT_EQ(d.machine.waiter_count(), 0u);
  EXPECT_EQ(d.run(release(1, 2, 5, "k", 1, 20)), "c5 R 1 k");
  EXPECT_EQ(d.run(release(1, 2, 5, "k", 1, 21)), "c5 R 1 k");  // not N: the answer it had
}

TEST(LockMachineSessions, RetryOfAQueuedAcquireMovesItsWaiterAndLaterAnswers) {
  Driven d;
  d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
  EXPECT_EQ(d.run(acquire(2, 1, 2, "k", "bob", 70, 1000, 10)), "");
  EXPECT_EQ(d.run(acquire(2, 1, 6, "k", "bob", 70, 1000, 15)), "");  // still one waiter
  EXPECT_EQ(d.machine.waiter_count(), 1u);
  EXPECT_EQ(d.run(release(1, 2, 1, "k", 1, 20)), "c1 R 1 k; c6 A 2 bob k");
  EXPECT_EQ(d.run(acquire(2, 1, 7, "k", "bob", 70, 1000, 25)), "c7 A 2 bob k");
}

TEST(LockMachineSessions, RetryOfADroppedWaiterIsT) {
  Driven d;
  d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
  d.run(acquire(2, 1, 2, "k", "bob", 70, 1000, 10));
  d.run(Close{ConnectionId{2}, TimeMs{20}});
  EXPECT_EQ(d.run(acquire(2, 1, 3, "k", "bob", 70, 1000, 30)), "c3 T bob k");
  EXPECT_EQ(d.machine.waiter_count(), 0u);
}

TEST(LockMachineSessions, WindowKeepsTheLastSequenceNumbersAndRefusesOlder) {
  MachineConfig config;
  config.sessions = {8, 2};
  Driven d(config);
  d.run(acquire(1, 1, 1, "a", "o", 100, 0, 0));
  d.run(acquire(1, 3, 1, "b", "o", 100, 0, 0));
  // 2 is within the window (above 3 - 2) and was never applied: new.
  EXPECT_EQ(d.run(acquire(1, 2, 1, "c", "o", 100, 0, 0)), "c1 A 3 o c");
  // 1 is at 3 - 2: forgotten, so refused rather than risk a second grant.
  EXPECT_EQ(d.run(acquire(1, 1, 1, "a", "o", 100, 0, 0)), "c1 E stale request");
  EXPECT_EQ(d.run(acquire(1, 3, 1, "b", "o", 100, 0, 0)), "c1 A 2 o b");
}

TEST(LockMachineSessions, ClientIdsAreAnyPrintableStrings) {
  Driven d;
  const Session laptop{"alice@laptop#3", 1};
  const Session phone{"alice@phone#1", 1};
  EXPECT_EQ(show(d.apply(Acquire{laptop, ConnectionId{1}, "k", "alice", DurationMs{100}, DurationMs{0}, TimeMs{0}})
                     .responses),
            "c1 A 1 alice k");
  // Another client with the same sequence number is another request.
  EXPECT_EQ(show(d.apply(Acquire{phone, ConnectionId{2}, "k", "alice", DurationMs{100}, DurationMs{0}, TimeMs{1}})
                     .responses),
            "c2 T alice k");
  EXPECT_EQ(show(d.apply(Acquire{laptop, ConnectionId{3}, "k", "alice", DurationMs{100}, DurationMs{0}, TimeMs{2}})
                     .responses),
            "c3 A 1 alice k");
  EXPECT_EQ(d.machine.sessions().client_count(), 2u);
}

// A client evicted while its waiter is queued, then seen again with the same
// sequence number, is a new request; the old waiter's later answer must not
// overwrite what the session now records for that number.
TEST(LockMachineSessions, AnOldWaiterDoesNotOverwriteAReusedSequenceNumber) {
  MachineConfig config;
  config.sessions = {1, 4};
  Driven d(config);
  d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
  EXPECT_EQ(d.run(acquire(2, 1, 2, "k", "bob", 100, 1000, 1)), "");  // queued; client 1 evicted
  d.run(acquire(3, 1, 3, "j", "carol", 100, 0, 2));                   // client 2 evicted
  EXPECT_EQ(d.run(acquire(2, 1, 5, "j", "bob", 100, 0, 3)), "c5 T bob j");  // new again
  EXPECT_EQ(d.run(release(0, 0, 1, "k", 1, 4)), "c1 R 1 k; c2 A 3 bob k");  // the old waiter granted
  EXPECT_EQ(d.run(acquire(2, 1, 6, "j", "bob", 100, 0, 5)), "c6 T bob j");  // the retry hears its own answer
}

// A client that reuses a sequence number for another request (a program
// run twice with one client id) is refused, never told what the first
// request came to, and nothing changes: the queued acquire keeps its
// connection and is granted there.
TEST(LockMachineSessions, AnotherRequestUnderAnAppliedNumberIsRefused) {
  Driven d;
  d.run(acquire(1, 1, 1, "printer", "alice", 100, 0, 0));
  EXPECT_EQ(d.run(acquire(1, 1, 2, "scanner", "alice", 100, 0, 1)), "c2 E session reused for another request");
  EXPECT_FALSE(d.machine.keys().contains("scanner"));
  d.run(acquire(2, 1, 3, "printer", "bob", 100, 1000, 2));
  EXPECT_EQ(d.run(release(2, 1, 4, "printer", 1, 3)), "c4 E session reused for another request");
  // Only the lease or the wait differing is another request too.
  EXPECT_EQ(d.run(acquire(2, 1, 5, "printer", "bob", 100, 999, 4)), "c5 E session reused for another request");
  EXPECT_EQ(d.run(acquire(1, 1, 6, "printer", "alice", 101, 0, 5)), "c6 E session reused for another request");
  // The same request is a retry, answered from its session.
  EXPECT_EQ(d.run(acquire(1, 1, 7, "printer", "alice", 100, 0, 6)), "c7 A 1 alice printer");
  EXPECT_EQ(d.run(release(1, 2, 1, "printer", 1, 7)), "c1 R 1 printer; c3 A 2 bob printer");
  // A release reused for another token: refused; the same one: its R again.
  EXPECT_EQ(d.run(release(1, 2, 8, "printer", 2, 8)), "c8 E session reused for another request");
  EXPECT_EQ(d.run(release(1, 2, 9, "printer", 1, 9)), "c9 R 1 printer");
  EXPECT_EQ(d.machine.keys().at("printer").token, Token{2});
}

// The digest survives a waiter's answer: once queued, then granted, the
// request's outcome still knows what the request asked.
TEST(LockMachineSessions, ARequestReusingANumberIsRefusedAfterItsWaiterWasAnswered) {
  Driven d;
  d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
  d.run(acquire(2, 1, 2, "k", "bob", 100, 1000, 1));
  EXPECT_EQ(d.run(release(1, 2, 1, "k", 1, 2)), "c1 R 1 k; c2 A 2 bob k");
  EXPECT_EQ(d.run(acquire(2, 1, 3, "j", "bob", 100, 0, 3)), "c3 E session reused for another request");
  EXPECT_EQ(d.run(acquire(2, 1, 4, "k", "bob", 100, 1000, 4)), "c4 A 2 bob k");
}

// The session-ignores-request bug is the old behaviour: the reused number
// hears the first request's outcome.
TEST(LockMachineBugs, SessionIgnoresRequestAnswersTheOtherRequestsOutcome) {
  MachineConfig config;
  config.bug = ClusterBug::session_ignores_request;
  Driven d(config);
  d.run(acquire(1, 1, 1, "printer", "alice", 100, 0, 0));
  EXPECT_EQ(d.run(acquire(1, 1, 2, "scanner", "alice", 100, 0, 1)), "c2 A 1 alice printer");
}

TEST(LockMachineSessions, ClientTableEvictsTheLeastRecentlyUsed) {
  MachineConfig config;
  config.sessions = {2, 4};
  Driven d(config);
  d.run(acquire(1, 1, 1, "a", "o", 100, 0, 0));  // index 1
  d.run(acquire(2, 1, 2, "b", "o", 100, 0, 0));  // index 2
  d.run(acquire(1, 1, 1, "a", "o", 100, 0, 0));  // client 1's retry: used at index 3
  d.run(acquire(3, 1, 3, "c", "p", 100, 0, 0));  // evicts client 2 (last used at index 2)
  EXPECT_EQ(d.machine.sessions().client_count(), 2u);
  EXPECT_EQ(d.run(acquire(1, 1, 1, "a", "o", 100, 0, 0)), "c1 A 1 o a");  // still cached
  // Client 2 was forgotten: its retry is new again (the bound's cost).
  EXPECT_EQ(d.run(acquire(2, 1, 2, "b", "o", 100, 0, 0)), "c2 T o b");
}

// ---- leader changes: no ghost grants ----------------------------------------------

// A table with alice holding k and bob, then carol, queued under epoch 1.
Driven two_waiters_of_epoch_1(MachineConfig config = {}) {
  Driven d(std::move(config));
  d.run(at_epoch(acquire(1, 1, 1, "k", "alice", 100, 0, 0), 1));
  d.run(at_epoch(acquire(2, 1, 2, "k", "bob", 100, 1000, 10), 1));
  d.run(at_epoch(acquire(3, 1, 3, "k", "carol", 100, 1000, 20), 1));
  return d;
}

TEST(LockMachineLeaderChange, TheFirstCommandOfANewerEpochDetachesEveryOlderWaiter) {
  MachineConfig config;
  config.waiter_grace_ms = DurationMs{100};
  Driven d = two_waiters_of_epoch_1(config);
  EXPECT_EQ(d.machine.epoch(), 1u);
  const auto detaching = d.apply(at_epoch(acquire(4, 1, 4, "j", "dave", 100, 0, 50), 2));
  EXPECT_EQ(d.machine.epoch(), 2u);
  for (const auto& [id, waiter] : d.machine.keys().at("k").queue) {
    EXPECT_EQ(waiter.detached_at, TimeMs{50}) << waiter.owner;
    // Due at the end of the grace, before its deadline: the heap is told.
    EXPECT_EQ(d.machine.due_at(waiter), TimeMs{150}) << waiter.owner;
  }
  ASSERT_EQ(detaching.deadlines.size(), 3u);  // bob's, carol's, then dave's lease
  EXPECT_EQ(detaching.deadlines[0].at, TimeMs{150});
  EXPECT_EQ(detaching.deadlines[1].at, TimeMs{150});
  // A command of an older epoch (a deposed leader's, committed late) changes
  // nothing of that.
  d.run(at_epoch(acquire(5, 1, 5, "j", "erin", 100, 0, 60), 1));
  EXPECT_EQ(d.machine.epoch(), 2u);
}

// The ghost grant the rule is for: bob's client never came back after the
// leader change, so when alice's lease ends the key must not go to bob
// (nobody would hear it, and the key would be held for bob's lease).
TEST(LockMachineLeaderChange, AHandOffDropsDetachedWaitersInsteadOfGrantingThem) {
  Driven d = two_waiters_of_epoch_1();
  EXPECT_EQ(d.run(at_epoch(Expire{"k", Token{1}, TimeMs{100}}, 2)), "");
  EXPECT_TRUE(d.machine.keys().empty());
  // Their retries, however late, hear T: they can no longer be granted.
  EXPECT_EQ(d.run(at_epoch(acquire(2, 1, 7, "k", "bob", 100, 1000, 110), 2)), "c7 T bob k");
  EXPECT_EQ(d.run(at_epoch(acquire(3, 1, 8, "k", "carol", 100, 1000, 120), 2)), "c8 T carol k");
  EXPECT_TRUE(d.machine.keys().empty());
  EXPECT_EQ(d.machine.next_token(), Token{2});
}

TEST(LockMachineLeaderChange, ARetryUnderTheNewEpochAttachesTheWaiterAgainInItsPlace) {
  MachineConfig config;
  config.waiter_grace_ms = DurationMs{100};
  Driven d = two_waiters_of_epoch_1(config);
  d.run(at_epoch(acquire(4, 1, 4, "j", "dave", 100, 0, 50), 2));
  // carol's client comes back on the new leader; bob's does not.
  const auto retried = d.apply(at_epoch(acquire(3, 1, 9, "k", "carol", 100, 1000, 60), 2));
  EXPECT_TRUE(retried.responses.empty());
  const auto& carol = d.machine.keys().at("k").queue.rbegin()->second;
  EXPECT_EQ(carol.owner, "carol");
  EXPECT_FALSE(carol.detached_at);
  EXPECT_EQ(carol.connection, ConnectionId{9});
  ASSERT_EQ(retried.deadlines.size(), 1u);  // due at its deadline again
  EXPECT_EQ(retried.deadlines[0].at, TimeMs{1020});
  // alice releases: bob, ahead of carol, is dropped; carol gets the key.
  EXPECT_EQ(d.run(at_epoch(release(1, 2, 1, "k", 1, 70), 2)), "c1 R 1 k; c9 A 3 carol k");
  EXPECT_EQ(d.run(at_epoch(acquire(2, 1, 10, "k", "bob", 100, 1000, 80), 2)), "c10 T bob k");
}

TEST(LockMachineLeaderChange, ATimeoutDropsADetachedWaiterSilentlyAndLeavesOneNotDue) {
  MachineConfig config;
  config.waiter_grace_ms = DurationMs{100};
  Driven d = two_waiters_of_epoch_1(config);
  const auto bob = d.machine.keys().at("k").queue.begin()->first;
  const auto carol = d.machine.keys().at("k").queue.rbegin()->first;
  d.run(at_epoch(acquire(4, 1, 4, "j", "dave", 100, 0, 50), 2));
  d.run(at_epoch(acquire(3, 1, 9, "k", "carol", 100, 1000, 60), 2));  // carol attached again
  // The leader drops bob at the end of his grace: no T (his connection is
  // gone), and a retry of his hears T.
  EXPECT_EQ(d.run(at_epoch(Timeout{"k", bob, TimeMs{150}}, 2)), "");
  EXPECT_FALSE(d.machine.is_queued("k", bob));
  EXPECT_EQ(d.run(at_epoch(acquire(2, 1, 10, "k", "bob", 100, 1000, 160), 2)), "c10 T bob k");
  // A Timeout that finds carol attached again, before her deadline, leaves her.
  EXPECT_EQ(d.run(at_epoch(Timeout{"k", carol, TimeMs{170}}, 2)), "");
  EXPECT_TRUE(d.machine.is_queued("k", carol));
  EXPECT_EQ(d.run(at_epoch(Timeout{"k", carol, TimeMs{1020}}, 2)), "c9 T carol k");
}

// An Acquire proposed by a deposed leader and committed after a newer
// leadership's command queues a waiter whose connection is already gone:
// detached at once, never granted.
TEST(LockMachineLeaderChange, AStaleLeadershipsWaiterIsDetachedAtOnce) {
  Driven d;
  d.run(at_epoch(acquire(1, 1, 1, "k", "alice", 100, 0, 0), 2));
  d.run(at_epoch(acquire(2, 1, 2, "k", "bob", 100, 1000, 10), 1));
  EXPECT_EQ(d.machine.keys().at("k").queue.begin()->second.detached_at, TimeMs{10});
  // Even a retry from that leadership does not attach it.
  d.run(at_epoch(acquire(2, 1, 3, "k", "bob", 100, 1000, 15), 1));
  EXPECT_TRUE(d.machine.keys().at("k").queue.begin()->second.detached_at);
  EXPECT_EQ(d.run(at_epoch(release(1, 2, 1, "k", 1, 20), 2)), "c1 R 1 k");
  EXPECT_TRUE(d.machine.keys().empty());
}

TEST(LockMachineBugs, GhostGrantHandsTheKeyToADetachedWaiter) {
  MachineConfig config;
  config.bug = ClusterBug::ghost_grant;
  Driven d = two_waiters_of_epoch_1(config);
  EXPECT_EQ(d.run(at_epoch(Expire{"k", Token{1}, TimeMs{100}}, 2)), "c2 A 2 bob k");
}

// ---- snapshots and garbage --------------------------------------------------------

Driven busy_table() {
  Driven d;
  d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
  d.run(acquire(2, 1, 2, "k", "bob", 70, 1000, 10));
  d.run(acquire(3, 1, 3, "k", "carol", 70, 1000, 20));
  d.run(acquire(3, 2, 3, "j", "carol", 30, 0, 25));
  d.run(release(3, 3, 3, "j", 99, 26));
  d.run(Close{ConnectionId{2}, TimeMs{27}});
  // A leader change: carol's waiter is detached, dave's (the new
  // leadership's) is not.
  d.run(at_epoch(acquire(4, 1, 4, "k", "dave", 70, 1000, 28), 2));
  return d;
}

TEST(LockMachineSnapshot, RestoreGivesBackTheSameTableAndBehaviour) {
  Driven original = busy_table();
  const std::string bytes = original.machine.snapshot();
  Driven copy;
  copy.machine.restore(original.index, bytes);
  copy.index = original.index;
  copy.machine.check_invariants();
  EXPECT_EQ(copy.machine.snapshot(), bytes);
  EXPECT_EQ(copy.machine.keys(), original.machine.keys());
  // Same answers afterwards: the retry cache, tokens and waiter ids came along.
  for (const Command& next : std::vector<Command>{acquire(2, 1, 4, "k", "bob", 70, 1000, 30),
                                                  release(1, 2, 1, "k", 1, 40),
                                                  acquire(3, 1, 3, "k", "carol", 70, 1000, 41),
                                                  acquire(4, 1, 4, "j", "dave", 30, 0, 42)}) {
    EXPECT_EQ(copy.run(next), original.run(next)) << describe(next);
  }
}

// Names past the 15 bytes a key's record keeps in place (the table keeps
// them in a buffer of their own) survive a snapshot, read back whole, and
// find their key by any text.
TEST(LockMachineSnapshot, LongKeyAndOwnerNamesComeBackWhole) {
  const std::string key(250, 'k');
  const std::string owner = std::string(200, 'o') + "!";
  Driven d;
  EXPECT_EQ(d.run(acquire(1, 1, 1, key, owner, 100, 0, 0)), "c1 A 1 " + owner + " " + key);
  EXPECT_EQ(d.run(acquire(2, 1, 2, key, "bob", 100, 500, 5)), "");
  Driven copy;
  copy.machine.restore(d.index, d.machine.snapshot());
  copy.index = d.index;
  copy.machine.check_invariants();
  EXPECT_EQ(copy.machine.keys(), d.machine.keys());
  EXPECT_EQ(copy.machine.keys().at(key).owner, owner);
  EXPECT_NE(canonical_table(copy.machine).find("key " + key + " holder " + owner + " token 1"), std::string::npos);
  EXPECT_EQ(copy.run(release(1, 2, 1, key, 1, 10)), "c1 R 1 " + key + "; c2 A 2 bob " + key);
}

TEST(LockMachineSnapshot, RestoreRefusesBadBytesAndKeepsTheTable) {
  Driven original = busy_table();
  const std::string bytes = original.machine.snapshot();
  Driven target = busy_table();
  const std::string before = target.machine.snapshot();
  for (std::size_t cut = 0; cut < bytes.size(); cut += 7) {
    EXPECT_THROW(target.machine.restore(original.index, bytes.substr(0, cut)), std::invalid_argument);
  }
  EXPECT_THROW(target.machine.restore(original.index + 1, bytes), std::invalid_argument);
  EXPECT_EQ(target.machine.snapshot(), before);
}

TEST(LockMachine, SkippedEntriesMoveOnlyTheIndex) {
  LockMachine machine({});
  machine.skip_entry(1, false);  // a no-op
  machine.skip_entry(2, true);   // garbage
  EXPECT_EQ(show(machine.apply_command(acquire(1, 1, 1, "k", "o", 10, 0, 0), 3).responses), "c1 A 1 o k");
  EXPECT_EQ(machine.rejected_entries(), 1u);
  EXPECT_EQ(machine.applied(), 3u);
  // Two commands of one entry share its index.
  EXPECT_EQ(show(machine.apply_command(acquire(2, 1, 2, "j", "p", 10, 0, 1), 4).responses), "c2 A 2 p j");
  EXPECT_EQ(show(machine.apply_command(acquire(3, 1, 3, "i", "q", 10, 0, 1), 4).responses), "c3 A 3 q i");
  EXPECT_EQ(machine.applied(), 4u);
  EXPECT_EQ(machine.commands_applied(), 3u);
  machine.check_invariants();
}

TEST(LockMachine, AnonymousRequestsAreAppliedAsTheyComeAndNeverRecorded) {
  Driven d;
  // No session fields: the same request twice is two requests.
  EXPECT_EQ(d.run(acquire(0, 0, 1, "k", "alice", 100, 0, 0)), "c1 A 1 alice k");
  EXPECT_EQ(d.run(acquire(0, 0, 1, "k", "alice", 100, 0, 1)), "c1 T alice k");
  EXPECT_EQ(d.run(release(0, 0, 1, "k", 1, 2)), "c1 R 1 k");
  EXPECT_EQ(d.run(release(0, 0, 1, "k", 1, 3)), "c1 N 1 k");
  EXPECT_EQ(d.machine.sessions().client_count(), 0u);
}

// ---- injected bugs ------------------------------------------------------------------

TEST(LockMachineBugs, ExpireWithoutTokenCheckTakesTheKeyFromTheNewHolder) {
  for (const auto bug : {ClusterBug::none, ClusterBug::expire_without_token_check}) {
    Driven d({Limits{}, SessionLimits{}, Token{1}, bug});
    d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
    d.run(release(1, 2, 1, "k", 1, 50));
    d.run(acquire(2, 1, 2, "k", "bob", 100, 0, 60));
    // alice's Expire, proposed at t=100 before her release committed.
    d.run(Expire{"k", Token{1}, TimeMs{100}});
    EXPECT_EQ(d.machine.keys().contains("k"), bug == ClusterBug::none) << cluster_bug_name(bug);
  }
}

TEST(LockMachineBugs, SessionReapplyQueuesARetryTwice) {
  for (const auto bug : {ClusterBug::none, ClusterBug::session_reapply}) {
    Driven d({Limits{}, SessionLimits{}, Token{1}, bug});
    d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
    EXPECT_EQ(d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 1)),
              bug == ClusterBug::none ? "c1 A 1 alice k" : "c1 T alice k");
    d.run(acquire(2, 1, 2, "k", "bob", 70, 1000, 10));
    d.run(acquire(2, 1, 2, "k", "bob", 70, 1000, 11));
    EXPECT_EQ(d.machine.waiter_count(), bug == ClusterBug::none ? 1u : 2u) << cluster_bug_name(bug);
  }
}

TEST(LockMachineBugs, TokenPerKeyRepeatsATokenOnAnotherKeyAndOnAKeyThatComesBack) {
  for (const auto bug : {ClusterBug::none, ClusterBug::token_per_key}) {
    Driven d({Limits{}, SessionLimits{}, Token{1}, bug});
    d.run(acquire(1, 1, 1, "a", "alice", 100, 0, 0));
    EXPECT_EQ(d.run(acquire(2, 1, 2, "b", "bob", 100, 0, 1)),
              bug == ClusterBug::none ? "c2 A 2 bob b" : "c2 A 1 bob b");
    d.run(release(1, 2, 1, "a", 1, 2));
    EXPECT_EQ(d.run(acquire(3, 1, 3, "a", "carol", 100, 0, 3)),
              bug == ClusterBug::none ? "c3 A 3 carol a" : "c3 A 1 carol a");
  }
}

// alice holds k; bob, then carol, wait for it.
Driven two_waiting(ClusterBug bug) {
  Driven d({Limits{}, SessionLimits{}, Token{1}, bug});
  d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
  d.run(acquire(2, 1, 2, "k", "bob", 70, 1000, 10));
  d.run(acquire(3, 1, 3, "k", "carol", 70, 1000, 20));
  return d;
}

TEST(LockMachineBugs, LifoExpireHandoffServesTheNewestWaiter) {
  for (const auto bug : {ClusterBug::none, ClusterBug::lifo_expire_handoff}) {
    Driven d = two_waiting(bug);
    EXPECT_EQ(d.run(Expire{"k", Token{1}, TimeMs{100}}),
              bug == ClusterBug::none ? "c2 A 2 bob k" : "c3 A 2 carol k");
  }
  // A release still hands on in queue order: the bug is on the Expire path.
  Driven d = two_waiting(ClusterBug::lifo_expire_handoff);
  EXPECT_EQ(d.run(release(1, 2, 1, "k", 1, 30)), "c1 R 1 k; c2 A 2 bob k");
}

TEST(LockMachineBugs, StaleReleaseFreesTheKeyFromItsHolder) {
  for (const auto bug : {ClusterBug::none, ClusterBug::stale_release}) {
    Driven d({Limits{}, SessionLimits{}, Token{1}, bug});
    d.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
    d.run(release(1, 2, 1, "k", 1, 10));
    d.run(acquire(2, 1, 2, "k", "bob", 100, 0, 20));
    // alice releases again with her old token, while bob holds k.
    EXPECT_EQ(d.run(release(1, 3, 1, "k", 1, 30)), bug == ClusterBug::none ? "c1 N 1 k" : "c1 R 1 k");
    EXPECT_EQ(d.machine.keys().contains("k"), bug == ClusterBug::none) << cluster_bug_name(bug);
  }
}

TEST(LockMachineBugs, RestoreForgetsSessionsAppliesARetryAgain) {
  for (const auto bug : {ClusterBug::none, ClusterBug::restore_forgets_sessions}) {
    Driven original({Limits{}, SessionLimits{}, Token{1}, bug});
    original.run(acquire(1, 1, 1, "k", "alice", 100, 0, 0));
    Driven copy({Limits{}, SessionLimits{}, Token{1}, bug});
    copy.machine.restore(original.index, original.machine.snapshot());
    copy.index = original.index;
    // alice's retry: answered from her session, or applied again as new.
    EXPECT_EQ(copy.run(acquire(1, 1, 1, "k", "alice", 100, 0, 5)),
              bug == ClusterBug::none ? "c1 A 1 alice k" : "c1 T alice k");
  }
}

TEST(ClusterBugCatalogue, NamesRoundTrip) {
  EXPECT_FALSE(cluster_bug_catalogue().empty());
  for (const auto& entry : cluster_bug_catalogue()) {
    EXPECT_EQ(cluster_bug_from_name(entry.name), entry.bug);
    EXPECT_EQ(cluster_bug_name(entry.bug), entry.name);
  }
  EXPECT_EQ(cluster_bug_from_name("none"), ClusterBug::none);
  EXPECT_FALSE(cluster_bug_from_name("lifo-handoff"));
}

}  // namespace
}  // namespace lockstep::cluster::testing
