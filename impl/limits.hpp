// The limits of one lock service (docs/protocol.md, "Wire protocol", defaults).
// Field names are the contract's, so that the same name is used on the wire,
// in vector `config` lines, on the command line and in the code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "impl/units.hpp"

namespace lockstep {

struct Limits {
  std::uint64_t max_keys = 1'000'000;
  std::uint64_t max_waiters_per_key = 1'024;
  std::uint64_t max_waiters = 1'000'000;
  DurationMs sweep_ms{5'000};
  DurationMs max_lease_ms{86'400'000};
  DurationMs max_wait_ms{86'400'000};
  // Bytes of one request line, not counting its `\n`.
  std::uint64_t max_line_bytes = 1'024;

  friend bool operator==(const Limits&, const Limits&) = default;
};

// Bounds on the limits themselves: counts fit the engine's 32-bit slot
// indices, durations keep every instant below time_max.
inline constexpr std::uint64_t count_limit_max = (std::uint64_t{1} << 32) - 2;
inline constexpr std::uint64_t line_bytes_limit_min = 64;
inline constexpr std::uint64_t line_bytes_limit_max = std::uint64_t{1} << 20;

// Why the limits cannot be used, or nothing when they are valid.
std::optional<std::string> validate(const Limits& limits);

// Sets one limit by its contract name from its decimal text (as in a vector's
// `config NAME=VALUE`). Returns why it could not, or nothing on success; on
// failure `limits` is unchanged.
std::optional<std::string> set_limit(Limits& limits, std::string_view name, std::string_view value);

// The names set_limit accepts, in the contract's order.
inline constexpr std::string_view limit_names[] = {
    "max_keys", "max_waiters_per_key", "max_waiters", "sweep_ms",
    "max_lease_ms", "max_wait_ms", "max_line_bytes"};

}  // namespace lockstep
