// Wrong clocks for the nodes the cluster fuzzer starts, through libfaketime
// (Debian's libfaketime): each node runs with the library preloaded and a
// timestamp file of its own, so that its wall clock (CLOCK_REALTIME, what a
// node stamps its commands with) reads an offset from the machine's and runs
// at a rate of its own, and the fuzzer can step it mid-run by rewriting the
// file. The monotonic clock is left alone: a node measures its leader lease
// on it, and etcd measures its leases on its own, so only what the protocol's
// clock bound S is about is faked.
//
// A node's clock error is its offset, plus its drift times the time it has
// run, plus any step the nemesis made. `draw_node_clocks` splits a bound E
// on that error as a half for the offset, a quarter for the drift over
// `horizon_s`, and leaves a quarter for a step (`clock_jump_max_ms`), so a
// node stays within ±E whatever the nemesis does: with E = allowance / 2
// (S, when the declared allowance is 2·S) two clocks are within the
// allowance. The offsets take the largest share because a leader change is
// where two clocks meet: the new leader's Expires come early by how far its
// clock is ahead of the old one's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::live {

struct NodeClock {
  std::int64_t offset_us = 0;  // added to the machine's wall clock
  std::int64_t drift_ppm = 0;  // millionths of a second gained per second
};

// One clock per node, drawn from `seed` (a stream of its own), each within
// ±error_max_ms/2 of offset and ±error_max_ms/4 of drift over `horizon_s`.
std::vector<NodeClock> draw_node_clocks(int nodes, std::int64_t error_max_ms, double horizon_s, std::uint64_t seed);

// The largest step of a node's clock that keeps it within ±error_max_ms.
std::int64_t clock_jump_max_ms(std::int64_t error_max_ms);

// libfaketime's spec for a clock: "+0.012000 x1.000250".
std::string faketime_spec(const NodeClock& clock);

// "n1 +12.0 ms, +250 ppm": for the run's summary.
std::string describe_clock(int node, const NodeClock& clock);

// The preloadable library (the multi-threaded build: a node runs gRPC's
// threads), or nothing when libfaketime is not installed.
std::optional<std::string> faketime_library();

// What a node's command is prefixed with: the library preloaded, reading
// `timestamp_file` at most a second stale, the monotonic clock real.
std::string faketime_environment(const std::string& library, const std::string& timestamp_file);

}  // namespace lockstep::live
