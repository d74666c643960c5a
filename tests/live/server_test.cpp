// The real server, started as a process (`lockstep serve`) and driven over
// TCP: the test clock's C and X, limits on connections, tokens across a
// restart, clean exit on SIGTERM, an orderly close after an over-long line. The binary comes from LOCKSTEP_BINARY.
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "client/line_socket.hpp"
#include "impl/protocol.hpp"
#include "tests/live/server_process.hpp"

namespace lockstep::testing {
namespace {

using namespace std::chrono_literals;
using client::LineSocket;

TEST(Server, TestClockMovesOnlyOnCAndSendsMarkersEverywhere) {
  TestServer server("--test-clock --sweep-ms 100");
  auto a = server.connect();
  auto b = server.connect();
  EXPECT_EQ(request(a, "A k alice 50 0"), "A");
  a.send_line("A k bob 10 30");  // queued on the held key
  a.send_line("C 29");
  EXPECT_EQ(next_line(a), "C 29");
  EXPECT_EQ(next_line(b), "C 29");
  a.send_line("C 30");
  EXPECT_EQ(next_line(a), "T bob k");  // bob's deadline, before the marker
  EXPECT_EQ(next_line(a), "C 30");
  EXPECT_EQ(next_line(b), "C 30");
  a.send_line("C 29");
  EXPECT_EQ(next_line(a).substr(0, 2), "E ");  // the clock never goes back
}

TEST(Server, XEndsTheConnectionAndDropsItsWaiters) {
  TestServer server("--test-clock");
  auto holder = server.connect();
  auto waiter = server.connect();
  const auto token = granted_token(request(holder, "A k alice 100 0", true));
  waiter.send_line("A k bob 100 1000");
  waiter.send_line("X");
  waiter.send_line("A z carol 100 0");  // discarded: it comes after X
  std::string line;
  EXPECT_EQ(waiter.read_line(line, 2s), LineSocket::Status::closed);
  holder.send_line("R k " + token);
  EXPECT_EQ(next_line(holder), "R " + token + " k");  // no hand-off: bob was dropped
  EXPECT_EQ(request(holder, "R z 1").substr(0, 1), "N");  // carol's acquire never ran
}

// `C` takes leading zeros; its marker is the instant written canonically
// (docs/protocol.md, "Exact, with a test clock").
TEST(Server, CWithLeadingZerosIsEchoedCanonically) {
  TestServer server("--test-clock");
  auto a = server.connect();
  a.send_line("C 0010");
  EXPECT_EQ(next_line(a), "C 10");
  a.send_line("C 0");
  EXPECT_EQ(next_line(a).substr(0, 2), "E ");  // below the clock: refused, nothing moves
}

// `X` closes only after the answers to the lines before it: they were
// produced first, and go out first.
TEST(Server, XClosesAfterTheAnswersAlreadyProduced) {
  TestServer server("--test-clock");
  auto a = server.connect();
  a.send_bytes("A k alice 100 0\nA j alice 100 0\nX\nA z alice 100 0\n");
  EXPECT_EQ(next_line(a).substr(0, 1), "A");
  EXPECT_EQ(next_line(a).substr(0, 1), "A");
  EXPECT_EQ(next_line(a), "<closed>");
}

// Bytes after the last newline when the client's input ends are no request:
// they are not answered and change nothing.
TEST(Server, AnUnfinishedLastLineIsNoRequest) {
  TestServer server("");
  auto a = server.connect();
  a.send_bytes("A k alice 100000 0\nA j alice 100000 0");
  a.shutdown_write();
  EXPECT_EQ(next_line(a).substr(0, 1), "A");
  EXPECT_EQ(next_line(a), "<closed>");
  auto b = server.connect();
  EXPECT_EQ(request(b, "A j bob 100 0"), "A");  // j was never acquired
  EXPECT_EQ(request(b, "A k bob 100 0"), "T");  // k was
}

TEST(Server, WithoutTestClockCAndXAreMalformed) {
  TestServer server("");
  auto a = server.connect();
  EXPECT_EQ(request(a, "C 10"), "E");
  EXPECT_EQ(request(a, "X"), "E");
  EXPECT_EQ(request(a, "A k o 10 0").substr(0, 1), "A");
}

TEST(Server, ConnectionsPastTheLimitAreAnsweredEAndClosed) {
  TestServer server("--max-connections 2");
  auto a = server.connect();
  auto b = server.connect();
  EXPECT_EQ(request(a, "A k o 10 0").substr(0, 1), "A");
  EXPECT_EQ(request(b, "A j o 10 0").substr(0, 1), "A");
  auto c = server.connect();
  std::string line;
  ASSERT_EQ(c.read_line(line, 2s), LineSocket::Status::line);
  EXPECT_EQ(line, "E too many connections");
  EXPECT_EQ(c.read_line(line, 2s), LineSocket::Status::closed);
  EXPECT_EQ(request(a, "A z o 10 0").substr(0, 1), "A");  // the others are unaffected
}

TEST(Server, TokensIncreaseAcrossARestartWithAStateFile) {
  const auto state = std::filesystem::temp_directory_path() / ("lockstep-state-" + std::to_string(getpid()));
  std::filesystem::remove(state);
  std::uint64_t last = 0;
  {
    TestServer first("--state-file " + state.string());
    auto a = first.connect();
    for (int i = 0; i < 50; ++i) {
      last = std::stoull(granted_token(request(a, "A k" + std::to_string(i) + " o 100000 0", true)));
    }
    EXPECT_EQ(first.stop(), 0);  // SIGTERM: clean exit
  }
  TestServer second("--state-file " + state.string());
  auto b = second.connect();
  const auto after = std::stoull(granted_token(request(b, "A k0 o 100 0", true)));
  EXPECT_GT(after, last);
  std::filesystem::remove(state);
}

TEST(Server, TokensIncreaseAcrossARestartWithoutAStateFile) {
  std::uint64_t last = 0;
  {
    TestServer first("");
    auto a = first.connect();
    last = std::stoull(granted_token(request(a, "A k o 100000 0", true)));
  }
  TestServer second("");
  auto b = second.connect();
  EXPECT_GT(std::stoull(granted_token(request(b, "A k o 100 0", true))), last);
}

TEST(Server, RealClockTimesOutWaiters) {
  TestServer server("");
  auto a = server.connect();
  EXPECT_EQ(request(a, "A k alice 5000 0").substr(0, 1), "A");
  const auto start = std::chrono::steady_clock::now();
  a.send_line("A k bob 100 50");
  EXPECT_EQ(next_line(a, 5s), "T bob k");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 49ms);  // never before its deadline
}

// An over-long line is answered `E`, and the connection then ends in an
// orderly way: the server shuts its sending side down and reads out what
// it never read before it closes. Closing with unread input would reset
// the connection instead, and a reset may discard the `E` on its way. The
// unread input is made sure: the server is paused while 70,000 bytes
// without a newline arrive, more than the 64 KiB it reads at once, so the
// rest is still unread when it answers. After the `E` the client must read
// an end (0), not a reset.
TEST(Server, AnOverlongLineGetsItsEAndAnOrderlyClose) {
  TestServer server("");
  auto client = server.connect();
  ASSERT_EQ(request(client, "A k alice 100 0"), "A");  // it runs
  ASSERT_EQ(::kill(server.pid(), SIGSTOP), 0);
  ASSERT_TRUE(client.send_bytes(std::string(70'000, 'x')));
  // Wait until every byte has reached the paused server's socket.
  for (int waited_ms = 0; waited_ms < 5'000; waited_ms += 10) {
    int unsent = 0;
    if (::ioctl(client.fd(), SIOCOUTQ, &unsent) == 0 && unsent == 0) break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(::kill(server.pid(), SIGCONT), 0);
  EXPECT_EQ(next_line(client).substr(0, 2), "E ");
  // Nothing more is buffered in the client; what comes now is the end.
  ::pollfd ready{client.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&ready, 1, 5'000), 1);
  char byte = 0;
  errno = 0;
  const auto got = ::recv(client.fd(), &byte, 1, 0);
  EXPECT_EQ(got, 0) << "a reset instead of an orderly close: " << std::strerror(errno);
}

}  // namespace
}  // namespace lockstep::testing
