#include "live/fuzz_limits.hpp"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "cli/validators.hpp"

namespace lockstep::live {

namespace {

// The fuzzer's defaults make the edges reachable within seconds: a short
// sweep, few waiters per key, fewer keys allowed than the workload uses.
// They are right only for a target started with them, which --exec does.
Limits edge_limits() {
  Limits limits;
  limits.max_keys = 6;
  limits.max_waiters_per_key = 3;
  limits.max_waiters = 24;
  limits.sweep_ms = DurationMs{1'000};
  limits.max_lease_ms = DurationMs{10'000};
  limits.max_wait_ms = DurationMs{10'000};
  return limits;
}

// One range option: `flag` read within [low, high] into its bounds.
bool read_range(const std::string& text, const char* flag, std::int64_t low, std::int64_t high, const char* limit,
                std::int64_t& min_ms, std::int64_t& max_ms) {
  if (text.empty()) return true;
  const auto range = cli::parse_ms_range(text, low, std::min(high, cli::ms_range_max));
  if (!range) {
    fmt::print(stderr, "lockstep fuzz: {} takes A..B with {} <= A <= B <= {} ({}), not '{}'\n", flag, low, limit, high, text);
    return false;
  }
  std::tie(min_ms, max_ms) = *range;
  return true;
}

}  // namespace

std::string settle_limits(FuzzRequest& request) {
  const bool given_any = !request.limits_given.empty();
  Limits& limits = request.fuzz.limits;
  if (!request.fuzz.command.empty()) {
    const Limits edges = edge_limits();
    if (!request.limit_given("max_keys")) limits.max_keys = edges.max_keys;
    if (!request.limit_given("max_waiters_per_key")) limits.max_waiters_per_key = edges.max_waiters_per_key;
    if (!request.limit_given("max_waiters")) limits.max_waiters = edges.max_waiters;
    if (!request.limit_given("sweep_ms")) limits.sweep_ms = edges.sweep_ms;
    if (!request.limit_given("max_lease_ms")) limits.max_lease_ms = edges.max_lease_ms;
    if (!request.limit_given("max_wait_ms")) limits.max_wait_ms = edges.max_wait_ms;
  }
  if (request.fuzz.clear_of_limits) {
    limits.max_keys = limits.max_waiters_per_key = limits.max_waiters = count_limit_max;
  }
  const std::string unlimited = request.fuzz.clear_of_limits ? "; none on keys and waiters (--no-limits)" : "";
  if (!request.fuzz.command.empty()) {
    return (given_any ? "given, the others the fuzzer's edge-seeking defaults, filled into the command"
                      : "the fuzzer's edge-seeking defaults, filled into the command") + unlimited;
  }
  return (given_any ? "given, the others the protocol's defaults, docs/protocol.md \"Limits\""
                    : "the protocol's defaults, docs/protocol.md \"Limits\": what a server started without options has; if the target was started "
                      "with others, give them (--max-keys, --sweep-ms ...)") + unlimited;
}

bool read_ranges(const FuzzRequest& request, const Limits& limits, std::int64_t& lease_min_ms,
                 std::int64_t& lease_max_ms, std::int64_t& wait_min_ms, std::int64_t& wait_max_ms) {
  return read_range(request.lease_range, "--lease-ms", 1, limits.max_lease_ms.value, "max_lease_ms", lease_min_ms,
                    lease_max_ms) &&
         read_range(request.wait_range, "--wait-ms", 0, limits.max_wait_ms.value, "max_wait_ms", wait_min_ms,
                    wait_max_ms);
}

}  // namespace lockstep::live
