// Numbers on the command line (validators.hpp): whole numbers, signed ones,
// decimals, millisecond ranges and seed ranges, written in decimal digits
// only and checked against their range when parsed.
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "cli/validators.hpp"

namespace lockstep::cli {

namespace {

std::string range_text(std::uint64_t low, std::uint64_t high) {
  return high == std::numeric_limits<std::uint64_t>::max() ? fmt::format("at least {}", low)
                                                           : fmt::format("in {}..{}", low, high);
}

std::string signed_range_text(std::int64_t low, std::int64_t high) {
  return high == std::numeric_limits<std::int64_t>::max() ? fmt::format("at least {}", low)
                                                          : fmt::format("in {}..{}", low, high);
}

}  // namespace

std::optional<std::uint64_t> digits_value(const std::string& text) {
  if (text.empty() || text.size() > 40) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_seed_range(const std::string& text,
                                                                       std::uint64_t count_max) {
  const auto dots = text.find("..");
  const auto first = digits_value(text.substr(0, dots));
  const auto last = dots == std::string::npos ? first : digits_value(text.substr(dots + 2));
  if (!first || !last || *first > seed_max || *last > seed_max || *last < *first) return std::nullopt;
  if (*last - *first >= count_max) return std::nullopt;
  return std::pair{*first, *last};
}

CLI::Validator seed_range(std::uint64_t count_max) {
  const auto most = count_max == std::numeric_limits<std::uint64_t>::max()
                        ? std::string()
                        : fmt::format(" and at most {} seeds", count_max);
  return CLI::Validator(
      [count_max, most](std::string& text) -> std::string {
        if (parse_seed_range(text, count_max)) return {};
        return fmt::format("'{}' is not A..B with seeds A <= B in 0..{}{}", text, seed_max, most);
      },
      "A..B", "seed range");
}

CLI::Validator whole(std::uint64_t low, std::uint64_t high) {
  const auto range = range_text(low, high);
  return CLI::Validator(
      [low, high, range](std::string& text) -> std::string {
        const auto value = digits_value(text);
        if (!value) return fmt::format("'{}' is not a whole number {}", text, range);
        if (*value < low || *value > high) return fmt::format("{} is not {}", text, range);
        text = std::to_string(*value);
        return {};
      },
      "a whole number " + range, "whole");
}

CLI::Validator whole_signed(std::int64_t low, std::int64_t high) {
  const auto range = signed_range_text(low, high);
  return CLI::Validator(
      [low, high, range](std::string& text) -> std::string {
        const bool negative = !text.empty() && text.front() == '-';
        const auto magnitude = digits_value(negative ? text.substr(1) : text);
        const auto limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
        if (!magnitude || *magnitude > limit + (negative ? 1 : 0)) {
          return fmt::format("'{}' is not a whole number {}", text, range);
        }
        const auto value = negative ? static_cast<std::int64_t>(0 - *magnitude) : static_cast<std::int64_t>(*magnitude);
        if (value < low || value > high) return fmt::format("{} is not {}", text, range);
        text = std::to_string(value);
        return {};
      },
      "a whole number " + range, "whole");
}

CLI::Validator decimal(double low, double high) {
  const auto range = fmt::format("in {}..{}", low, high);
  return CLI::Validator(
      [low, high, range](std::string& text) -> std::string {
        const auto dot = text.find('.');
        const auto whole_part = text.substr(0, dot);
        const auto fraction = dot == std::string::npos ? std::string("0") : text.substr(dot + 1);
        if (!digits_value(whole_part) || !digits_value(fraction) || whole_part.size() > 12) {
          return fmt::format("'{}' is not a number {}", text, range);
        }
        const double value = std::stod(text);
        if (value < low || value > high) return fmt::format("{} is not {}", text, range);
        return {};
      },
      "a number " + range, "decimal");
}

std::optional<std::pair<std::int64_t, std::int64_t>> parse_ms_range(const std::string& text, std::int64_t low,
                                                                    std::int64_t high) {
  const auto dots = text.find("..");
  if (dots == std::string::npos || low < 0 || high > ms_range_max) return std::nullopt;
  const auto first = digits_value(text.substr(0, dots));
  const auto last = digits_value(text.substr(dots + 2));
  if (!first || !last || *first > *last || *last > static_cast<std::uint64_t>(high)) return std::nullopt;
  if (*first < static_cast<std::uint64_t>(low)) return std::nullopt;
  return std::pair{static_cast<std::int64_t>(*first), static_cast<std::int64_t>(*last)};
}

CLI::Validator ms_range(std::int64_t low) {
  return CLI::Validator(
      [low](std::string& text) -> std::string {
        const auto range = parse_ms_range(text, low, ms_range_max);
        if (!range) return fmt::format("'{}' is not A..B with {} <= A <= B <= {}", text, low, ms_range_max);
        text = fmt::format("{}..{}", range->first, range->second);
        return {};
      },
      "A..B", "millisecond range");
}

}  // namespace lockstep::cli
