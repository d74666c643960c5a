// A TCP connection that speaks in lines: connect with retries, send a line,
// read the next line with a deadline. Blocking, for tools that drive a
// server step by step (the live conformance runner, tests); the pipelined
// client (client.hpp) is built on the same framing.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "impl/line_framer.hpp"

namespace lockstep::client {

class LineSocket {
 public:
  LineSocket() = default;
  LineSocket(const LineSocket&) = delete;
  LineSocket& operator=(const LineSocket&) = delete;
  LineSocket(LineSocket&& other) noexcept;
  LineSocket& operator=(LineSocket&& other) noexcept;
  ~LineSocket();

  // Connects to host:port, retrying until `patience` has passed.
  static std::optional<LineSocket> connect(const std::string& host, std::uint16_t port,
                                           std::chrono::milliseconds patience);

  bool send_line(std::string_view line);
  bool send_bytes(std::string_view bytes);

  enum class Status { line, timeout, closed };
  // The next line (without `\n`) if one arrives within `timeout`.
  Status read_line(std::string& line, std::chrono::milliseconds timeout);

  void shutdown_write();
  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }

 private:
  explicit LineSocket(int fd) : fd_(fd) {}
  int fd_ = -1;
  LineFramer framer_{1 << 20};
};

// A TCP port on 127.0.0.1 that was free when asked (for starting a server).
std::optional<std::uint16_t> pick_free_port();

}  // namespace lockstep::client
