// Cluster mode's log layer on a real etcd (started by the test on free
// loopback ports, with a temporary data directory), with a trivial payload
// instead of lock commands: short strings whose concatenation shows order.
// Checked: a lone node is elected and its proposals come back, in the order
// made, as entries whose indexes increase (several proposals per entry under
// load: group commit); two nodes on one prefix see the same entries in the
// same order, and the second leads once the first resigns; a leader whose
// election key is gone is fenced by etcd (its proposals are reported failed
// and never reach the log); a snapshot drops the log it covers, a node that
// starts later begins from it, and the next snapshot compacts etcd's history;
// a snapshot of several chunks comes back whole; an unreachable etcd is an
// error within the start-up timeout, not a hang.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/line_socket.hpp"
#include "drivers/etcd/log.hpp"
#include "live/etcd_cluster.hpp"

namespace lockstep::etcd {
namespace {

using namespace std::chrono_literals;
namespace ev = log_event;

// One node's log and the events it posted that no check took yet.
struct Node {
  std::unique_ptr<EtcdLog> log;
  std::vector<LogEvent> events;

  // Takes the oldest event of type T, waiting up to `patience` for one;
  // events of other types stay for later checks.
  template <class T>
  std::optional<T> next(std::chrono::milliseconds patience = 10s) {
    const auto give_up = std::chrono::steady_clock::now() + patience;
    while (true) {
      for (auto it = events.begin(); it != events.end(); ++it) {
        if (const auto* found = std::get_if<T>(&*it)) {
          T taken = std::move(*found);
          events.erase(it);
          return taken;
        }
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
      if (left <= 0ms) return std::nullopt;
      pollfd descriptor{log->fd(), POLLIN, 0};
      ::poll(&descriptor, 1, static_cast<int>(left.count()));
      for (auto& event : log->take_events()) events.push_back(std::move(event));
    }
  }

  // Entries until their bytes add up to `total` bytes.
  std::vector<ev::Committed> committed(std::size_t total, std::chrono::milliseconds patience = 10s) {
    std::vector<ev::Committed> entries;
    std::size_t bytes = 0;
    while (bytes < total) {
      auto entry = next<ev::Committed>(patience);
      if (!entry) break;
      bytes += entry->bytes.size();
      entries.push_back(std::move(*entry));
    }
    return entries;
  }
};

class EtcdLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    etcd_ = live::EtcdCluster::start(1, error);
    ASSERT_TRUE(etcd_) << error;
    target_ = *parse_endpoints(etcd_->endpoints(), error);
    client_ = std::make_unique<Client>(target_);
  }

  Node start_node(const std::string& id, const std::string& prefix = "test") {
    LogConfig config;
    config.target = target_;
    config.prefix = prefix;
    config.self = LeaderRecord{id, "127.0.0.1:" + std::to_string(7000 + id.back())};
    config.leader_ttl_s = 2;
    config.call_timeout = 2s;
    config.start_timeout = 5s;
    Node node;
    node.log = std::make_unique<EtcdLog>(config);
    node.log->start();
    return node;
  }

  // Waits until `node` leads: elected, and its election seen in the log.
  std::uint64_t lead(Node& node) {
    const auto elected = node.next<ev::Elected>();
    if (!elected) {
      ADD_FAILURE() << "not elected";
      return 0;
    }
    while (true) {
      const auto seen = node.next<ev::LeaderSeen>();
      if (!seen) {
        ADD_FAILURE() << "its election never came through the watch";
        return 0;
      }
      if (seen->epoch == elected->epoch) break;
    }
    node.log->begin_epoch(elected->epoch);
    return elected->epoch;
  }

  std::int64_t log_keys(const std::string& prefix = "test") {
    etcdserverpb::RangeRequest request;
    const Keys keys(prefix);
    request.set_key(keys.log_prefix());
    request.set_range_end(prefix_end(keys.log_prefix()));
    request.set_count_only(true);
    etcdserverpb::RangeResponse response;
    EXPECT_TRUE(client_->range(request, response, 2s).ok());
    return response.count();
  }

  std::unique_ptr<live::EtcdCluster> etcd_;
  Target target_;
  std::unique_ptr<Client> client_;
};

std::string concatenation(const std::vector<ev::Committed>& entries) {
  std::string all;
  for (const auto& entry : entries) all += entry.bytes;
  return all;
}

void expect_increasing(const std::vector<ev::Committed>& entries, std::uint64_t above) {
  for (const auto& entry : entries) {
    EXPECT_GT(entry.index, above);
    above = entry.index;
  }
}

TEST_F(EtcdLogTest, LoneNodeIsElectedAndItsProposalsComeBackInOrder) {
  auto a = start_node("a");
  ASSERT_TRUE(a.next<ev::Ready>());
  const auto epoch = lead(a);
  ASSERT_GT(epoch, 0u);
  a.log->propose(epoch, 1, "one,");
  a.log->propose(epoch, 2, "two,");
  a.log->propose(epoch, 3, "three,");
  const auto entries = a.committed(14);
  EXPECT_EQ(concatenation(entries), "one,two,three,");
  expect_increasing(entries, epoch);
}

TEST_F(EtcdLogTest, ProposalsMadeDuringAWriteShareTheNextEntry) {
  auto a = start_node("a");
  const auto epoch = lead(a);
  std::string expected;
  for (std::uint64_t i = 1; i <= 500; ++i) {
    const auto bytes = std::to_string(i) + ",";
    expected += bytes;
    a.log->propose(epoch, i, bytes);
  }
  const auto entries = a.committed(expected.size());
  EXPECT_EQ(concatenation(entries), expected);
  // One write in flight at a time; everything proposed meanwhile waits for
  // the next: a handful of entries, not 500.
  EXPECT_LT(entries.size(), 50u);
}

TEST_F(EtcdLogTest, TwoNodesSeeOneLogAndTheSecondLeadsOnceTheFirstResigns) {
  auto a = start_node("a");
  const auto first_epoch = lead(a);
  auto b = start_node("b");
  ASSERT_TRUE(b.next<ev::Ready>());
  const auto seen = b.next<ev::LeaderSeen>();
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->epoch, first_epoch);
  EXPECT_EQ(seen->leader.node_id, "a");
  a.log->propose(first_epoch, 1, "from-a");
  const auto at_a = a.committed(6);
  const auto at_b = b.committed(6);
  ASSERT_EQ(at_a.size(), 1u);
  ASSERT_EQ(at_b.size(), 1u);
  EXPECT_EQ(at_a[0].index, at_b[0].index);
  EXPECT_EQ(at_b[0].bytes, "from-a");

  a.log->stop();  // resigns: its lease is revoked, the key goes at once
  ASSERT_TRUE(b.next<ev::LeaderGone>());
  b.log->campaign_now();
  const auto second_epoch = lead(b);
  EXPECT_GT(second_epoch, first_epoch);
  b.log->propose(second_epoch, 1, "from-b");
  const auto later = b.committed(6);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].bytes, "from-b");
  EXPECT_GT(later[0].index, at_b[0].index);
}

TEST_F(EtcdLogTest, ALeaderWhoseElectionKeyIsGoneIsFencedByEtcd) {
  auto a = start_node("a");
  const auto epoch = lead(a);
  a.log->propose(epoch, 1, "before,");
  ASSERT_EQ(concatenation(a.committed(7)), "before,");
  // The key goes behind the leader's back (as when its lease ran out while
  // it was paused): its lease is still alive, so it still believes it leads.
  etcdserverpb::TxnRequest txn;
  txn.add_success()->mutable_request_delete_range()->set_key(Keys("test").leader());
  etcdserverpb::TxnResponse response;
  ASSERT_TRUE(client_->txn(txn, response, 2s).ok());
  a.log->propose(epoch, 2, "after,");
  const auto failed = a.next<ev::ProposalsFailed>();
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->ids, std::vector<std::uint64_t>{2});
  const auto deposed = a.next<ev::Deposed>();
  ASSERT_TRUE(deposed);
  EXPECT_EQ(deposed->epoch, epoch);
  // Proposals of the ended epoch fail at once.
  a.log->propose(epoch, 3, "later,");
  const auto refused = a.next<ev::ProposalsFailed>();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->ids, std::vector<std::uint64_t>{3});
  // The log holds only what was written while the fence held.
  EXPECT_EQ(log_keys(), 1);
  EXPECT_FALSE(a.next<ev::Committed>(500ms));
}

TEST_F(EtcdLogTest, SnapshotDropsTheLogAndALaterNodeStartsFromIt) {
  auto a = start_node("a");
  const auto epoch = lead(a);
  for (std::uint64_t i = 1; i <= 5; ++i) a.log->propose(epoch, i, "x");
  const auto entries = a.committed(5);
  ASSERT_FALSE(entries.empty());
  const auto& last = entries.back();
  ASSERT_TRUE(a.log->save_snapshot(epoch, last.index, last.key, "state-after-five"));
  const auto saved = a.next<ev::SnapshotSaved>();
  ASSERT_TRUE(saved);
  EXPECT_EQ(saved->index, last.index);
  EXPECT_EQ(log_keys(), 0);  // the snapshot covers every entry written
  a.log->propose(epoch, 6, "y");
  const auto after = a.committed(1);
  ASSERT_EQ(after.size(), 1u);

  auto c = start_node("c");
  const auto restored = c.next<ev::Restored>();
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->index, last.index);
  EXPECT_EQ(restored->state, "state-after-five");
  const auto tail = c.committed(1);
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail[0].index, after[0].index);
  EXPECT_EQ(tail[0].bytes, "y");

  // The second snapshot compacts etcd's history up to the first's pointer:
  // a read at a revision before it is refused as compacted.
  ASSERT_TRUE(a.log->save_snapshot(epoch, after[0].index, after[0].key, "state-after-six"));
  ASSERT_TRUE(a.next<ev::SnapshotSaved>());
  etcdserverpb::RangeRequest old;
  old.set_key(Keys("test").leader());
  old.set_revision(static_cast<std::int64_t>(entries.front().index));
  etcdserverpb::RangeResponse response;
  const auto status = client_->range(old, response, 2s);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::OUT_OF_RANGE) << describe(status);
}

TEST_F(EtcdLogTest, ASnapshotOfSeveralChunksComesBackWhole) {
  auto a = start_node("a");
  const auto epoch = lead(a);
  a.log->propose(epoch, 1, "x");
  const auto entries = a.committed(1);
  ASSERT_EQ(entries.size(), 1u);
  std::string state;
  for (std::size_t i = 0; i < 2 * snapshot_chunk_bytes + 12345; ++i) state += static_cast<char>('a' + i * 7 % 26);
  ASSERT_TRUE(a.log->save_snapshot(epoch, entries[0].index, entries[0].key, state));
  ASSERT_TRUE(a.next<ev::SnapshotSaved>(20s));
  auto b = start_node("b");
  const auto restored = b.next<ev::Restored>(20s);
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->index, entries[0].index);
  EXPECT_TRUE(restored->state == state);
}

TEST(EtcdLogUnreachable, StartFailsWithinItsTimeout) {
  LogConfig config;
  std::string error;
  const auto port = client::pick_free_port();
  ASSERT_TRUE(port);
  config.target = *parse_endpoints("127.0.0.1:" + std::to_string(*port), error);
  config.self = LeaderRecord{"a", "127.0.0.1:1"};
  config.call_timeout = 500ms;
  config.start_timeout = 1500ms;
  Node node;
  node.log = std::make_unique<EtcdLog>(config);
  const auto started = std::chrono::steady_clock::now();
  node.log->start();
  const auto failed = node.next<ev::Failed>(10s);
  ASSERT_TRUE(failed);
  EXPECT_NE(failed->reason.find("cannot read the log from etcd"), std::string::npos) << failed->reason;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_FALSE(node.next<ev::Ready>(0ms));
}

}  // namespace
}  // namespace lockstep::etcd
