// The leader's deadline heap against a lock table: what due() yields and in
// which order (by instant, Timeouts before Expires, Timeouts in queueing
// order, Expires in token order), that stale entries are dropped, that an
// Expire in flight is not proposed twice however long it takes to commit (and
// is again once the driver reports it lost), that a new leader rebuilds from the applied state, that the heap
// stays bounded, and what the heap-not-rebuilt bug loses.
#include <gtest/gtest.h>

#include "impl/cluster/deadlines.hpp"
#include "tests/cluster/helpers.hpp"

namespace lockstep::cluster::testing {
namespace {

// A leader: the table and its heap, fed after every apply.
struct Leader {
  Driven d;
  DeadlineHeap heap;
  explicit Leader(ClusterBug bug = ClusterBug::none) : d({Limits{}, SessionLimits{}, Token{1}, bug}), heap({bug}) {
    heap.become_leader(d.machine);
  }
  std::string run(const Command& command) {
    const Applied applied = d.apply(command);
    heap.note_applied(applied, d.machine);
    heap.check_invariants(d.machine);
    return show(applied.responses);
  }
  std::string due(std::int64_t now) {
    std::string text;
    for (const auto& command : heap.due(TimeMs{now}, d.machine)) text += describe(command) + "\n";
    return text;
  }
};

TEST(DeadlineHeap, YieldsTimeoutsFirstThenExpiresInOrder) {
  Leader l;
  l.run(acquire(1, 1, 1, "b", "o", 100, 0, 0));   // token 1, expires at 100
  l.run(acquire(1, 2, 1, "a", "o", 100, 0, 0));   // token 2, expires at 100
  l.run(acquire(2, 1, 2, "a", "p", 10, 100, 0));  // waiter 1 on a, deadline 100
  l.run(acquire(2, 2, 2, "b", "p", 10, 100, 0));  // waiter 2 on b, deadline 100
  l.run(acquire(2, 3, 2, "a", "q", 10, 40, 10));  // waiter 3 on a, deadline 50
  EXPECT_EQ(l.heap.next_due(), TimeMs{50});
  EXPECT_EQ(l.due(49), "");
  EXPECT_EQ(l.due(100),
            "Timeout(a, waiter 3, @100)\n"
            "Timeout(a, waiter 1, @100)\n"
            "Timeout(b, waiter 2, @100)\n"
            "Expire(b, 1, @100)\n"
            "Expire(a, 2, @100)\n");
}

TEST(DeadlineHeap, DropsStaleEntriesAndDoesNotProposeTwiceInFlight) {
  Leader l;
  l.run(acquire(1, 1, 1, "k", "o", 100, 0, 0));
  l.run(release(1, 2, 1, "k", 1, 10));            // its expiry entry is now stale
  l.run(acquire(1, 3, 1, "k", "o", 100, 0, 20));  // token 2, expires at 120
  EXPECT_EQ(l.due(100), "");
  EXPECT_EQ(l.due(120), "Expire(k, 2, @120)\n");
  EXPECT_EQ(l.heap.in_flight(), 1u);
  EXPECT_EQ(l.due(121), "");     // in flight: not again
  // However slow the log: a leader's own proposal is not lost while it
  // leads, and a copy would only lengthen the log.
  EXPECT_EQ(l.due(60'000), "");
  EXPECT_EQ(l.heap.next_due(), std::nullopt);
  l.heap.lost(DeadlineTarget{DeadlineTarget::Kind::expire, 2, "k"});  // the driver could not propose it
  EXPECT_EQ(l.heap.next_due(), TimeMs{120});
  EXPECT_EQ(l.due(60'001), "Expire(k, 2, @60001)\n");
  l.run(Expire{"k", Token{2}, TimeMs{60'002}});
  EXPECT_EQ(l.heap.in_flight(), 0u);
  EXPECT_EQ(l.due(70'000), "");
}

TEST(DeadlineHeap, NewLeaderRebuildsFromAppliedState) {
  Driven follower;
  DeadlineHeap heap;
  // Applied while following: nothing is noted.
  follower.apply(acquire(1, 1, 1, "k", "o", 100, 0, 0));
  follower.apply(acquire(2, 1, 2, "k", "p", 10, 30, 5));
  EXPECT_EQ(heap.next_due(), std::nullopt);
  heap.become_leader(follower.machine);
  heap.check_invariants(follower.machine);
  EXPECT_EQ(heap.size(), 2u);
  EXPECT_EQ(heap.next_due(), TimeMs{35});
  heap.step_down();
  EXPECT_EQ(heap.size(), 0u);
}

TEST(DeadlineHeap, StaysBoundedUnderChurn) {
  Leader l;
  for (std::uint64_t i = 1; i <= 1'000; ++i) {
    const auto grant = l.d.apply(acquire(1, 2 * i - 1, 1, "k", "o", 1'000'000, 0, 0));
    l.heap.note_applied(grant, l.d.machine);
    const Token token = l.d.machine.keys().at("k").token;
    l.heap.note_applied(l.d.apply(release(1, 2 * i, 1, "k", token.value, 0)), l.d.machine);
    l.heap.check_invariants(l.d.machine);
  }
  EXPECT_LE(l.heap.size(), 70u);
}

TEST(DeadlineHeapBugs, HeapNotRebuiltMissesWhatWasAppliedWhileFollowing) {
  for (const auto bug : {ClusterBug::none, ClusterBug::heap_not_rebuilt}) {
    Driven node({Limits{}, SessionLimits{}, Token{1}, bug});
    DeadlineHeap heap({bug});
    node.apply(acquire(1, 1, 1, "k", "o", 100, 0, 0));  // committed while this node followed
    heap.become_leader(node.machine);
    const auto due = heap.due(TimeMs{100}, node.machine);
    EXPECT_EQ(due.size(), bug == ClusterBug::none ? 1u : 0u) << cluster_bug_name(bug);
  }
}

}  // namespace
}  // namespace lockstep::cluster::testing
