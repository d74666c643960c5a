// The limits and ranges `lockstep fuzz` assumes of its target: each limit
// not given takes the mode's default (the protocol's with --target, the
// fuzzer's edge-seeking ones with --exec), and --lease-ms and --wait-ms,
// in either mode, are read within the limits settled.
#pragma once

#include <cstdint>
#include <string>

#include "impl/limits.hpp"
#include "live/fuzz_request.hpp"

namespace lockstep::live {

// Fills in the limits not given; returns where they came from, for the line
// that states them.
std::string settle_limits(FuzzRequest& request);

// Each range given replaces its bounds; one outside the limits is one line
// on stderr and false.
bool read_ranges(const FuzzRequest& request, const Limits& limits, std::int64_t& lease_min_ms,
                 std::int64_t& lease_max_ms, std::int64_t& wait_min_ms, std::int64_t& wait_max_ms);

}  // namespace lockstep::live
