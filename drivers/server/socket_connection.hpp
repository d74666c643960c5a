// One client's TCP connection as both servers' epoll loops keep it (a
// driver: sockets and epoll): its line framer, its output not yet sent, and
// what the loop wants to hear of it. Reading a chunk, sending what the
// socket takes and keeping the epoll interest in step are written once
// here; what a connection means to the engine or to the cluster node stays
// with each server.
#pragma once

#include <sys/epoll.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "impl/line_framer.hpp"
#include "impl/units.hpp"

namespace lockstep {

struct SocketConnection {
  static constexpr std::size_t read_chunk_bytes = 64 * 1024;

  int fd = -1;
  ConnectionId id;
  LineFramer framer;
  std::string output;
  std::size_t output_sent = 0;
  bool reading = true;       // false after EOF, X, an overlong line or the server's close
  bool discarding = false;   // lines still buffered are dropped (X, an overlong line, the server's close)
  bool slow = false;         // did not read its responses, or is gone: closed at once
  unsigned interest = EPOLLIN;

  SocketConnection(int descriptor, ConnectionId identity, std::size_t max_line)
      : fd(descriptor), id(identity), framer(max_line) {}
  std::size_t pending_output() const { return output.size() - output_sent; }
  bool has_work() const { return !discarding && framer.has_complete_line(); }

  // Reads one chunk once every complete line was taken (so the framer never
  // holds more than a chunk and a partial line); at EOF or an error, stops
  // reading. Returns true when input ended now.
  bool read_chunk();
  // Sends what the socket takes now; a peer that is gone makes it slow.
  void send_pending();
  // Closes the socket so that what was written reaches the peer: the
  // sending side is shut down first (the last answer, then the end), and
  // what the peer sent that was never read (the rest of an over-long line,
  // lines after `X`) is read out and dropped, up to a bound; closing a
  // socket with unread input resets the connection, and a reset may
  // discard an answer still on its way.
  void close_socket();
  // Registers with `epoll_fd` the events the connection needs now.
  void update_interest(int epoll_fd);
};

// The next client waiting on `listen_fd`, non-blocking with TCP_NODELAY:
// fd -1 when none is waiting. At the connection limit a client is still
// accepted, told `E too many connections` and closed (`refused`), so that it
// learns why instead of hanging in the backlog.
struct AcceptedClient {
  int fd = -1;
  bool refused = false;
};
AcceptedClient accept_client(int listen_fd, bool at_limit);
// Adds a client's socket to the epoll set, reading, under its id.
void watch_client(int epoll_fd, int fd, ConnectionId id);

// Every client waiting on `listen_fd`, each added to `connections` (a map
// from ConnectionId to std::unique_ptr<Connection>) and to the epoll set
// under `next_id()`, then handed to `accepted(id)`; past `max_connections`
// each is refused as accept_client says. Counts both.
struct AcceptCounts {
  std::uint64_t accepted = 0, refused = 0;
};
template <class Connection, class Connections, class NextId, class Accepted>
void accept_clients(int listen_fd, int epoll_fd, Connections& connections, std::size_t max_connections,
                    std::size_t max_line_bytes, AcceptCounts& counts, NextId next_id, Accepted accepted) {
  while (true) {
    const auto client = accept_client(listen_fd, connections.size() >= max_connections);
    if (client.refused) {
      ++counts.refused;
      continue;
    }
    if (client.fd < 0) return;
    const ConnectionId id = next_id();
    watch_client(epoll_fd, client.fd, id);
    connections.emplace(id, std::make_unique<Connection>(client.fd, id, max_line_bytes));
    ++counts.accepted;
    accepted(id);
  }
}

}  // namespace lockstep
