// Hostile clients against the real server: a 1 MB line without a newline,
// more connections than the limit, a client that pipelines many requests
// and never reads, random bytes, a half-closed socket, a connection flood.
// Throughout, the server stays up, its resident memory stays under a bound,
// a well-behaved client keeps getting correct answers, and a lock held
// before the attacks is intact after them.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <fstream>
#include <thread>

#include "tests/live/server_process.hpp"

namespace lockstep::testing {
namespace {

using namespace std::chrono_literals;
using client::LineSocket;

// The stated bound on the server's resident memory during the attacks. The
// server holds at most max_output_bytes (1 MiB) for each of at most 64
// connections here, plus one read chunk and one partial line each; the
// sanitizer builds need room for their own shadow memory.
constexpr std::size_t resident_bound_bytes = 384u << 20;

std::size_t resident_bytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string word;
  while (status >> word) {
    if (word == "VmRSS:") {
      std::size_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

class Hostile : public ::testing::Test {
 protected:
  TestServer server{"--max-connections 64 --max-output-bytes 1048576"};
  LineSocket good = server.connect();
  std::string precious_token;

  void SetUp() override {
    precious_token = granted_token(request(good, "A precious keeper 86400000 0", true));
  }

  // The well-behaved client still gets exact answers, and memory is bounded.
  void check_service(const std::string& after) {
    ASSERT_TRUE(server.running()) << "the server died after " << after << ": " << server.log();
    EXPECT_LT(resident_bytes(server.pid()), resident_bound_bytes) << "after " << after;
    const auto token = granted_token(request(good, "A probe prober 1000 0", true));
    EXPECT_EQ(request(good, "A precious thief 1000 0", true), "T thief precious") << "after " << after;
    EXPECT_EQ(request(good, "R probe " + token, true), "R " + token + " probe") << "after " << after;
  }

  void TearDown() override {
    EXPECT_EQ(request(good, "R precious " + precious_token, true), "R " + precious_token + " precious");
    EXPECT_EQ(server.stop(), 0);
  }
};

TEST_F(Hostile, OneMegabyteLineWithoutNewline) {
  auto attacker = server.connect();
  attacker.send_bytes(std::string(1 << 20, 'a'));
  std::string line;
  ASSERT_EQ(attacker.read_line(line, 5s), LineSocket::Status::line);
  EXPECT_EQ(line.substr(0, 2), "E ");
  EXPECT_EQ(attacker.read_line(line, 5s), LineSocket::Status::closed);
  check_service("a 1 MB line");
}

TEST_F(Hostile, MoreConnectionsThanTheLimit) {
  std::vector<LineSocket> crowd;
  for (int i = 0; i < 100; ++i) crowd.push_back(server.connect());
  int refused = 0;
  for (auto& socket : crowd) {
    std::string line;
    if (socket.read_line(line, 30ms) == LineSocket::Status::line && line == "E too many connections") ++refused;
  }
  EXPECT_GE(refused, 100 - 64);
  check_service("a crowd of connections");
}

TEST_F(Hostile, PipelinerThatNeverReads) {
  auto flooder = server.connect();
  // Send without ever reading, without blocking, for a bounded time: the
  // server answers until the unread output passes --max-output-bytes, then
  // closes the connection, and sending fails.
  fcntl(flooder.fd(), F_SETFL, fcntl(flooder.fd(), F_GETFL) | O_NONBLOCK);
  std::string burst;
  for (int i = 0; i < 20'000; ++i) burst += "A flood" + std::to_string(i % 5000) + " flooder 60000 0\n";
  std::size_t sent_total = 0;
  bool refused = false;
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  auto next_check = std::chrono::steady_clock::now();
  while (!refused && sent_total < (std::size_t{256} << 20) && std::chrono::steady_clock::now() < give_up) {
    const auto sent = ::send(flooder.fd(), burst.data(), burst.size(), MSG_NOSIGNAL);
    if (sent > 0) {
      sent_total += static_cast<std::size_t>(sent);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd p{flooder.fd(), POLLOUT, 0};
      ::poll(&p, 1, 50);
    } else {
      refused = true;  // EPIPE or ECONNRESET: the server closed it
    }
    if (std::chrono::steady_clock::now() >= next_check) {
      check_service("a pipeliner that never reads");
      next_check = std::chrono::steady_clock::now() + 200ms;
    }
  }
  EXPECT_TRUE(refused) << "the non-reading client was not closed after " << sent_total << " bytes";
  check_service("a pipeliner that never reads");
}

TEST_F(Hostile, RandomBytes) {
  auto attacker = server.connect();
  std::string noise;
  std::uint64_t state = 12345;
  for (int i = 0; i < 256 * 1024; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    noise += static_cast<char>(state >> 56);
  }
  attacker.send_bytes(noise);
  attacker.shutdown_write();
  std::string line;
  while (attacker.read_line(line, 5s) == LineSocket::Status::line) {
    EXPECT_TRUE(line.starts_with("E ") || line.starts_with("A ") || line.starts_with("T ") ||
                line.starts_with("B ") || line.starts_with("N ") || line.starts_with("R "))
        << line;
  }
  check_service("random bytes");
}

TEST_F(Hostile, HalfClosedSocketStillGetsItsAnswers) {
  auto client = server.connect();
  client.send_line("A half closer 1000 0");
  client.send_line("A precious closer 1000 0");
  client.shutdown_write();
  EXPECT_EQ(next_line(client).substr(0, 1), "A");
  EXPECT_EQ(next_line(client), "T closer precious");
  EXPECT_EQ(next_line(client), "<closed>");
  check_service("a half-closed socket");
}

TEST_F(Hostile, ConnectionFlood) {
  for (int round = 0; round < 20; ++round) {
    std::vector<LineSocket> burst;
    for (int i = 0; i < 40; ++i) burst.push_back(server.connect());
    for (auto& socket : burst) socket.send_line("A flood" + std::to_string(round) + " someone 1000 10000");
  }
  check_service("a connection flood");
}

}  // namespace
}  // namespace lockstep::testing
