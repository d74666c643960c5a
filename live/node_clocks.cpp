#include "live/node_clocks.hpp"

#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "impl/prng.hpp"

namespace lockstep::live {

std::vector<NodeClock> draw_node_clocks(int nodes, std::int64_t error_max_ms, double horizon_s, std::uint64_t seed) {
  // A stream of its own: the workload's and the nemesis's draws stay what
  // they were.
  Prng rng = Prng(seed).fork(0x636c6f63);
  const std::int64_t offset_max_us = error_max_ms * 1'000 / 2;
  const auto drift_max_ppm =
      static_cast<std::int64_t>(static_cast<double>(error_max_ms * 1'000 / 4) / std::max(horizon_s, 1.0));
  std::vector<NodeClock> clocks;
  for (int i = 0; i < nodes; ++i) {
    NodeClock clock;
    clock.offset_us = rng.between(-offset_max_us, offset_max_us);
    clock.drift_ppm = rng.between(-drift_max_ppm, drift_max_ppm);
    clocks.push_back(clock);
  }
  return clocks;
}

std::int64_t clock_jump_max_ms(std::int64_t error_max_ms) { return error_max_ms / 4; }

std::string faketime_spec(const NodeClock& clock) {
  const auto offset = clock.offset_us;
  const auto magnitude = offset < 0 ? -offset : offset;
  // Fixed-point text: libfaketime reads the fraction with the C locale's
  // point, and a node runs in that locale.
  return fmt::format("{}{}.{:06} x{:.6f}", offset < 0 ? '-' : '+', magnitude / 1'000'000, magnitude % 1'000'000,
                     1.0 + static_cast<double>(clock.drift_ppm) / 1e6);
}

std::string describe_clock(int node, const NodeClock& clock) {
  return fmt::format("n{} {:+.1f} ms, {:+} ppm", node + 1, static_cast<double>(clock.offset_us) / 1e3, clock.drift_ppm);
}

std::optional<std::string> faketime_library() {
  // Debian's multiarch folders, then the source build's default prefix.
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                           "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                           "/usr/local/lib/faketime/libfaketimeMT.so.1"}) {
    if (access(path, R_OK) == 0) return std::string(path);
  }
  return std::nullopt;
}

std::string faketime_environment(const std::string& library, const std::string& timestamp_file) {
  return fmt::format(
      "export LD_PRELOAD={} FAKETIME_TIMESTAMP_FILE={} FAKETIME_CACHE_DURATION=1 FAKETIME_DONT_FAKE_MONOTONIC=1; ",
      library, timestamp_file);
}

}  // namespace lockstep::live
