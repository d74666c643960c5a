// What the epoll loops of the project's line servers share (a driver:
// sockets and epoll), written once for `lockstep serve` (server.cpp),
// `serve --cluster` (cluster_server.cpp) and the adapters' line server
// (adapters/common/line_adapter.cpp): the loop's descriptors, its clients
// by id, accepting them, reading and writing their sockets with the epoll
// interest kept in step, the end of a turn, and taking a client out. Each
// server derives from it and keeps only what differs: what a line means,
// what a close means, its clock and its own descriptors.
#pragma once

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "drivers/server/loop_sockets.hpp"
#include "drivers/server/socket_connection.hpp"
#include "impl/assert.hpp"
#include "impl/units.hpp"

namespace lockstep {

template <class Connection>
class LineLoop {
 protected:
  static constexpr int epoll_batch = 256;

  LineLoop() = default;
  LineLoop(const LineLoop&) = delete;
  LineLoop& operator=(const LineLoop&) = delete;
  ~LineLoop() {
    for (auto& [id, c] : connections_) ::close(c->fd);
  }

  // Every client waiting to connect (accept_clients), each under
  // `next_id()` and then handed to `accepted(id)`.
  template <class NextId, class Accepted>
  void accept_all_clients(std::size_t max_connections, std::size_t max_line_bytes, NextId next_id, Accepted accepted) {
    accept_clients<Connection>(sockets_.listen_fd(), sockets_.epoll_fd(), connections_, max_connections,
                               max_line_bytes, counts_, next_id, accepted);
  }

  // The same, each client under the next number of the loop's own count
  // (from 1), with nothing more to do.
  void accept_all_clients(std::size_t max_connections, std::size_t max_line_bytes) {
    accept_all_clients(max_connections, max_line_bytes, [this] { return ConnectionId{next_client_++}; },
                       [](ConnectionId) {});
  }

  // Waits for events (at most epoll_batch) for up to `timeout_ms` (-1: no
  // limit); the count, or -1 on an error other than EINTR.
  int wait(std::vector<epoll_event>& events, int timeout_ms) {
    events.resize(epoll_batch);
    const int ready = epoll_wait(sockets_.epoll_fd(), events.data(), epoll_batch, timeout_ms);
    return ready < 0 && errno == EINTR ? 0 : ready;
  }

  // An event of a client's socket: what it can take is written first, then
  // a chunk is read; `input_ended(c)` when its input ended now. A key that
  // is no client's (any more) is ignored.
  template <class InputEnded>
  void client_event(const epoll_event& event, InputEnded input_ended) {
    const auto found = connections_.find(ConnectionId{event.data.u64});
    if (found == connections_.end()) return;
    Connection& c = *found->second;
    if (event.events & EPOLLOUT) flush(c);
    if ((event.events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && c.read_chunk()) input_ended(c);
  }

  // An event of the listener (every waiting client accepted, numbered by
  // the loop) or of a client (client_event).
  template <class InputEnded>
  void listener_or_client_event(const epoll_event& event, std::size_t max_connections, std::size_t max_line_bytes,
                                InputEnded input_ended) {
    if (event.data.u64 == LoopSockets::listener_key) {
      accept_all_clients(max_connections, max_line_bytes);
    } else {
      client_event(event, input_ended);
    }
  }

  // Whether a connection still has complete lines from an earlier turn
  // (the loop then must not sleep).
  bool backlog() const {
    return std::any_of(connections_.begin(), connections_.end(),
                       [](const auto& entry) { return entry.second->has_work(); });
  }

  // How long the loop may sleep: not at all while lines are left over from
  // the previous turn (one connection's share is bounded per turn), until
  // the next due instant of the engine or node on the wall clock (at most a
  // minute), or until an event with the test clock, whose time moves only on
  // request.
  int timeout_ms(bool test_clock, std::optional<TimeMs> due, TimeMs now) const {
    if (backlog()) return 0;
    if (test_clock || !due) return -1;
    return static_cast<int>(std::clamp<std::int64_t>(due->value - now.value, 0, 60'000));
  }

  // The end of a turn: each connection gets its share of lines
  // (`handle_lines(c)`, in connection order), what it is owed goes out, and
  // each that is finished is closed (`close(c)`, which calls drop()).
  template <class HandleLines, class Close>
  void end_turn(HandleLines handle_lines, Close close) {
    for (auto& [id, c] : connections_) handle_lines(*c);
    std::vector<Connection*> done;
    for (auto& [id, c] : connections_) {
      flush(*c);
      if (c->finished()) done.push_back(c.get());
    }
    for (auto* c : done) close(*c);
  }

  void flush(Connection& c) {
    c.send_pending();
    set_interest(c);
  }
  void set_interest(Connection& c) { c.update_interest(sockets_.epoll_fd()); }

  // Takes `c` out of the loop: out of the epoll set, its socket closed as
  // close_socket says, and forgotten (so `c` is gone after).
  void drop(Connection& c) {
    const ConnectionId id = c.id;
    LOCKSTEP_ASSERT(connections_.contains(id));
    epoll_ctl(sockets_.epoll_fd(), EPOLL_CTL_DEL, c.fd, nullptr);
    c.close_socket();
    connections_.erase(id);
  }

  LoopSockets sockets_;
  std::map<ConnectionId, std::unique_ptr<Connection>> connections_;
  AcceptCounts counts_;

 private:
  std::uint64_t next_client_ = 1;
};

}  // namespace lockstep
