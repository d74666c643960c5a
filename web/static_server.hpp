// The loopback file server of `lockstep playground`: serves the files of one
// folder (the built page) to a browser on this machine. A driver, like the
// lock server: it owns a socket and a signal descriptor, one thread, and
// nothing of the lock service.
//
// It answers GET and HEAD for the folder's own files by name (`/` is
// index.html), 404 for anything else (no subfolders, no `..`, no hidden
// files), 405 for other methods; one request per connection, which it then
// closes. Bounds: a request head of head_bytes_max bytes, read within
// head_wait_ms; a file of at most file_bytes_max bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lockstep::web {

struct StaticServerConfig {
  std::string folder;
  std::uint16_t port = 8787;  // 0: any free port
};

inline constexpr std::size_t head_bytes_max = 8 * 1024;
inline constexpr int head_wait_ms = 2'000;
inline constexpr std::size_t file_bytes_max = 64 * 1024 * 1024;

// The response to one request head, as sent (status line, headers, body).
std::string static_response(const std::string& folder, std::string_view head);

// Listens on 127.0.0.1, prints `playground: http://127.0.0.1:PORT/ ...` on
// stdout, serves until SIGINT or SIGTERM. Returns the exit code: 0 when
// stopped by a signal, 2 when it cannot listen (the reason on stderr).
int run_static_server(const StaticServerConfig& config);

}  // namespace lockstep::web
