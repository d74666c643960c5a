// Strong types for the quantities the lock service speaks of. Every instant
// and duration is an integer count of milliseconds (docs/protocol.md, "Time"), and
// the unit is in the name so that an instant is never passed where a duration
// is meant. Tokens and connection ids are opaque numbers with no arithmetic
// beyond what issuing them needs.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace lockstep {

// A length of time in milliseconds.
struct DurationMs {
  std::int64_t value = 0;
  friend auto operator<=>(DurationMs, DurationMs) = default;
};

// An instant on the service's clock, in milliseconds since the clock started.
struct TimeMs {
  std::int64_t value = 0;
  friend auto operator<=>(TimeMs, TimeMs) = default;
};

constexpr TimeMs operator+(TimeMs at, DurationMs length) { return TimeMs{at.value + length.value}; }
constexpr DurationMs operator-(TimeMs later, TimeMs earlier) {
  return DurationMs{later.value - earlier.value};
}

// The largest instant the service accepts. Far beyond any real clock, and low
// enough that an instant plus the largest lease or wait never overflows.
inline constexpr TimeMs time_max{std::int64_t{1} << 62};
// The largest lease or wait a configuration may allow (about 34 years).
inline constexpr DurationMs duration_limit_max{std::int64_t{1} << 40};
static_assert(time_max.value + duration_limit_max.value > time_max.value);

// A fencing token: positive, unique over the life of the service, strictly
// increasing in the order issued (docs/protocol.md, "Tokens").
struct Token {
  std::uint64_t value = 0;
  friend auto operator<=>(Token, Token) = default;
};

// Names one client connection. The driver (server, simulator, runner) picks
// the values; the engine only uses them to address responses and to drop the
// waiters of a connection that closes.
struct ConnectionId {
  std::uint64_t value = 0;
  friend auto operator<=>(ConnectionId, ConnectionId) = default;
};

}  // namespace lockstep

template <>
struct std::hash<lockstep::ConnectionId> {
  std::size_t operator()(lockstep::ConnectionId id) const noexcept {
    return std::hash<std::uint64_t>{}(id.value);
  }
};
