// `lockstep serve`: the engine behind a real TCP server. One thread, one
// epoll loop; the engine stays sans-IO and this driver owns the sockets, the
// clock and the token-mark file.
//
// Per loop turn: wait for readiness (or the engine's next due instant, or a
// signal), read what is ready, hand at most `lines_per_turn` lines of each
// connection to the engine, persist the token mark if it grew, then append
// the engine's responses to the connections' output buffers and write them.
// Every resource is bounded: connections, bytes of an unfinished line, bytes
// buffered for a client that does not read (past the bound the client is
// closed and its waiters dropped), lines handled per turn per connection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "impl/bugs.hpp"
#include "impl/limits.hpp"

namespace lockstep {

struct ServerConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 7878;
  Limits limits;
  std::uint64_t max_connections = 1'024;
  // Bytes of responses held for one client before it counts as not reading.
  std::uint64_t max_output_bytes = 1 << 20;
  // Lines of one connection handled per loop turn, so a flood cannot starve others.
  std::uint64_t lines_per_turn = 64;
  bool test_clock = false;
  // Where the token mark is kept across restarts; empty: derive the first
  // token from the wall clock instead (see docs/architecture.md, "Tokens").
  std::string state_file;
  InjectedBug bug = InjectedBug::none;
  bool quiet = false;
};

// Runs until SIGTERM or SIGINT and returns 0; returns 2 when it cannot start
// (port in use, a state file that cannot be used, tokens exhausted) or when
// the token mark can no longer be persisted. Errors are one line on stderr.
int run_server(const ServerConfig& config);

}  // namespace lockstep
