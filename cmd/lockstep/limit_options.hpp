// The limits of CONTRACT.md as command-line options (`--max-keys N` ...),
// shared by every subcommand that starts or tests a server.
#pragma once

#include <CLI/CLI.hpp>

#include "impl/limits.hpp"

namespace lockstep::cli {

inline void add_limit_options(CLI::App& command, Limits& limits) {
  command.add_option("--max-keys", limits.max_keys, "keys registered at most")->capture_default_str();
  command.add_option("--max-waiters-per-key", limits.max_waiters_per_key, "waiters queued on one key at most")
      ->capture_default_str();
  command.add_option("--max-waiters", limits.max_waiters, "waiters queued in all at most")->capture_default_str();
  command.add_option("--sweep-ms", limits.sweep_ms.value, "period of the sweep of expired keys")->capture_default_str();
  command.add_option("--max-lease-ms", limits.max_lease_ms.value, "longest lease a request may ask")
      ->capture_default_str();
  command.add_option("--max-wait-ms", limits.max_wait_ms.value, "longest wait a request may ask")
      ->capture_default_str();
  command.add_option("--max-line-bytes", limits.max_line_bytes, "longest request line, without its newline")
      ->capture_default_str();
}

}  // namespace lockstep::cli
