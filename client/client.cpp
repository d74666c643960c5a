#include "client/client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include <fmt/format.h>

namespace lockstep::client {

Client::~Client() { disconnect(); }

bool Client::connect(const std::string& host, std::uint16_t port, std::chrono::milliseconds patience) {
  disconnect();
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) return false;
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (true) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
      const int yes = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      fd_ = fd;
      framer_ = LineFramer{1 << 16};
      return true;
    }
    ::close(fd);
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Client::disconnect() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  output_.clear();
  fail_all("connection lost");
}

void Client::track(std::map<std::pair<std::string, std::string>, std::deque<Pending>>& table,
                   std::pair<std::string, std::string> match, Callback done) {
  table[std::move(match)].push_back(Pending{next_order_++, std::move(done)});
  ++in_flight_;
}

void Client::acquire(std::string_view key, std::string_view owner, std::int64_t lease_ms, std::int64_t wait_ms,
                     Callback done) {
  fmt::format_to(std::back_inserter(output_), "A {} {} {} {}\n", key, owner, lease_ms, wait_ms);
  track(acquires_, {std::string(owner), std::string(key)}, std::move(done));
}

void Client::release(std::string_view key, Token token, Callback done) {
  fmt::format_to(std::back_inserter(output_), "R {} {}\n", key, token.value);
  track(releases_, {std::to_string(token.value), std::string(key)}, std::move(done));
}

void Client::send_raw(std::string_view line, Callback done) {
  output_.append(line);
  output_ += '\n';
  raw_.emplace(next_order_++, std::move(done));
  ++in_flight_;
}

void Client::deliver(const Response& r) {
  const auto take = [&](std::map<std::pair<std::string, std::string>, std::deque<Pending>>& table,
                        const std::pair<std::string, std::string>& match) {
    const auto found = table.find(match);
    if (found == table.end()) return false;
    auto done = std::move(found->second.front().done);
    found->second.pop_front();
    if (found->second.empty()) table.erase(found);
    --in_flight_;
    done(r);
    return true;
  };
  bool matched = false;
  switch (r.kind) {
    case ResponseKind::granted:
    case ResponseKind::timed_out:
    case ResponseKind::busy:
      matched = take(acquires_, {r.owner, r.key});
      break;
    case ResponseKind::released:
    case ResponseKind::not_held:
      matched = take(releases_, {std::to_string(r.token.value), r.key});
      break;
    case ResponseKind::error: {
      // An E answers the oldest request still waiting (it is sent at once).
      std::uint64_t oldest = UINT64_MAX;
      std::map<std::pair<std::string, std::string>, std::deque<Pending>>* table = nullptr;
      std::pair<std::string, std::string> match;
      for (auto* candidate : {&acquires_, &releases_}) {
        for (const auto& [m, queue] : *candidate) {
          if (queue.front().order < oldest) {
            oldest = queue.front().order;
            table = candidate;
            match = m;
          }
        }
      }
      if (!raw_.empty() && raw_.begin()->first < oldest) {
        auto done = std::move(raw_.begin()->second);
        raw_.erase(raw_.begin());
        --in_flight_;
        done(r);
        matched = true;
      } else if (table != nullptr) {
        matched = take(*table, match);
      }
      break;
    }
  }
  if (!matched) ++unmatched_;
}

void Client::fail_all(const std::string& why) {
  const auto lost = Response::error(why);
  auto acquires = std::move(acquires_);
  auto releases = std::move(releases_);
  auto raw = std::move(raw_);
  acquires_.clear();
  releases_.clear();
  raw_.clear();
  in_flight_ = 0;
  for (auto* table : {&acquires, &releases}) {
    for (auto& [match, queue] : *table) {
      for (auto& pending : queue) pending.done(lost);
    }
  }
  for (auto& [order, done] : raw) done(lost);
}

std::size_t Client::poll(std::chrono::milliseconds timeout) {
  if (fd_ < 0) return 0;
  std::size_t handled = 0;
  while (!output_.empty()) {
    const auto wrote = ::send(fd_, output_.data(), output_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (wrote < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      disconnect();
      return handled;
    }
    output_.erase(0, static_cast<std::size_t>(wrote));
  }
  pollfd p{fd_, static_cast<short>(POLLIN | (output_.empty() ? 0 : POLLOUT)), 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) {
    return handled;
  }
  char chunk[64 * 1024];
  const auto got = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
  if (got <= 0) {
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) return handled;
    disconnect();
    return handled;
  }
  framer_.feed(std::string_view(chunk, static_cast<std::size_t>(got)));
  while (const auto line = framer_.next_line()) {
    const auto response = parse_response(*line);
    if (!response) {
      ++unmatched_;
      continue;
    }
    deliver(*response);
    ++handled;
  }
  return handled;
}

}  // namespace lockstep::client
