// A leader cut from etcd while its clients stay connected (docs/protocol.md,
// "Cluster nodes on the wire"; impl/cluster/DESIGN.md, "When a leader is cut
// from etcd"): three `serve --cluster` nodes on three etcd members, every
// node's etcd connections through the fuzzer's relays (live/fault_proxy.hpp),
// leader TTL 2 s. The leader holds a key with a waiter queued behind it on a
// connection of its own; then every one of its etcd links is cut both ways
// (a black hole: its gRPC connections stay open and carry nothing). Asked
// again and again on new connections (its clients' link is not cut), it must
// stop answering as leader (`E not-leader`, or a closed connection) before
// any other node answers as leader, which is the earliest a new leader could
// grant its keys; it must never answer a request as leader meanwhile (it can
// commit nothing); and the waiter's connection must be closed by then, so its
// client retries where the key can be granted; still cut, it refuses an
// acquire of a free key. Healed, the cluster leads again. With
// --inject-bug serve-without-leadership (start_cluster("serve-without-leadership"))
// the cut node grants that free key: the bug, reported.
#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include <fmt/format.h>

#include "client/line_socket.hpp"
#include "live/lock_cluster.hpp"
#include "tests/live/server_process.hpp"

namespace lockstep::live {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using testing::lockstep_binary;

// One request on a new connection to `node` (through its clients' relay),
// and its answer within `patience`: a line, "closed", or nothing.
std::optional<std::string> ask(const LockCluster& cluster, int node, const std::string& line,
                               std::chrono::milliseconds patience) {
  auto socket = client::LineSocket::connect("127.0.0.1", cluster.address(node).port, 1s);
  if (!socket || !socket->send_line(line)) return std::string("closed");
  std::string answer;
  switch (socket->read_line(answer, patience)) {
    case client::LineSocket::Status::line: return answer;
    case client::LineSocket::Status::closed: return std::string("closed");
    case client::LineSocket::Status::timeout: break;
  }
  return std::nullopt;
}

std::unique_ptr<LockCluster> start_cluster(const std::string& bug) {
  LockCluster::Options options;
  options.lockstep_binary = lockstep_binary();
  options.leader_ttl_s = 2;
  options.relays = true;
  options.bug = bug;
  std::string error;
  auto cluster = LockCluster::start(options, error);
  EXPECT_TRUE(cluster) << error;
  return cluster;
}

void cut_from_etcd(LockCluster& cluster, int node) {
  for (int member = 0; member < cluster.etcd().size(); ++member) {
    cluster.relays()->cut(cluster.etcd_link(node, member), FaultProxy::Direction::both);
  }
}

// An acquire of a key nobody asked for, on the cut node once it answers
// `E not-leader`: the correct node refuses it too; the bug grants it.
std::optional<std::string> acquire_free_key_once_stopped(LockCluster& cluster, int node) {
  const auto give_up = Clock::now() + 15s;
  while (Clock::now() < give_up) {
    const auto answer = ask(cluster, node, "R lockstep-leader-probe 1", 200ms);
    if (answer && answer->starts_with("E not-leader")) return ask(cluster, node, "A partition-free-key eve 5000 0", 2s);
  }
  return std::nullopt;
}

TEST(Partitions, ServeWithoutLeadershipIsReported) {
  auto cluster = start_cluster("serve-without-leadership");
  ASSERT_TRUE(cluster);
  const int leader = cluster->leader();
  ASSERT_GE(leader, 0);
  cut_from_etcd(*cluster, leader);
  const auto answer = acquire_free_key_once_stopped(*cluster, leader);
  ASSERT_TRUE(answer) << cluster->log_tail(leader);
  // Granted by a node that can commit nothing: a grant the next leader may
  // give again.
  EXPECT_TRUE(answer->starts_with("A ")) << *answer;
}

TEST(Partitions, ALeaderCutFromEtcdStopsAnsweringBeforeAnotherNodeLeads) {
  auto cluster = start_cluster("none");
  ASSERT_TRUE(cluster);
  const int leader = cluster->leader();
  ASSERT_GE(leader, 0);
  // A key held, and a waiter behind it, both on the leader.
  auto holder = client::LineSocket::connect("127.0.0.1", cluster->address(leader).port, 2s);
  auto waiter = client::LineSocket::connect("127.0.0.1", cluster->address(leader).port, 2s);
  ASSERT_TRUE(holder && waiter);
  std::string line;
  ASSERT_TRUE(holder->send_line("A k alice 60000 0 alice 1"));
  ASSERT_EQ(holder->read_line(line, 5s), client::LineSocket::Status::line);
  ASSERT_TRUE(line.starts_with("A ")) << line;
  ASSERT_TRUE(waiter->send_line("A k bob 60000 60000 bob 1"));
  ASSERT_EQ(waiter->read_line(line, 500ms), client::LineSocket::Status::timeout) << line;
  const auto status = cluster->status(leader);
  ASSERT_TRUE(status && status->waiters == 1) << (status ? status->line : "no status");

  cut_from_etcd(*cluster, leader);
  const auto cut_at = Clock::now();
  std::optional<Clock::time_point> stopped_at, waiter_closed_at;
  int other = -1;
  while (other < 0 && Clock::now() < cut_at + 30s) {
    const auto answer = ask(*cluster, leader, "R lockstep-leader-probe 1", 200ms);
    if (answer) {
      EXPECT_FALSE(answer->starts_with("N ")) << "n" << leader + 1 << " answered as leader while cut from etcd";
      if (!stopped_at && (answer->starts_with("E not-leader") || *answer == "closed")) stopped_at = Clock::now();
    }
    if (!waiter_closed_at) {
      const auto got = waiter->read_line(line, 20ms);
      EXPECT_NE(got, client::LineSocket::Status::line) << "the waiter heard " << line;
      if (got == client::LineSocket::Status::closed) waiter_closed_at = Clock::now();
    }
    for (int node = 0; node < cluster->size() && other < 0; ++node) {
      if (node == leader) continue;
      const auto probe = ask(*cluster, node, "R lockstep-leader-probe 1", 200ms);
      if (probe && probe->starts_with("N ")) other = node;
    }
  }
  ASSERT_GE(other, 0) << "no other node led within 30 s of the cut";
  const auto other_at = Clock::now();
  ASSERT_TRUE(stopped_at) << "n" << leader + 1 << " still answered as leader when n" << other + 1 << " led:\n"
                          << cluster->log_tail(leader);
  EXPECT_LT(*stopped_at, other_at);
  if (!waiter_closed_at && waiter->read_line(line, 3s) == client::LineSocket::Status::closed) {
    ADD_FAILURE() << "the waiter's connection closed only "
                  << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - other_at).count()
                  << " ms after another node led";
  }
  ASSERT_TRUE(waiter_closed_at) << "the waiter's connection was still open when another node led:\n"
                                << cluster->log_tail(leader);
  EXPECT_LT(*waiter_closed_at, other_at);
  fmt::print("cut at 0 ms; n{} stopped answering as leader at {} ms, closed the waiter's connection at {} ms; "
             "n{} led at {} ms\n",
             leader + 1, std::chrono::duration_cast<std::chrono::milliseconds>(*stopped_at - cut_at).count(),
             std::chrono::duration_cast<std::chrono::milliseconds>(*waiter_closed_at - cut_at).count(), other + 1,
             std::chrono::duration_cast<std::chrono::milliseconds>(other_at - cut_at).count());

  // Still cut, it grants nothing from its table.
  const auto refused = acquire_free_key_once_stopped(*cluster, leader);
  ASSERT_TRUE(refused);
  EXPECT_TRUE(refused->starts_with("E not-leader") || *refused == "closed") << *refused;
  for (int member = 0; member < cluster->etcd().size(); ++member) cluster->relays()->heal(cluster->etcd_link(leader, member));
  EXPECT_GE(cluster->leader(30s), 0) << "no node leads once the partition healed";
}

}  // namespace
}  // namespace lockstep::live
