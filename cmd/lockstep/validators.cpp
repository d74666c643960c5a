#include "cmd/lockstep/validators.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

namespace lockstep::cli {

namespace {

namespace fs = std::filesystem;

// Decimal digits only (leading zeros allowed), fitting 64 bits.
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

std::string range_text(std::uint64_t low, std::uint64_t high) {
  return high == std::numeric_limits<std::uint64_t>::max() ? fmt::format("at least {}", low)
                                                           : fmt::format("in {}..{}", low, high);
}

std::string signed_range_text(std::int64_t low, std::int64_t high) {
  return high == std::numeric_limits<std::int64_t>::max() ? fmt::format("at least {}", low)
                                                          : fmt::format("in {}..{}", low, high);
}

std::string system_error() { return std::strerror(errno); }

}  // namespace

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

CLI::Validator ms_range(std::uint64_t low) {
  const std::uint64_t high = std::uint64_t{1} << 40;
  return CLI::Validator(
      [low, high](std::string& text) -> std::string {
        const auto dots = text.find("..");
        const auto first = dots == std::string::npos ? std::nullopt : digits_value(text.substr(0, dots));
        const auto last = dots == std::string::npos ? std::nullopt : digits_value(text.substr(dots + 2));
        if (!first || !last || *first < low || *last > high || *first > *last) {
          return fmt::format("'{}' is not A..B with {} <= A <= B <= {}", text, low, high);
        }
        text = fmt::format("{}..{}", *first, *last);
        return {};
      },
      "A..B", "millisecond range");
}

CLI::Validator host_and_port() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto colon = text.rfind(':');
        const auto port = colon == std::string::npos ? std::nullopt : digits_value(text.substr(colon + 1));
        if (colon == std::string::npos || colon == 0 || !port) {
          return fmt::format("'{}' is not HOST:PORT", text);
        }
        if (*port < 1 || *port > 65535) return fmt::format("port {} of {} is not in 1..65535", text.substr(colon + 1), text);
        return {};
      },
      "HOST:PORT", "host and port");
}

CLI::Validator protocol_name() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const bool printable = std::all_of(text.begin(), text.end(), [](char c) { return c >= '!' && c <= '~'; });
        if (text.empty() || text.size() > 250 || !printable) {
          return fmt::format("'{}' is not a key: 1 to 250 bytes of printable ASCII without space", text);
        }
        return {};
      },
      "a key", "key");
}

CLI::Validator host_and_port_list() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto one = host_and_port();
        std::size_t begin = 0;
        while (begin <= text.size()) {
          const auto end = std::min(text.find(',', begin), text.size());
          std::string item = text.substr(begin, end - begin);
          if (auto error = one(item); !error.empty()) return error;
          begin = end + 1;
        }
        return {};
      },
      "HOST:PORT[,HOST:PORT...]", "hosts and ports");
}

CLI::Validator one_of(std::vector<std::string> names, std::string catalogue, std::string listed_by) {
  return CLI::Validator(
      [names, catalogue, listed_by](std::string& text) -> std::string {
        for (const auto& name : names) {
          if (name == text) return {};
        }
        return fmt::format("'{}' is not in {} ({})", text, catalogue, listed_by);
      },
      "a name from " + catalogue, "one of");
}

std::string why_not_readable_file(const std::string& path) {
  std::error_code error;
  const auto status = fs::status(path, error);
  if (!fs::exists(status)) return fmt::format("cannot read {}: no such file", path);
  if (fs::is_directory(status)) return fmt::format("{} is a folder, not a file", path);
  if (::access(path.c_str(), R_OK) != 0) return fmt::format("cannot read {}: {}", path, system_error());
  return {};
}

std::string why_not_writable_file(const std::string& path) {
  if (path.empty()) return "an empty file name";
  std::error_code error;
  const auto status = fs::status(path, error);
  if (fs::is_directory(status)) return fmt::format("{} is a folder, not a file", path);
  if (fs::exists(status)) {
    if (::access(path.c_str(), W_OK) != 0) return fmt::format("cannot write {}: {}", path, system_error());
    return {};
  }
  auto parent = fs::path(path).parent_path();
  if (parent.empty()) parent = ".";
  if (!fs::is_directory(parent, error)) {
    return fmt::format("cannot write {}: there is no folder {}", path, parent.string());
  }
  if (::access(parent.c_str(), W_OK) != 0) return fmt::format("cannot write {}: {}", path, system_error());
  return {};
}

std::string why_not_writable_folder(const std::string& path) {
  if (path.empty()) return "an empty folder name";
  std::error_code error;
  fs::path at = fs::absolute(path, error);
  // The folder itself, or the nearest ancestor that exists: it must be a
  // folder that can be written (the rest is created).
  while (!fs::exists(at, error) && at.has_parent_path() && at.parent_path() != at) at = at.parent_path();
  if (!fs::is_directory(at, error)) {
    return fmt::format("cannot write into {}: {} is not a folder", path, at.string());
  }
  if (::access(at.c_str(), W_OK) != 0) return fmt::format("cannot write into {}: {}", path, system_error());
  return {};
}

CLI::Validator readable_file() {
  return CLI::Validator([](std::string& path) { return why_not_readable_file(path); }, "a file that can be read",
                        "readable file");
}

CLI::Validator readable_path() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        std::error_code error;
        if (!fs::exists(path, error)) return fmt::format("cannot read {}: no such file or folder", path);
        if (::access(path.c_str(), R_OK) != 0) return fmt::format("cannot read {}: {}", path, system_error());
        return {};
      },
      "a file or folder that can be read", "readable path");
}

CLI::Validator writable_file() {
  return CLI::Validator([](std::string& path) { return why_not_writable_file(path); }, "a file that can be written",
                        "writable file");
}

CLI::Validator writable_folder() {
  return CLI::Validator([](std::string& path) { return why_not_writable_folder(path); },
                        "a folder that can be written", "writable folder");
}

// The redis-server binary: a path to an executable file, or a name found
// on PATH. Checked before anything starts, so a typo is one line, not a
// server that never answers.
CLI::Validator executable_on_path() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        const auto executable = [](const std::filesystem::path& path) {
          std::error_code error;
          return std::filesystem::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
        };
        if (name.find('/') != std::string::npos) {
          return executable(name) ? std::string() : fmt::format("{} is not an executable file", name);
        }
        const char* path = std::getenv("PATH");
        std::string folders = path != nullptr ? path : "";
        for (std::size_t start = 0; start <= folders.size();) {
          const auto end = std::min(folders.find(':', start), folders.size());
          const auto folder = folders.substr(start, end - start);
          if (!folder.empty() && executable(std::filesystem::path(folder) / name)) return {};
          start = end + 1;
        }
        return fmt::format("{} is not found on PATH", name);
      },
      "an executable", "executable");
}

}  // namespace lockstep::cli
