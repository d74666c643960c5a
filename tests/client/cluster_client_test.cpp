// client::ClusterClient against scripted nodes: small TCP servers in the
// test whose every answer is written here, so each rule of the client is
// seen alone. Checked: a request carries the client's session and its
// sequence number grows per request, not per attempt; `E not-leader
// <host>:<port>` sends it to that node at once, `E not-leader` to the next
// node, and so does a redirect that names the node it came from; a
// connection lost or an answer that does not come in time sends the same
// line again (same session) to the next node, so the cluster can apply it
// at most once; a request still unanswered `patience` after its first
// attempt is reported indeterminate, no sooner, and the next request goes
// on; a line that answers no request is kept as unexpected; other `E`
// answers are answers; without an id each client makes up its own, and an
// id kept in a file comes with the numbers used, so that no run reuses one.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "client/cluster_client.hpp"

namespace lockstep::client {
namespace {

using namespace std::chrono_literals;

// What a scripted node does with a line: the lines it sends back, and
// whether it then closes the connection.
struct Reply {
  std::vector<std::string> lines;
  bool close = false;
  bool silent = false;  // neither answer nor close: the client must time out
};

class ScriptedNode {
 public:
  explicit ScriptedNode(std::function<Reply(const std::string&)> script) : script_(std::move(script)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const int yes = 1;
    setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    socklen_t length = sizeof address;
    getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    ::listen(listener_, 16);
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedNode() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
    for (auto& [fd, buffer] : connections_) ::close(fd);
  }
  NodeAddress address() const { return {"127.0.0.1", port_}; }
  std::vector<std::string> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }
  int closed_by_client() const { return closed_by_client_; }

 private:
  void serve() {
    while (!stop_) {
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      for (auto& [fd, buffer] : connections_) fds.push_back({fd, POLLIN, 0});
      ::poll(fds.data(), fds.size(), 20);
      if (fds[0].revents & POLLIN) connections_.emplace_back(::accept(listener_, nullptr, nullptr), "");
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
        handle(fds[i].fd);
      }
      std::erase_if(connections_, [](const auto& c) { return c.first < 0; });
    }
  }
  void handle(int fd) {
    auto found = std::find_if(connections_.begin(), connections_.end(), [&](const auto& c) { return c.first == fd; });
    char chunk[4096];
    const auto got = ::recv(fd, chunk, sizeof chunk, 0);
    if (got <= 0) {
      ++closed_by_client_;
      ::close(fd);
      found->first = -1;
      return;
    }
    found->second.append(chunk, static_cast<std::size_t>(got));
    std::size_t end;
    while ((end = found->second.find('\n')) != std::string::npos) {
      const std::string line = found->second.substr(0, end);
      found->second.erase(0, end + 1);
      {
        std::lock_guard lock(mutex_);
        lines_.push_back(line);
      }
      const Reply reply = script_(line);
      for (const auto& out : reply.lines) {
        const auto text = out + "\n";
        ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
      }
      if (reply.close) {
        ::close(fd);
        found->first = -1;
        return;
      }
    }
  }

  std::function<Reply(const std::string&)> script_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::vector<std::pair<int, std::string>> connections_;
  std::mutex mutex_;
  std::vector<std::string> lines_;
  std::atomic<int> closed_by_client_{0};
};

ClusterClient::Options options_for(std::vector<NodeAddress> nodes, std::string id = "c1") {
  ClusterClient::Options options;
  options.nodes = std::move(nodes);
  options.client_id = std::move(id);
  options.answer_timeout = 300ms;
  options.backoff_min = 1ms;
  options.backoff_max = 5ms;
  options.patience = 1s;
  return options;
}

// Runs the client until its requests are done (or 10 s).
void run(ClusterClient& client) {
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (client.pending() > 0 && std::chrono::steady_clock::now() < give_up) client.poll(50ms);
}

Reply grant(const std::string& line) {
  // `A key owner lease wait client seq` -> `A 7 owner key`
  std::istringstream fields(line);
  std::string a, key, owner;
  fields >> a >> key >> owner;
  return Reply{{"A 7 " + owner + " " + key}};
}

// A client starts from a node chosen by its id; tests that need it to start
// on a given node try a few ids.
TEST(ClusterClient, SessionFieldsAndSequenceNumbers) {
  ScriptedNode node([](const std::string& line) {
    if (line[0] == 'A') return grant(line);
    return Reply{{"R 7 k"}};
  });
  ClusterClient client(options_for({node.address()}, "alice-1"));
  std::vector<ClusterClient::Result> results;
  client.acquire("k", "alice", 1000, 0, [&](const auto& r) { results.push_back(r); });
  client.release("k", Token{7}, [&](const auto& r) { results.push_back(r); });
  run(client);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(format_response(results[0].response), "A 7 alice k");
  EXPECT_EQ(format_response(results[1].response), "R 7 k");
  EXPECT_EQ(node.lines(), (std::vector<std::string>{"A k alice 1000 0 alice-1 1", "R k 7 alice-1 2"}));
  EXPECT_EQ(results[1].sequence, 2u);
  EXPECT_EQ(results[1].attempts, 1u);
}

TEST(ClusterClient, FollowsANamedLeaderAndKeepsTheSession) {
  ScriptedNode leader([](const std::string& line) { return grant(line); });
  const auto leader_at = leader.address();
  ScriptedNode follower([&](const std::string&) {
    return Reply{{"E not-leader 127.0.0.1:" + std::to_string(leader_at.port)}};
  });
  // The follower first: one id maps to node 0 of a two-node list.
  for (const std::string id : {"a", "b", "c", "d"}) {
    ClusterClient client(options_for({follower.address(), leader.address()}, id));
    if (client.current_node() != follower.address()) continue;
    std::optional<ClusterClient::Result> result;
    client.acquire("k", "bob", 500, 0, [&](const auto& r) { result = r; });
    run(client);
    ASSERT_TRUE(result);
    EXPECT_EQ(format_response(result->response), "A 7 bob k");
    EXPECT_EQ(result->attempts, 2u);
    EXPECT_EQ(client.stats().redirects, 1u);
    ASSERT_FALSE(leader.lines().empty());
    EXPECT_EQ(leader.lines().back(), "A k bob 500 0 " + id + " 1");
    EXPECT_EQ(follower.lines().back(), leader.lines().back());
    return;
  }
  FAIL() << "no id started on the follower";
}

TEST(ClusterClient, NotLeaderWithoutAnAddressTriesTheNextNode) {
  ScriptedNode lost([](const std::string&) { return Reply{{"E not-leader"}}; });
  ScriptedNode leader([](const std::string& line) { return grant(line); });
  for (const std::string id : {"a", "b", "c", "d"}) {
    ClusterClient client(options_for({lost.address(), leader.address()}, id));
    if (client.current_node() != lost.address()) continue;
    std::optional<ClusterClient::Result> result;
    client.acquire("k", "bob", 500, 0, [&](const auto& r) { result = r; });
    run(client);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->response.kind, ResponseKind::granted);
    EXPECT_EQ(lost.lines().size(), 1u);
    EXPECT_EQ(leader.lines().size(), 1u);
    return;
  }
  FAIL() << "no id started on the node that knows no leader";
}

// A node that no longer leads and still names itself (what a paused leader
// did once resumed) is not asked again on the same connection: the client
// reads it as `E not-leader` and goes on to the next node.
TEST(ClusterClient, ARedirectToTheNodeItCameFromTriesTheNextNode) {
  std::uint16_t self_port = 0;
  ScriptedNode deposed([&](const std::string&) { return Reply{{"E not-leader 127.0.0.1:" + std::to_string(self_port)}}; });
  self_port = deposed.address().port;
  ScriptedNode leader([](const std::string& line) { return grant(line); });
  for (const std::string id : {"a", "b", "c", "d"}) {
    ClusterClient client(options_for({deposed.address(), leader.address()}, id));
    if (client.current_node() != deposed.address()) continue;
    std::optional<ClusterClient::Result> result;
    client.acquire("k", "bob", 500, 0, [&](const auto& r) { result = r; });
    run(client);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->response.kind, ResponseKind::granted);
    EXPECT_EQ(result->attempts, 2u);
    EXPECT_EQ(deposed.lines().size(), 1u);
    EXPECT_EQ(leader.lines().size(), 1u);
    return;
  }
  FAIL() << "no id started on the deposed node";
}

TEST(ClusterClient, ALostConnectionResendsTheSameLineToTheNextNode) {
  ScriptedNode dies([](const std::string&) { return Reply{{}, true}; });
  ScriptedNode leader([](const std::string& line) { return grant(line); });
  for (const std::string id : {"a", "b", "c", "d"}) {
    ClusterClient client(options_for({dies.address(), leader.address()}, id));
    if (client.current_node() != dies.address()) continue;
    std::optional<ClusterClient::Result> result;
    client.acquire("k", "carol", 500, 100, [&](const auto& r) { result = r; });
    run(client);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->response.kind, ResponseKind::granted);
    ASSERT_EQ(dies.lines().size(), 1u);
    ASSERT_EQ(leader.lines().size(), 1u);
    EXPECT_EQ(dies.lines()[0], leader.lines()[0]);  // same session, same sequence number
    EXPECT_EQ(client.stats().connections_lost, 1u);
    return;
  }
  FAIL() << "no id started on the failing node";
}

TEST(ClusterClient, NoAnswerInTimeGivesUpTheConnectionAndRetriesElsewhere) {
  ScriptedNode paused([](const std::string&) { return Reply{{}, false, true}; });
  ScriptedNode leader([](const std::string& line) { return grant(line); });
  for (const std::string id : {"a", "b", "c", "d"}) {
    ClusterClient client(options_for({paused.address(), leader.address()}, id));
    if (client.current_node() != paused.address()) continue;
    std::optional<ClusterClient::Result> result;
    const auto started = std::chrono::steady_clock::now();
    // The attempt waits wait_ms plus the answer timeout (300 ms) first.
    client.acquire("k", "dave", 500, 200, [&](const auto& r) { result = r; });
    run(client);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->response.kind, ResponseKind::granted);
    EXPECT_GE(std::chrono::steady_clock::now() - started, 500ms);
    EXPECT_EQ(client.stats().timeouts, 1u);
    EXPECT_EQ(paused.lines(), leader.lines());
    // The paused node sees the client give the connection up.
    const auto until = std::chrono::steady_clock::now() + 2s;
    while (paused.closed_by_client() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(paused.closed_by_client(), 1);
    return;
  }
  FAIL() << "no id started on the paused node";
}

TEST(ClusterClient, UnansweredAfterEveryAttemptIsIndeterminateAndTheNextGoesOn) {
  int served = 0;
  ScriptedNode flaky([&](const std::string& line) {
    // Every attempt of the first request is cut; the second is answered.
    if (line.ends_with(" 1")) return Reply{{}, true};
    ++served;
    return grant(line);
  });
  ClusterClient client(options_for({flaky.address()}, "e"));
  std::vector<ClusterClient::Result> results;
  client.acquire("k", "erin", 500, 0, [&](const auto& r) { results.push_back(r); });
  client.acquire("j", "erin", 500, 0, [&](const auto& r) { results.push_back(r); });
  run(client);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].kind, ClusterClient::Result::Kind::indeterminate);
  // Tried for its patience (1 s), however many attempts that took.
  EXPECT_GE(results[0].finished - results[0].first_sent, 1s);
  EXPECT_LT(results[0].finished - results[0].first_sent, 3s);
  EXPECT_GT(results[0].attempts, 2u);
  EXPECT_EQ(results[1].kind, ClusterClient::Result::Kind::answered);
  EXPECT_EQ(results[1].sequence, 2u);
  EXPECT_EQ(client.stats().indeterminate, 1u);
  EXPECT_EQ(served, 1);
}

TEST(ClusterClient, ALineThatAnswersNoRequestIsKeptAsUnexpected) {
  ScriptedNode doubles([](const std::string& line) {
    auto reply = grant(line);
    reply.lines.push_back(reply.lines.front());  // the same answer twice
    return reply;
  });
  ClusterClient client(options_for({doubles.address()}, "f"));
  std::optional<ClusterClient::Result> result;
  client.acquire("k", "frank", 500, 0, [&](const auto& r) { result = r; });
  run(client);
  const auto until = std::chrono::steady_clock::now() + 1s;
  while (client.unexpected().empty() && std::chrono::steady_clock::now() < until) client.poll(20ms);
  ASSERT_TRUE(result);
  EXPECT_EQ(client.unexpected(), std::vector<std::string>{"A 7 frank k"});
}

TEST(ClusterClient, OtherErrorsAreAnswers) {
  ScriptedNode refuses([](const std::string&) { return Reply{{"E stale request"}}; });
  ClusterClient client(options_for({refuses.address()}, "g"));
  std::optional<ClusterClient::Result> result;
  client.acquire("k", "gina", 500, 0, [&](const auto& r) { result = r; });
  run(client);
  ASSERT_TRUE(result);
  EXPECT_EQ(format_response(result->response), "E stale request");
  EXPECT_EQ(result->attempts, 1u);
}

TEST(ClusterClient, RefusesWhatCannotWork) {
  EXPECT_THROW(ClusterClient(options_for({})), std::invalid_argument);
  EXPECT_THROW(ClusterClient(options_for({{"127.0.0.1", 1}}, "two words")), std::invalid_argument);
  EXPECT_FALSE(parse_node_address("localhost:7000"));
  EXPECT_FALSE(parse_node_address("127.0.0.1:0"));
  EXPECT_EQ(parse_node_address("127.0.0.1:7001"), (NodeAddress{"127.0.0.1", 7001}));
}

// Without an id the client makes one up, another for each client: two
// programs run with the defaults never share a session (docs/protocol.md,
// "Cluster nodes on the wire": a number reused for another request is
// refused).
TEST(ClusterClient, WithoutAnIdEachClientMakesUpItsOwn) {
  ScriptedNode node([](const std::string& line) { return grant(line); });
  ClusterClient first(options_for({node.address()}, ""));
  ClusterClient second(options_for({node.address()}, ""));
  EXPECT_NE(first.client_id(), second.client_id());
  for (const auto* client : {&first, &second}) {
    EXPECT_TRUE(is_valid_name(client->client_id())) << client->client_id();
    EXPECT_NE(client->client_id().find(fmt::format("-{}-", ::getpid())), std::string::npos) << client->client_id();
  }
  std::optional<ClusterClient::Result> result;
  first.acquire("k", "hana", 500, 0, [&](const auto& r) { result = r; });
  run(first);
  ASSERT_TRUE(result);
  EXPECT_EQ(node.lines(), std::vector<std::string>{"A k hana 500 0 " + first.client_id() + " 1"});
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// An id kept in a file: the same id on every run, and each run numbers its
// requests above every number an earlier one may have used, so that a
// request of the second run is never taken for a retry of the first's.
TEST(ClusterClient, AnIdFileKeepsTheIdAndEachRunStartsAboveTheNumbersUsed) {
  const std::string path = ::testing::TempDir() + fmt::format("cluster-client-id-{}", ::getpid());
  std::remove(path.c_str());
  ScriptedNode node([](const std::string& line) { return grant(line); });
  auto options = options_for({node.address()}, "");
  options.client_id_file = path;
  std::string id;
  {
    ClusterClient run1(options);
    id = run1.client_id();
    EXPECT_EQ(file_text(path), id + " 1\n");  // created at once
    run1.acquire("k", "ines", 500, 0, [](const auto&) {});
    run1.acquire("j", "ines", 500, 0, [](const auto&) {});
    run(run1);
    EXPECT_EQ(file_text(path), fmt::format("{} {}\n", id, 1 + id_file_block));
  }
  ClusterClient run2(options);
  EXPECT_EQ(run2.client_id(), id);
  run2.acquire("k", "ines", 500, 0, [](const auto&) {});
  run(run2);
  EXPECT_EQ(node.lines(), (std::vector<std::string>{"A k ines 500 0 " + id + " 1", "A j ines 500 0 " + id + " 2",
                                                    fmt::format("A k ines 500 0 {} {}", id, 1 + id_file_block)}));
  EXPECT_EQ(file_text(path), fmt::format("{} {}\n", id, 1 + 2 * id_file_block));
  std::remove(path.c_str());
}

TEST(ClusterClient, RefusesABadIdFileAndAnIdWithAFile) {
  const std::string path = ::testing::TempDir() + fmt::format("cluster-client-bad-id-{}", ::getpid());
  auto options = options_for({{"127.0.0.1", 1}}, "");
  options.client_id_file = path;
  for (const std::string text : {"", "one-id\n", "two words 5\n", "id 0\n", "id 5 6\n", "id x\n"}) {
    std::ofstream(path) << text;
    EXPECT_THROW(ClusterClient{options}, std::runtime_error) << text;
  }
  std::remove(path.c_str());
  options.client_id = "kim";
  EXPECT_THROW(ClusterClient{options}, std::invalid_argument);
  options.client_id.clear();
  options.client_id_file = "/nonexistent-folder/id";
  EXPECT_THROW(ClusterClient{options}, std::runtime_error);
}

}  // namespace
}  // namespace lockstep::client
