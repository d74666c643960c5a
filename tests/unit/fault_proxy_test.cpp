// The fuzzer's relays (live/fault_proxy.hpp) on real loopback sockets: a
// link relays bytes both ways unchanged; a cut discards what goes its way
// while the connection stays open (the other way still flows), and its heal
// resets a connection that lost bytes while one that lost none goes on; a
// delay holds bytes at least that long one way and not the other; a reset
// closes both ends; a connection accepted during a cut carries nothing; and
// a destroyed proxy closes its connections and listens no more.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>

#include "live/fault_proxy.hpp"

namespace lockstep::live {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// One end of a TCP connection, blocking, read with a deadline.
struct End {
  int fd = -1;
  End() = default;
  explicit End(int f) : fd(f) {}
  End(End&& other) noexcept : fd(other.fd) { other.fd = -1; }
  End& operator=(End&& other) noexcept {
    std::swap(fd, other.fd);
    return *this;
  }
  ~End() {
    if (fd >= 0) close(fd);
  }
  bool send_text(const std::string& text) const {
    return ::send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
  }
  // `want` bytes; fewer if the connection ends or `timeout` passes first.
  enum class Got { bytes, timeout, closed };
  Got read_text(std::string& into, std::size_t want, std::chrono::milliseconds timeout) const {
    into.clear();
    const auto give_up = Clock::now() + timeout;
    while (into.size() < want) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()).count();
      if (left <= 0) return Got::timeout;
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) return Got::timeout;
      char buffer[4096];
      const auto n = recv(fd, buffer, std::min(sizeof buffer, want - into.size()), 0);
      if (n <= 0) return Got::closed;
      into.append(buffer, static_cast<std::size_t>(n));
    }
    return Got::bytes;
  }
};

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// The relays' target: a listener on a free port.
struct Target {
  End listener;
  std::uint16_t port = 0;
  Target() : listener(socket(AF_INET, SOCK_STREAM, 0)) {
    auto a = loopback(0);
    socklen_t size = sizeof a;
    EXPECT_EQ(bind(listener.fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(listen(listener.fd, 16), 0);
    EXPECT_EQ(getsockname(listener.fd, reinterpret_cast<sockaddr*>(&a), &size), 0);
    port = ntohs(a.sin_port);
  }
  std::optional<End> accept_one(std::chrono::milliseconds timeout) const {
    pollfd p{listener.fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
    return End(accept(listener.fd, nullptr, nullptr));
  }
};

End dial(std::uint16_t port) {
  End end(socket(AF_INET, SOCK_STREAM, 0));
  const auto a = loopback(port);
  EXPECT_EQ(connect(end.fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  return end;
}

struct Linked {
  std::unique_ptr<FaultProxy> proxy;
  int link = 0;
  Target target;
  End client, server;
};

Linked linked() {
  Linked l;
  std::string error;
  l.proxy = FaultProxy::start(error);
  EXPECT_TRUE(l.proxy) << error;
  const auto link = l.proxy->add_link(l.target.port, error);
  EXPECT_TRUE(link) << error;
  l.link = *link;
  l.client = dial(l.proxy->port(l.link));
  auto server = l.target.accept_one(2s);
  EXPECT_TRUE(server);
  if (server) l.server = std::move(*server);
  return l;
}

TEST(FaultProxy, RelaysBothWaysUnchanged) {
  auto l = linked();
  std::string got;
  std::string big(200'000, 'x');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  ASSERT_TRUE(l.client.send_text(big));
  ASSERT_EQ(l.server.read_text(got, big.size(), 5s), End::Got::bytes);
  EXPECT_EQ(got, big);
  ASSERT_TRUE(l.server.send_text("pong\n"));
  ASSERT_EQ(l.client.read_text(got, 5, 5s), End::Got::bytes);
  EXPECT_EQ(got, "pong\n");
  EXPECT_EQ(l.proxy->stats(l.link).accepted, 1u);
  EXPECT_EQ(l.proxy->stats(l.link).bytes_relayed, big.size() + 5);
}

TEST(FaultProxy, AnEndThatClosesIsSeenClosedAtTheOther) {
  auto l = linked();
  ASSERT_TRUE(l.server.send_text("bye\n"));
  l.server = End();
  std::string got;
  ASSERT_EQ(l.client.read_text(got, 4, 2s), End::Got::bytes);
  EXPECT_EQ(l.client.read_text(got, 1, 2s), End::Got::closed);
  auto m = linked();
  m.client = End();
  EXPECT_EQ(m.server.read_text(got, 1, 2s), End::Got::closed);
}

TEST(FaultProxy, ACutOneWayIsABlackHoleThatKeepsTheConnectionAndItsHealResetsIt) {
  auto l = linked();
  l.proxy->cut(l.link, FaultProxy::Direction::up);
  std::string got;
  ASSERT_TRUE(l.client.send_text("lost\n"));
  EXPECT_EQ(l.server.read_text(got, 5, 400ms), End::Got::timeout);  // not closed: held and discarded
  // The other way still flows.
  ASSERT_TRUE(l.server.send_text("down\n"));
  ASSERT_EQ(l.client.read_text(got, 5, 2s), End::Got::bytes);
  EXPECT_EQ(got, "down\n");
  EXPECT_EQ(l.proxy->stats(l.link).bytes_discarded, 5u);
  EXPECT_EQ(l.proxy->stats(l.link).open, 1u);
  // Healed, the stream that lost bytes is reset at both ends.
  l.proxy->heal(l.link);
  EXPECT_EQ(l.client.read_text(got, 1, 2s), End::Got::closed);
  EXPECT_EQ(l.server.read_text(got, 1, 2s), End::Got::closed);
  EXPECT_EQ(l.proxy->stats(l.link).resets, 1u);
}

TEST(FaultProxy, ACutBothWaysThatLostNothingHealsWithItsConnectionIntact) {
  auto l = linked();
  l.proxy->cut(l.link, FaultProxy::Direction::both);
  std::string got;
  EXPECT_EQ(l.client.read_text(got, 1, 200ms), End::Got::timeout);
  l.proxy->heal(l.link);
  ASSERT_TRUE(l.client.send_text("after\n"));
  ASSERT_EQ(l.server.read_text(got, 6, 2s), End::Got::bytes);
  EXPECT_EQ(got, "after\n");
  EXPECT_EQ(l.proxy->stats(l.link).resets, 0u);
}

TEST(FaultProxy, AConnectionMadeDuringACutCarriesNothingButStaysOpen) {
  auto l = linked();
  l.proxy->cut(l.link, FaultProxy::Direction::both);
  auto client = dial(l.proxy->port(l.link));
  auto server = l.target.accept_one(2s);
  ASSERT_TRUE(server);
  std::string got;
  ASSERT_TRUE(client.send_text("x\n"));
  ASSERT_TRUE(server->send_text("y\n"));
  EXPECT_EQ(server->read_text(got, 2, 300ms), End::Got::timeout);
  EXPECT_EQ(client.read_text(got, 2, 300ms), End::Got::timeout);
  EXPECT_EQ(l.proxy->stats(l.link).bytes_discarded, 4u);
}

TEST(FaultProxy, ADelayHoldsBytesOneWayOnly) {
  auto l = linked();
  l.proxy->slow(l.link, FaultProxy::Direction::down, 300ms);
  std::string got;
  auto began = Clock::now();
  ASSERT_TRUE(l.client.send_text("up\n"));
  ASSERT_EQ(l.server.read_text(got, 3, 2s), End::Got::bytes);
  EXPECT_LT(Clock::now() - began, 250ms);  // up is not slowed (a loaded machine has 250 ms)
  began = Clock::now();
  ASSERT_TRUE(l.server.send_text("down\n"));
  ASSERT_EQ(l.client.read_text(got, 5, 3s), End::Got::bytes);
  EXPECT_GE(Clock::now() - began, 300ms);
  EXPECT_EQ(got, "down\n");
  l.proxy->heal(l.link);
  began = Clock::now();
  ASSERT_TRUE(l.server.send_text("fast\n"));
  ASSERT_EQ(l.client.read_text(got, 5, 2s), End::Got::bytes);
  EXPECT_LT(Clock::now() - began, 250ms);
}

TEST(FaultProxy, AResetClosesBothEnds) {
  auto l = linked();
  l.proxy->reset(l.link);
  std::string got;
  EXPECT_EQ(l.client.read_text(got, 1, 2s), End::Got::closed);
  EXPECT_EQ(l.server.read_text(got, 1, 2s), End::Got::closed);
  EXPECT_EQ(l.proxy->stats(l.link).open, 0u);
  // The link itself still relays new connections.
  auto client = dial(l.proxy->port(l.link));
  auto server = l.target.accept_one(2s);
  ASSERT_TRUE(server);
  ASSERT_TRUE(client.send_text("again\n"));
  ASSERT_EQ(server->read_text(got, 6, 2s), End::Got::bytes);
}

TEST(FaultProxy, ADestroyedProxyClosesItsConnectionsAndListensNoMore) {
  auto l = linked();
  const auto port = l.proxy->port(l.link);
  l.proxy.reset();
  std::string got;
  EXPECT_EQ(l.client.read_text(got, 1, 2s), End::Got::closed);
  EXPECT_EQ(l.server.read_text(got, 1, 2s), End::Got::closed);
  End refused(socket(AF_INET, SOCK_STREAM, 0));
  const auto a = loopback(port);
  EXPECT_NE(connect(refused.fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
}

TEST(FaultProxy, ARefusingTargetIsRefusedThroughTheRelay) {
  std::string error;
  auto proxy = FaultProxy::start(error);
  ASSERT_TRUE(proxy) << error;
  std::uint16_t closed_port = 0;
  {
    Target gone;
    closed_port = gone.port;
  }
  const auto link = proxy->add_link(closed_port, error);
  ASSERT_TRUE(link) << error;
  auto client = dial(proxy->port(*link));
  std::string got;
  EXPECT_EQ(client.read_text(got, 1, 2s), End::Got::closed);
}

}  // namespace
}  // namespace lockstep::live
