// The descriptors every epoll loop of the project's line servers owns (a
// driver: sockets, signals, epoll): `lockstep serve`, `serve --cluster` and
// the adapters' line server. A listening socket, a signalfd that takes
// SIGTERM and SIGINT (and any other signal the server names), and the epoll
// set that watches them; each server adds its own descriptors and its
// clients' sockets. Set up and torn down once here; what a line means stays
// with each server.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace lockstep {

class LoopSockets {
 public:
  // The epoll keys of the listener and the signalfd; a client's key is its
  // ConnectionId (from 1), and a server's own descriptors take keys just
  // below signal_key.
  static constexpr std::uint64_t listener_key = 0;
  static constexpr std::uint64_t signal_key = UINT64_MAX;

  LoopSockets() = default;
  LoopSockets(const LoopSockets&) = delete;
  LoopSockets& operator=(const LoopSockets&) = delete;
  ~LoopSockets();  // closes what is open (the clients' sockets are the server's)

  // Signals are taken by the loop alone: SIGTERM, SIGINT and `extra` are
  // blocked for the calling thread (threads started after inherit the mask)
  // and read from a signalfd; SIGPIPE is ignored (send reports a peer that
  // is gone). Then the epoll set, watching the signalfd under signal_key.
  void open(std::initializer_list<int> extra = {});
  // A TCP socket bound to host:port, not listening yet (`port` 0: a free
  // port, written back). The error, worded for the start-up line, otherwise.
  std::optional<std::string> bind(const std::string& host, std::uint16_t& port);
  // Listens on the bound socket and watches it under listener_key.
  std::optional<std::string> listen(const std::string& host, std::uint16_t port);
  // Watches another readable descriptor under `key`.
  void watch(int fd, std::uint64_t key) const;

  int epoll_fd() const { return epoll_fd_; }
  int listen_fd() const { return listen_fd_; }
  int signal_fd() const { return signal_fd_; }

 private:
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int signal_fd_ = -1;
};

}  // namespace lockstep
