// Redirects from a node that does not lead (docs/protocol.md, "Cluster
// nodes on the wire"): whichever way a leader loses its leadership, it never
// names itself in `E not-leader`; it answers a bare `E not-leader` while it
// knows of no other leader, and names the new one once etcd shows it. Each
// way is made to happen, not waited for, on three etcd members and three
// `serve --cluster` nodes (leader TTL 2 s):
// - paused: the leader is stopped (SIGSTOP) past its TTL with clients
//   connecting to it meanwhile, and resumed while the etcd member it talks
//   to is paused too, so that it stops leading by its own lease and learns of
//   no other leader; the clients' requests then get a bare `E not-leader`,
//   and once its member resumes, the new leader's address. (The soak's false
//   alarm: such a node answered `E not-leader` with its own address, and
//   clients asked it again on the same connection.)
// - etcd's majority lost: two of three members paused; the leader stops
//   leading when its lease can no longer be renewed, and answers bare; the
//   others still name it (their last view), never themselves; and no node
//   logs gRPC's complaint about its keep-alive pings (GOAWAY) meanwhile.
// - deposed by etcd: the leader's lease revoked in etcd (what an operator,
//   or a second process with its node id, would do); no node names itself
//   while the others take over.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "client/line_socket.hpp"
#include "drivers/etcd/client.hpp"
#include "drivers/etcd/log_format.hpp"
#include "live/lock_cluster.hpp"
#include "tests/live/server_process.hpp"

namespace lockstep::live {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using testing::lockstep_binary;

// With the etcd timeout given (the nodes' default, 5 s, otherwise).
std::unique_ptr<LockCluster> start_cluster(bool member_per_node, std::string extra = "--etcd-timeout-ms 1000") {
  LockCluster::Options options;
  options.lockstep_binary = lockstep_binary();
  options.leader_ttl_s = 2;
  options.etcd_member_per_node = member_per_node;
  options.extra_options = std::move(extra);
  std::string error;
  auto cluster = LockCluster::start(options, error);
  EXPECT_TRUE(cluster) << error;
  return cluster;
}

std::string address_of(const LockCluster& cluster, int node) {
  const auto address = cluster.address(node);
  return fmt::format("{}:{}", address.host, address.port);
}

// One request on a new connection to `node`, and its answer, if one comes.
std::optional<std::string> ask(const LockCluster& cluster, int node, const std::string& line,
                               std::chrono::milliseconds patience = 3s) {
  auto socket = client::LineSocket::connect("127.0.0.1", cluster.address(node).port, 1s);
  if (!socket || !socket->send_line(line)) return std::nullopt;
  std::string answer;
  if (socket->read_line(answer, patience) != client::LineSocket::Status::line) return std::nullopt;
  return answer;
}

// The rule under test, for an answer node `node` gave.
void expect_not_self(const LockCluster& cluster, int node, const std::string& answer) {
  EXPECT_NE(answer, "E not-leader " + address_of(cluster, node)) << "n" << node + 1 << " named itself";
}

bool wait_for_log(const LockCluster& cluster, int node, const std::string& needle, std::chrono::milliseconds patience) {
  const auto give_up = Clock::now() + patience;
  while (Clock::now() < give_up) {
    if (cluster.log_tail(node).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// A node other than `except` that answers as leader, or -1 after `patience`.
int other_leader(LockCluster& cluster, int except, std::chrono::milliseconds patience) {
  const auto give_up = Clock::now() + patience;
  while (Clock::now() < give_up) {
    for (int i = 0; i < cluster.size(); ++i) {
      if (i == except) continue;
      const auto answer = ask(cluster, i, "R lockstep-leader-probe 1");
      if (answer && answer->starts_with("N ")) return i;
    }
    std::this_thread::sleep_for(50ms);
  }
  return -1;
}

TEST(Redirects, APausedLeaderResumedAnswersBareNotLeader) {
  auto cluster = start_cluster(true);
  ASSERT_TRUE(cluster);
  const int leader = cluster->leader();
  ASSERT_GE(leader, 0);
  const int member = cluster->etcd_member_of(leader);
  cluster->pause(leader);
  cluster->etcd().pause(member);
  // Clients connect to the paused leader (the kernel accepts them for it).
  std::vector<client::LineSocket> clients;
  for (int i = 0; i < 3; ++i) {
    auto socket = client::LineSocket::connect("127.0.0.1", cluster->address(leader).port, 2s);
    ASSERT_TRUE(socket);
    clients.push_back(std::move(*socket));
  }
  const int next = other_leader(*cluster, leader, 30s);
  ASSERT_GE(next, 0) << "no other node took over";
  cluster->resume(leader);
  // It stops leading by its own lease; its etcd member, still paused, shows
  // it nothing newer than its own election.
  ASSERT_TRUE(wait_for_log(*cluster, leader, "stops leading", 15s)) << cluster->log_tail(leader);
  for (std::size_t i = 0; i < clients.size(); ++i) {
    ASSERT_TRUE(clients[i].send_line(fmt::format("R k{} 1 c{} 1", i, i)));
    std::string answer;
    ASSERT_EQ(clients[i].read_line(answer, 5s), client::LineSocket::Status::line) << cluster->log_tail(leader);
    expect_not_self(*cluster, leader, answer);
    EXPECT_EQ(answer, "E not-leader");
  }
  // Once it sees the new leader, it names it.
  cluster->etcd().resume(member);
  const auto give_up = Clock::now() + 20s;
  std::optional<std::string> answer;
  while (Clock::now() < give_up) {
    answer = ask(*cluster, leader, "R lockstep-leader-probe 1");
    if (answer) expect_not_self(*cluster, leader, *answer);
    if (answer && *answer != "E not-leader") break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(answer);
  EXPECT_EQ(*answer, "E not-leader " + address_of(*cluster, next)) << cluster->log_tail(leader);
}

TEST(Redirects, WithEtcdsMajorityLostTheLeaderAnswersBareNotLeader) {
  // The default etcd timeout: calls wait on etcd long enough for gRPC to ping.
  auto cluster = start_cluster(false, "");
  ASSERT_TRUE(cluster);
  const int leader = cluster->leader();
  ASSERT_GE(leader, 0);
  auto& etcd = cluster->etcd();
  etcd.pause(1);
  etcd.pause(2);
  const auto paused_at = Clock::now();
  ASSERT_TRUE(wait_for_log(*cluster, leader, "stops leading", 15s)) << cluster->log_tail(leader);
  // What a node answers is judged here, not how soon: a CI run once saw a
  // follower silent for 3 s while etcd's majority was lost (its log empty;
  // its etcd calls run on threads of their own, so the cause is not known),
  // so each node gets longer than one etcd call (5 s by default).
  constexpr auto past_an_etcd_call = 8s;
  for (int round = 0; round < 3; ++round) {
    for (int node = 0; node < cluster->size(); ++node) {
      const auto answer = ask(*cluster, node, fmt::format("R k 1 c{} {}", node, round + 1), past_an_etcd_call);
      ASSERT_TRUE(answer) << "n" << node + 1 << " did not answer (n" << leader + 1 << " led):\n" << cluster->log_tail(node);
      expect_not_self(*cluster, node, *answer);
      EXPECT_TRUE(answer->starts_with("E not-leader")) << *answer;
      if (node == leader) {
        EXPECT_EQ(*answer, "E not-leader");
      }
    }
    std::this_thread::sleep_for(300ms);
  }
  // Nothing from gRPC meanwhile: its keep-alive pings, on calls that etcd
  // cannot answer, stay within what etcd allows (at 2 s they drew a
  // GOAWAY "too_many_pings", logged on every node, within 10 s).
  std::this_thread::sleep_until(paused_at + 15s);
  for (int node = 0; node < cluster->size(); ++node) {
    EXPECT_EQ(cluster->log_tail(node).find("GOAWAY"), std::string::npos) << cluster->log_tail(node);
  }
  etcd.resume(1);
  etcd.resume(2);
  EXPECT_GE(cluster->leader(30s), 0) << "no node leads once etcd is whole again";
}

TEST(Redirects, ALeaderDeposedByEtcdNeverNamesItself) {
  auto cluster = start_cluster(false);
  ASSERT_TRUE(cluster);
  const int leader = cluster->leader();
  ASSERT_GE(leader, 0);
  // The election key's lease, revoked: etcd deletes the key at once.
  std::string error;
  etcd::Client client(*etcd::parse_endpoints(cluster->etcd().endpoints(), error));
  etcdserverpb::RangeRequest request;
  request.set_key(etcd::Keys(cluster->prefix()).leader());
  etcdserverpb::RangeResponse response;
  ASSERT_TRUE(client.range(request, response, 5s).ok());
  ASSERT_EQ(response.kvs_size(), 1);
  ASSERT_TRUE(client.lease_revoke(response.kvs(0).lease(), 5s).ok());
  // Every node, asked over and over while a leader is elected again.
  const auto until = Clock::now() + 4s;
  int asked = 0;
  while (Clock::now() < until) {
    for (int node = 0; node < cluster->size(); ++node) {
      const auto answer = ask(*cluster, node, "R lockstep-leader-probe 1");
      if (!answer) continue;
      ++asked;
      expect_not_self(*cluster, node, *answer);
    }
  }
  EXPECT_GT(asked, 10);
  EXPECT_TRUE(wait_for_log(*cluster, leader, "stops leading", 5s)) << cluster->log_tail(leader);
  EXPECT_GE(cluster->leader(), 0);
}

}  // namespace
}  // namespace lockstep::live
