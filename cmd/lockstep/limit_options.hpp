// The limits of the protocol (docs/protocol.md, "Limits") as command-line
// options (`--max-keys N` ...), shared by every subcommand that starts or
// tests a server. Each is checked at parse time against the range
// impl/limits.cpp accepts.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/validators.hpp"
#include "impl/limits.hpp"

namespace lockstep::cli {

// The placeholders of the limits in a command template (live/process.hpp,
// template_values), as every --help that takes a template lists them.
inline constexpr const char* limit_placeholders =
    "{max_keys} {max_waiters_per_key} {max_waiters} {sweep_ms} {max_lease_ms} {max_wait_ms} {max_line_bytes}";

inline void add_limit_options(CLI::App& command, Limits& limits) {
  const auto duration_max = static_cast<std::int64_t>(duration_limit_max.value);
  command.add_option("--max-keys", limits.max_keys, "keys registered at most")
      ->check(whole(1, count_limit_max))
      ->capture_default_str();
  command.add_option("--max-waiters-per-key", limits.max_waiters_per_key, "waiters queued on one key at most")
      ->check(whole(0, count_limit_max))
      ->capture_default_str();
  command.add_option("--max-waiters", limits.max_waiters, "waiters queued in all at most")
      ->check(whole(0, count_limit_max))
      ->capture_default_str();
  command.add_option("--sweep-ms", limits.sweep_ms.value, "period of the sweep of expired keys")
      ->check(whole_signed(1, duration_max))
      ->capture_default_str();
  command.add_option("--max-lease-ms", limits.max_lease_ms.value, "longest lease a request may ask")
      ->check(whole_signed(1, duration_max))
      ->capture_default_str();
  command.add_option("--max-wait-ms", limits.max_wait_ms.value, "longest wait a request may ask")
      ->check(whole_signed(0, duration_max))
      ->capture_default_str();
  command.add_option("--max-line-bytes", limits.max_line_bytes, "longest request line, without its newline")
      ->check(whole(line_bytes_limit_min, line_bytes_limit_max))
      ->capture_default_str();
}

}  // namespace lockstep::cli
