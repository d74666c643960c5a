#include "adapters/etcd_lock/lock_keys.hpp"

#include <charconv>

#include <fmt/format.h>

namespace lockstep::etcd_lock {

std::string key_prefix(std::string_view prefix, std::string_view key) {
  std::string out(prefix);
  out += '/';
  for (const char c : key) {
    if (c == '%') {
      out += "%25";
    } else if (c == '/') {
      out += "%2F";
    } else {
      out += c;
    }
  }
  out += '/';
  return out;
}

std::string acquire_key(std::string_view key_prefix, std::int64_t lease) {
  return fmt::format("{}{:x}", key_prefix, static_cast<std::uint64_t>(lease));
}

std::optional<std::int64_t> lease_of(std::string_view key_prefix, std::string_view etcd_key) {
  if (!etcd_key.starts_with(key_prefix)) return std::nullopt;
  const auto hex = etcd_key.substr(key_prefix.size());
  std::uint64_t lease = 0;
  const auto [end, error] = std::from_chars(hex.data(), hex.data() + hex.size(), lease, 16);
  if (hex.empty() || error != std::errc{} || end != hex.data() + hex.size()) return std::nullopt;
  return static_cast<std::int64_t>(lease);
}

std::int64_t lease_ttl_s(std::int64_t lease_ms) { return (lease_ms + 999) / 1000; }

}  // namespace lockstep::etcd_lock
