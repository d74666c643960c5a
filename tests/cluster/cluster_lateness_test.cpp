// The simulator's measure of how late a cluster run really was
// (sim/cluster/lateness.hpp), which its histories state as their maximum
// lateness: commands are applied to a real lock table, each at the global
// instant its leader proposed it, clients' sends and hearings are fed at
// chosen instants, and the worst lateness is compared with the figure
// worked out by hand from the checker's rules (allowance A = 20 ms,
// tolerance 10 ms): a grant's end past its instant + lease + A, a hand-off's
// grant heard past its cause's on-time instant + 1 + tolerance (an
// Expire's: the ended grant's due; a Release's: the Release's own instant),
// a grant still held at the end, a waiter's Timeout past its queueing +
// wait + A and its `T` heard past that + 1 + tolerance.
#include <gtest/gtest.h>

#include "sim/cluster/lateness.hpp"
#include "tests/cluster/helpers.hpp"

namespace lockstep::sim {
namespace {

using cluster::testing::acquire;
using cluster::testing::Driven;
using cluster::testing::release;

struct Measured {
  Driven table;
  ClusterLateness meter{DurationMs{20}, DurationMs{10}};

  // The command, proposed at global instant `now`.
  void apply(const cluster::Command& command, std::int64_t now) {
    meter.before_first_apply(command, table.machine);
    const auto applied = table.apply(command);
    meter.after_first_apply(command, table.machine, applied, TimeMs{now});
  }
  void heard(std::string_view line, std::int64_t at) { meter.received(*parse_response(line), TimeMs{at}); }
};

TEST(ClusterLateness, AnExpireOnTimeIsNotLate) {
  Measured r;
  r.apply(acquire(1, 1, 1, "k", "c1s1", 100, 0, 0), 5);  // due 5 + 100 + 20 = 125
  r.apply(cluster::Expire{"k", Token{1}, TimeMs{100}}, 125);
  r.meter.finish(TimeMs{1'000});
  EXPECT_EQ(r.meter.worst_ms(), 0);
}

TEST(ClusterLateness, AnExpireCountsFromItsGrantsInstant) {
  Measured r;
  r.apply(acquire(1, 1, 1, "k", "c1s1", 100, 0, 0), 5);
  r.apply(cluster::Expire{"k", Token{1}, TimeMs{100}}, 300);
  r.meter.finish(TimeMs{1'000});
  EXPECT_EQ(r.meter.worst_ms(), 175);
}

TEST(ClusterLateness, AReleaseThatFindsTheGrantStillHeldCounts) {
  Measured r;
  r.apply(acquire(1, 1, 1, "k", "c1s1", 100, 0, 0), 5);
  r.apply(release(1, 2, 2, "k", 1, 200), 210);  // held 85 ms past its due
  r.meter.finish(TimeMs{1'000});
  EXPECT_EQ(r.meter.worst_ms(), 85);
}

TEST(ClusterLateness, AGrantStillHeldAtTheEndCountsToTheEnd) {
  Measured r;
  r.apply(acquire(1, 1, 1, "k", "c1s1", 100, 0, 0), 5);
  r.meter.finish(TimeMs{400});  // the checker's horizon: 401
  EXPECT_EQ(r.meter.worst_ms(), 401 - 125);
}

TEST(ClusterLateness, AnExpiresHandOffHeardLateCountsFromTheEndedGrantsDue) {
  Measured r;
  r.meter.sent(cluster::testing::session(2, 1), TimeMs{10});
  r.apply(acquire(1, 1, 1, "k", "c1s1", 100, 0, 0), 5);
  r.apply(acquire(2, 1, 2, "k", "c2s1", 500, 2'000, 10), 12);
  r.apply(cluster::Expire{"k", Token{1}, TimeMs{100}}, 125);  // on time; bob's grant caused, on time until 136
  r.heard("A 2 c2s1 k", 200);
  r.meter.finish(TimeMs{600});
  EXPECT_EQ(r.meter.worst_ms(), 200 - 136);
}

TEST(ClusterLateness, AReleasesHandOffCountsFromTheReleasesInstant) {
  Measured r;
  r.apply(acquire(1, 1, 1, "k", "c1s1", 1'000, 0, 0), 5);
  r.apply(acquire(2, 1, 2, "k", "c2s1", 500, 2'000, 10), 12);
  r.meter.sent(cluster::testing::session(1, 2), TimeMs{50});
  r.meter.sent(cluster::testing::session(1, 2), TimeMs{90});
  r.apply(release(1, 2, 3, "k", 1, 95), 95);
  r.heard("A 2 c2s1 k", 150);  // on time until 95 + 1 + 10
  r.meter.finish(TimeMs{200});
  EXPECT_EQ(r.meter.worst_ms(), 150 - 106);
}

TEST(ClusterLateness, AHandOffNeverHeardBySomeoneWhoAskedOnceCountsWhileWatched) {
  Measured r;
  r.meter.sent(cluster::testing::session(2, 1), TimeMs{10});
  r.apply(acquire(1, 1, 1, "k", "c1s1", 100, 0, 0), 5);
  r.apply(acquire(2, 1, 2, "k", "c2s1", 1'000, 2'000, 10), 12);
  r.apply(cluster::Expire{"k", Token{1}, TimeMs{100}}, 125);  // bob's grant on time until 136, never heard
  r.meter.attempt_ended(cluster::testing::session(2, 1), TimeMs{300});
  r.meter.finish(TimeMs{400});
  EXPECT_EQ(r.meter.worst_ms(), 300 - (125 + 10));
}

// bob queues at 12 ms with a wait of 50 ms: his Timeout is due by 12 + 50 +
// 20 = 82 ms. Proposed at 300 ms it is 218 ms late; his `T` heard at 5 s is
// late by 5,000 - (82 + 1 + 10) = 4,907 ms.
TEST(ClusterLateness, AWaitersTimeoutAndItsTCount) {
  for (const bool heard : {false, true}) {
    Measured r;
    r.apply(acquire(1, 1, 1, "k", "c1s1", 10'000, 0, 0), 5);
    const auto queued = r.table.machine.keys().at("k").queue.size();
    r.apply(acquire(2, 1, 2, "k", "c2s1", 100, 50, 10), 12);
    ASSERT_EQ(r.table.machine.keys().at("k").queue.size(), queued + 1);
    const auto waiter = r.table.machine.keys().at("k").queue.begin()->first;
    r.apply(cluster::Timeout{"k", waiter, TimeMs{60}}, 300);
    if (heard) r.heard("T c2s1 k", 5'000);
    r.apply(release(1, 2, 3, "k", 1, 5'020), 5'020);
    r.meter.finish(TimeMs{6'000});
    EXPECT_EQ(r.meter.worst_ms(), heard ? 5'000 - 93 : 218) << heard;
  }
}

// A `T` never heard by a request sent once counts while its client watched
// the connection (the checker owes it then): carol queues at 12 ms (wait 50
// ms, due by 82 ms), is answered at 100 ms, and watches until 700 ms.
TEST(ClusterLateness, ATNeverHeardBySomeoneWhoAskedOnceCountsWhileWatched) {
  Measured r;
  r.meter.sent(cluster::testing::session(2, 1), TimeMs{10});
  r.apply(acquire(1, 1, 1, "k", "c1s1", 10'000, 0, 0), 5);
  r.apply(acquire(2, 1, 2, "k", "c2s1", 100, 50, 10), 12);
  const auto waiter = r.table.machine.keys().at("k").queue.begin()->first;
  r.apply(cluster::Timeout{"k", waiter, TimeMs{60}}, 80);
  r.meter.attempt_ended(cluster::testing::session(2, 1), TimeMs{700});
  r.apply(release(1, 2, 3, "k", 1, 800), 800);
  r.meter.finish(TimeMs{900});
  EXPECT_EQ(r.meter.worst_ms(), 700 - (82 + 10));
}

}  // namespace
}  // namespace lockstep::sim
