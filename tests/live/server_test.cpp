// The real server, started as a process (`lockstep serve`) and driven over
// TCP: the test clock's C and X, limits on connections, tokens across a
// restart, clean exit on SIGTERM. The binary comes from LOCKSTEP_BINARY.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

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

}  // namespace
}  // namespace lockstep::testing
