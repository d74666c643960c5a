#include "drivers/server/socket_connection.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "impl/assert.hpp"

namespace lockstep {

bool SocketConnection::read_chunk() {
  LOCKSTEP_ASSERT(fd >= 0);
  if (!reading || framer.has_complete_line()) return false;
  char chunk[read_chunk_bytes];
  const auto got = ::recv(fd, chunk, sizeof chunk, 0);
  if (got > 0) {
    framer.feed(std::string_view(chunk, static_cast<std::size_t>(got)));
    return false;
  }
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  // EOF or an error: the lines already received are still handled; then
  // the server closes the connection.
  reading = false;
  return true;
}

void SocketConnection::send_pending() {
  LOCKSTEP_ASSERT(fd >= 0 && output_sent <= output.size());
  while (pending_output() > 0 && !slow) {
    const auto wrote = ::send(fd, output.data() + output_sent, pending_output(), MSG_NOSIGNAL);
    if (wrote < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      slow = true;  // the peer is gone: nothing more can be written
      break;
    }
    output_sent += static_cast<std::size_t>(wrote);
  }
  if (output_sent == output.size()) {
    output.clear();
    output_sent = 0;
  } else if (output_sent > read_chunk_bytes) {
    output.erase(0, output_sent);
    output_sent = 0;
  }
}

void SocketConnection::close_socket() {
  if (!slow) {
    ::shutdown(fd, SHUT_WR);
    // What has arrived, not what may still come: the loop does not wait
    // for a peer that keeps writing (it gets a reset once closed).
    char chunk[read_chunk_bytes];
    for (std::size_t read_out = 0; read_out < 16 * read_chunk_bytes;) {
      const auto got = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
      if (got <= 0) break;
      read_out += static_cast<std::size_t>(got);
    }
  }
  ::close(fd);
  fd = -1;  // closed once: every later use of the socket is a bug
}

void SocketConnection::update_interest(int epoll_fd) {
  // Input is dropped only once it has ended (X, an overlong line, a close).
  LOCKSTEP_ASSERT(fd >= 0 && !(discarding && reading));
  const unsigned wanted = (reading ? static_cast<unsigned>(EPOLLIN) : 0u) |
                          (pending_output() > 0 ? static_cast<unsigned>(EPOLLOUT) : 0u);
  if (wanted == interest) return;
  interest = wanted;
  epoll_event event{};
  event.events = wanted;
  event.data.u64 = id.value;
  epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &event);
}

AcceptedClient accept_client(int listen_fd, bool at_limit) {
  const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) return {};
  if (at_limit) {
    static constexpr std::string_view refusal = "E too many connections\n";
    [[maybe_unused]] const auto written = ::send(fd, refusal.data(), refusal.size(), MSG_NOSIGNAL);
    ::close(fd);
    return {-1, true};
  }
  const int yes = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  return {fd, false};
}

void watch_client(int epoll_fd, int fd, ConnectionId id) {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = id.value;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event);
}

}  // namespace lockstep
