// The unavailability figures of `fuzz --mode cluster` (live/unavailability.hpp)
// on hand-made histories: after a fault, only an answer that is not `E` to
// a request sent at the fault or later ends the gap (an answer to a request
// in flight at the fault does not, nor does `E not-leader`), on whichever
// connection it comes; a fault that nothing answers counts to the
// history's end and says so; figures go by kind, min, median and max.
#include <gtest/gtest.h>

#include "live/unavailability.hpp"

namespace lockstep::live {
namespace {

using history::EventKind;

history::Event event(std::int64_t t_us, EventKind kind, std::uint32_t conn, std::string line) {
  return history::Event{t_us, kind, conn, std::move(line), -1};
}

TEST(Unavailability, OnlyAnAnswerToARequestSentAfterTheFaultEndsTheGap) {
  history::History h;
  h.events = {
      event(900'000, EventKind::send, 1, "A k a 100 0 c1 1"),
      event(1'000'000, EventKind::nemesis, 0, "cut n1 from etcd"),
      event(1'100'000, EventKind::recv, 1, "A 5 a k"),  // in flight at the fault
      event(1'200'000, EventKind::send, 2, "A j b 100 0 c2 1"),
      event(1'300'000, EventKind::recv, 2, "E not-leader"),
      event(1'400'000, EventKind::send, 3, "A j b 100 0 c2 1"),
      event(2'500'000, EventKind::recv, 3, "A 6 b j"),
      event(2'600'000, EventKind::send, 1, "R k 5 c1 2"),
      event(2'700'000, EventKind::recv, 1, "R"),
  };
  const auto by_kind = unavailability(h, {{1'000'000, "partition-node"}, {2'550'000, "partition-node"}, {2'800'000, "kill"}});
  ASSERT_EQ(by_kind.size(), 2u);
  const auto& partitions = by_kind.at("partition-node");
  EXPECT_EQ(partitions.gaps_us, (std::vector<std::int64_t>{1'500'000, 150'000}));
  EXPECT_EQ(partitions.unanswered, 0);
  const auto& kills = by_kind.at("kill");
  EXPECT_EQ(kills.gaps_us, (std::vector<std::int64_t>{0}));  // to the history's end, at once
  EXPECT_EQ(kills.unanswered, 1);
  const auto lines = unavailability_lines(by_kind);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "unavailability after kill: min 0 ms, median 0 ms, max 0 ms (1 faults, 1 with no answer before "
                      "the run's end)");
  EXPECT_EQ(lines[1], "unavailability after partition-node: min 150 ms, median 1500 ms, max 1500 ms (2 faults)");
}

}  // namespace
}  // namespace lockstep::live
