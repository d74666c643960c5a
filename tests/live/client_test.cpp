// The pipelined client library against the real server: responses that
// come out of order are matched to their requests by owner and key (A, T,
// B) and by token and key (R, N); a lost connection fails what is pending;
// reconnecting works.
#include <gtest/gtest.h>

#include "client/client.hpp"
#include "tests/live/server_process.hpp"

namespace lockstep::testing {
namespace {

using namespace std::chrono_literals;
using client::Client;

void pump(Client& client) {
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (client.in_flight() > 0 && std::chrono::steady_clock::now() < give_up) client.poll(50ms);
}

TEST(Client, MatchesPipelinedOutOfOrderResponses) {
  TestServer server("");
  Client client;
  ASSERT_TRUE(client.connect("127.0.0.1", server.port()));
  std::map<std::string, Response> got;
  const auto keep = [&](std::string name) { return [&got, name](const Response& r) { got[name] = r; }; };
  // alice holds; bob and carol queue (bob first); dave tries at once.
  client.acquire("k", "alice", 10'000, 0, keep("alice"));
  client.acquire("k", "bob", 10'000, 5'000, keep("bob"));
  client.acquire("k", "carol", 10'000, 5'000, keep("carol"));
  client.acquire("k", "dave", 10'000, 0, keep("dave"));
  while (!got.contains("alice") || !got.contains("dave")) client.poll(50ms);
  ASSERT_EQ(got["alice"].kind, ResponseKind::granted);
  EXPECT_EQ(got["dave"].kind, ResponseKind::timed_out);
  EXPECT_EQ(client.in_flight(), 2u);  // bob and carol wait
  // alice releases: her R and bob's A arrive together, bob's answered at last.
  client.release("k", got["alice"].token, keep("release"));
  while (!got.contains("bob")) client.poll(50ms);
  EXPECT_EQ(got["release"].kind, ResponseKind::released);
  EXPECT_EQ(got["bob"].kind, ResponseKind::granted);
  EXPECT_GT(got["bob"].token, got["alice"].token);
  client.release("k", got["bob"].token, keep("release bob"));
  pump(client);
  EXPECT_EQ(got["carol"].kind, ResponseKind::granted);
  EXPECT_EQ(client.unmatched(), 0u);
}

TEST(Client, SameOwnerTwiceIsMatchedOldestFirst) {
  TestServer server("");
  Client client;
  ASSERT_TRUE(client.connect("127.0.0.1", server.port()));
  std::vector<std::string> order;
  client.acquire("a", "same", 10'000, 0, [&](const Response& r) { order.push_back("first " + format_response(r)); });
  client.acquire("a", "same", 10'000, 0, [&](const Response& r) { order.push_back("second " + format_response(r)); });
  pump(client);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_TRUE(order[0].starts_with("first A "));
  EXPECT_EQ(order[1], "second T same a");
}

TEST(Client, LostConnectionFailsPendingAndReconnects) {
  TestServer server("");
  Client client;
  ASSERT_TRUE(client.connect("127.0.0.1", server.port()));
  Response held;
  client.acquire("k", "alice", 60'000, 0, [&](const Response& r) { held = r; });
  pump(client);
  std::optional<Response> waiting;
  client.acquire("k", "bob", 1'000, 60'000, [&](const Response& r) { waiting = r; });
  client.poll(100ms);
  client.disconnect();
  ASSERT_TRUE(waiting.has_value());
  EXPECT_EQ(waiting->kind, ResponseKind::error);
  ASSERT_TRUE(client.connect("127.0.0.1", server.port()));
  std::optional<Response> released;
  client.release("k", held.token, [&](const Response& r) { released = r; });
  pump(client);
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(released->kind, ResponseKind::released);  // a token releases from any connection
}

TEST(Client, MalformedLineGetsItsE) {
  TestServer server("");
  Client client;
  ASSERT_TRUE(client.connect("127.0.0.1", server.port()));
  std::optional<Response> answer;
  client.send_raw("A k o 0 0", [&](const Response& r) { answer = r; });
  pump(client);
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->kind, ResponseKind::error);
}

}  // namespace
}  // namespace lockstep::testing
