#include "impl/limits.hpp"

#include <fmt/format.h>

#include "impl/decimal.hpp"

namespace lockstep {

namespace {

std::optional<std::string> check_range(std::string_view name, std::uint64_t value,
                                       std::uint64_t low, std::uint64_t high) {
  if (value < low || value > high) {
    return fmt::format("{} must be in {}..{}, not {}", name, low, high, value);
  }
  return std::nullopt;
}

std::uint64_t as_count(DurationMs duration) { return static_cast<std::uint64_t>(duration.value); }

}  // namespace

std::optional<std::string> validate(const Limits& limits) {
  const auto duration_max = as_count(duration_limit_max);
  if (limits.sweep_ms.value < 0 || limits.max_lease_ms.value < 0 || limits.max_wait_ms.value < 0) {
    return std::string("durations must not be negative");
  }
  if (auto e = check_range("max_keys", limits.max_keys, 1, count_limit_max)) return e;
  if (auto e = check_range("max_waiters_per_key", limits.max_waiters_per_key, 0, count_limit_max)) return e;
  if (auto e = check_range("max_waiters", limits.max_waiters, 0, count_limit_max)) return e;
  if (auto e = check_range("sweep_ms", as_count(limits.sweep_ms), 1, duration_max)) return e;
  if (auto e = check_range("max_lease_ms", as_count(limits.max_lease_ms), 1, duration_max)) return e;
  if (auto e = check_range("max_wait_ms", as_count(limits.max_wait_ms), 0, duration_max)) return e;
  if (auto e = check_range("max_line_bytes", limits.max_line_bytes, line_bytes_limit_min,
                           line_bytes_limit_max)) {
    return e;
  }
  return std::nullopt;
}

std::optional<std::string> set_limit(Limits& limits, std::string_view name, std::string_view value) {
  const auto number = parse_decimal(value);
  if (!number) return fmt::format("{}: '{}' is not a decimal number", name, value);
  Limits changed = limits;
  const auto as_duration = [&] { return DurationMs{static_cast<std::int64_t>(*number)}; };
  if (*number > count_limit_max && *number > as_count(duration_limit_max)) {
    return fmt::format("{}: {} is too large", name, value);
  }
  if (name == "max_keys") {
    changed.max_keys = *number;
  } else if (name == "max_waiters_per_key") {
    changed.max_waiters_per_key = *number;
  } else if (name == "max_waiters") {
    changed.max_waiters = *number;
  } else if (name == "sweep_ms") {
    changed.sweep_ms = as_duration();
  } else if (name == "max_lease_ms") {
    changed.max_lease_ms = as_duration();
  } else if (name == "max_wait_ms") {
    changed.max_wait_ms = as_duration();
  } else if (name == "max_line_bytes") {
    changed.max_line_bytes = *number;
  } else {
    return fmt::format("unknown limit '{}'", name);
  }
  if (auto error = validate(changed)) return error;
  limits = changed;
  return std::nullopt;
}

}  // namespace lockstep
