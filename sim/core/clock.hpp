// A node's own clock, as a function of the simulator's global time. The
// Raft harness (raft and cluster modes) gives each node an offset and a
// drift within a stated bound, and adds jumps of its own on top
// (the simulator fakes clocks as well as the network); simple mode's one
// server reads global time. The mapping is monotonic, so a node driven by
// it never sees time go back.
#pragma once

#include <cstdint>

#include "impl/units.hpp"

namespace lockstep::sim {

struct NodeClock {
  DurationMs offset_ms{0};
  std::int64_t drift_ppm = 0;  // parts per million, within (-1e6, 1e6)

  TimeMs local(TimeMs global) const {
    const std::int64_t drift = global.value / 1'000'000 * drift_ppm +
                               global.value % 1'000'000 * drift_ppm / 1'000'000;
    return TimeMs{global.value + drift + offset_ms.value};
  }
};

}  // namespace lockstep::sim
