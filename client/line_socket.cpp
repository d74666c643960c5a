#include "client/line_socket.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace lockstep::client {

LineSocket::LineSocket(LineSocket&& other) noexcept : fd_(other.fd_), framer_(std::move(other.framer_)) {
  other.fd_ = -1;
}

LineSocket& LineSocket::operator=(LineSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    framer_ = std::move(other.framer_);
    other.fd_ = -1;
  }
  return *this;
}

LineSocket::~LineSocket() {
  if (fd_ >= 0) ::close(fd_);
}

std::optional<LineSocket> LineSocket::connect(const std::string& host, std::uint16_t port,
                                              std::chrono::milliseconds patience) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) return std::nullopt;
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (true) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return std::nullopt;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
      const int yes = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      return LineSocket(fd);
    }
    ::close(fd);
    if (std::chrono::steady_clock::now() >= give_up) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool LineSocket::send_bytes(std::string_view bytes) {
  while (!bytes.empty() && fd_ >= 0) {
    const auto wrote = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(wrote));
  }
  return bytes.empty();
}

bool LineSocket::send_line(std::string_view line) {
  std::string bytes(line);
  bytes += '\n';
  return send_bytes(bytes);
}

LineSocket::Status LineSocket::read_line(std::string& line, std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (const auto next = framer_.next_line()) {
      line.assign(*next);
      return Status::line;
    }
    if (fd_ < 0) return Status::closed;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Status::timeout;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return Status::timeout;
    char chunk[16 * 1024];
    const auto got = ::recv(fd_, chunk, sizeof chunk, 0);
    if (got > 0) {
      framer_.feed(std::string_view(chunk, static_cast<std::size_t>(got)));
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
      ::close(fd_);
      fd_ = -1;
    }
  }
}

void LineSocket::shutdown_write() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

std::optional<std::uint16_t> pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = 0;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  ::close(fd);
  if (!ok) return std::nullopt;
  return ntohs(address.sin_port);
}

}  // namespace lockstep::client
