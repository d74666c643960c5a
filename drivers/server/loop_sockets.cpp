#include "drivers/server/loop_sockets.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "impl/assert.hpp"

namespace lockstep {

LoopSockets::~LoopSockets() {
  for (const int fd : {listen_fd_, epoll_fd_, signal_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

void LoopSockets::open(std::initializer_list<int> extra) {
  LOCKSTEP_ASSERT(epoll_fd_ < 0);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  for (const int s : extra) sigaddset(&mask, s);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signal_fd_ = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  watch(signal_fd_, signal_key);
}

std::optional<std::string> LoopSockets::bind(const std::string& host, std::uint16_t& port) {
  LOCKSTEP_ASSERT(listen_fd_ < 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
    return fmt::format("'{}' is not an IPv4 address", host);
  }
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int yes = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    return fmt::format("cannot listen on {}:{}: {}", host, port, std::strerror(errno));
  }
  socklen_t length = sizeof address;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
  port = ntohs(address.sin_port);
  return std::nullopt;
}

std::optional<std::string> LoopSockets::listen(const std::string& host, std::uint16_t port) {
  LOCKSTEP_ASSERT(listen_fd_ >= 0 && epoll_fd_ >= 0);
  if (::listen(listen_fd_, 1024) != 0) return fmt::format("cannot listen on {}:{}: {}", host, port, std::strerror(errno));
  watch(listen_fd_, listener_key);
  return std::nullopt;
}

void LoopSockets::watch(int fd, std::uint64_t key) const {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = key;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
}

}  // namespace lockstep
