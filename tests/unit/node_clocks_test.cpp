// The wrong clocks of the cluster fuzzer (live/node_clocks.hpp): each node's
// error (offset, drift over the horizon, and the largest step the nemesis
// may add) stays within the bound it is drawn for; the same seed draws the
// same clocks; and libfaketime's spec says exactly that offset and rate.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "live/node_clocks.hpp"

namespace lockstep::live {
namespace {

TEST(NodeClocks, EveryErrorStaysWithinItsBoundForTheWholeHorizon) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    for (const std::int64_t bound_ms : {1, 5, 100, 1'000}) {
      const double horizon_s = 80;
      const auto clocks = draw_node_clocks(5, bound_ms, horizon_s, seed);
      ASSERT_EQ(clocks.size(), 5u);
      for (const auto& clock : clocks) {
        // The worst the clock gets: its offset, its drift run for the whole
        // horizon, and the largest step, all the same way.
        const double worst_us = static_cast<double>(std::abs(clock.offset_us)) +
                                static_cast<double>(std::abs(clock.drift_ppm)) * horizon_s +
                                static_cast<double>(clock_jump_max_ms(bound_ms)) * 1'000;
        EXPECT_LE(worst_us, static_cast<double>(bound_ms) * 1'000) << "seed " << seed << ", bound " << bound_ms;
      }
    }
  }
}

TEST(NodeClocks, TheSameSeedDrawsTheSameClocksAndTheyDiffer) {
  const auto a = draw_node_clocks(3, 100, 60, 7), b = draw_node_clocks(3, 100, 60, 7);
  std::set<std::int64_t> offsets;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].offset_us, b[i].offset_us);
    EXPECT_EQ(a[i].drift_ppm, b[i].drift_ppm);
    offsets.insert(a[i].offset_us);
  }
  EXPECT_EQ(offsets.size(), 3u) << "three nodes, one clock";
  const auto c = draw_node_clocks(3, 100, 60, 8);
  EXPECT_NE(a[0].offset_us, c[0].offset_us);
}

TEST(NodeClocks, TheSpecIsLibfaketimesOffsetInSecondsAndRate) {
  EXPECT_EQ(faketime_spec(NodeClock{0, 0}), "+0.000000 x1.000000");
  EXPECT_EQ(faketime_spec(NodeClock{12'345, 250}), "+0.012345 x1.000250");
  EXPECT_EQ(faketime_spec(NodeClock{-1'500'000, -1'000}), "-1.500000 x0.999000");
  EXPECT_EQ(faketime_spec(NodeClock{-7, 0}), "-0.000007 x1.000000");
  EXPECT_EQ(describe_clock(1, NodeClock{-12'300, 40}), "n2 -12.3 ms, +40 ppm");
}

}  // namespace
}  // namespace lockstep::live
