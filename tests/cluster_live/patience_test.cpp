// The cluster client's patience (client/cluster_client.hpp): with its
// default settings, a client outlasts a failover of a cluster at the default
// leader TTL (5 s). Three etcd members and three `serve --cluster` nodes
// with default options; four client::ClusterClient built with nothing but
// the nodes and a client id loop on acquire and release of a key each; 20
// times, the leader is killed (SIGKILL) mid-loop and started again once
// the loop is answered by the next leader. No request may end
// indeterminate, every answer must be a grant or a release, and the whole
// run must pass the clients' checker (model/cluster_client_checker). Prints
// each failover's time, kill to the first answer after it, and the slowest
// request of the run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include <fmt/format.h>

#include "live/cluster_workload.hpp"
#include "live/lock_cluster.hpp"
#include "tests/live/server_process.hpp"
#include "model/cluster_client_checker.hpp"

namespace lockstep::live {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int trials = 20;
constexpr int clients_count = 4;

using testing::lockstep_binary;

// Clients that each acquire their own key (try-lock) and release it, over
// and over, one request at a time.
class RequestLoop {
 public:
  explicit RequestLoop(const std::vector<client::NodeAddress>& nodes) : epoch_(Clock::now()) {
    for (int i = 0; i < clients_count; ++i) {
      client::ClusterClient::Options options;  // the defaults, but what must be given
      options.nodes = nodes;
      options.client_id = fmt::format("patience-{}", i);
      clients_.push_back(std::make_unique<client::ClusterClient>(options));
      held_.emplace_back();
    }
  }

  // Drives the loop until `until` returns true or `patience` passed.
  template <typename Done>
  bool run_until(Done until, milliseconds patience) {
    const auto give_up = Clock::now() + patience;
    std::vector<client::ClusterClient*> all;
    for (auto& c : clients_) all.push_back(c.get());
    while (!until() && Clock::now() < give_up) {
      for (int i = 0; i < clients_count; ++i) {
        if (clients_[static_cast<std::size_t>(i)]->pending() == 0) next(i);
      }
      client::ClusterClient::poll_many(all, 10ms);
    }
    return until();
  }
  void run_for(milliseconds duration) {
    const auto end = Clock::now() + duration;
    run_until([&] { return Clock::now() >= end; }, duration + 1s);
  }
  bool idle() const {
    return std::all_of(clients_.begin(), clients_.end(), [](const auto& c) { return c->pending() == 0; });
  }
  std::int64_t now_us() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - epoch_).count();
  }
  // The first answer that arrived at or after `since_us`, if any.
  std::optional<std::int64_t> first_answer_since(std::int64_t since_us) const {
    std::optional<std::int64_t> first;
    for (const auto& op : operations_) {
      if (op.answered_us && *op.answered_us >= since_us) first = std::min(first.value_or(*op.answered_us), *op.answered_us);
    }
    return first;
  }
  const std::vector<ClusterOperation>& operations() const { return operations_; }
  std::vector<std::string> unexpected() const {
    std::vector<std::string> all;
    for (const auto& c : clients_) {
      for (const auto& line : c->unexpected()) all.push_back(c->client_id() + ": " + line);
    }
    return all;
  }
  void stop() { stopping_ = true; }

 private:
  void next(int i) {
    if (stopping_) return;
    auto& client = *clients_[static_cast<std::size_t>(i)];
    auto& held = held_[static_cast<std::size_t>(i)];
    ClusterOperation op;
    op.client = client.client_id();
    op.owner = client.client_id();
    op.key = fmt::format("k{}", i);
    const auto index = operations_.size();
    const auto done = [this, index, &held](const client::ClusterClient::Result& result) {
      auto& record = operations_[index];
      record_result(record, result, epoch_);
      held = std::nullopt;
      if (record.acquire && record.response && record.response->kind == ResponseKind::granted) {
        held = record.response->token;
      }
    };
    if (held) {
      op.acquire = false;
      op.token = *held;
      operations_.push_back(op);
      operations_[index].sequence = client.release(op.key, op.token, done);
    } else {
      op.lease_ms = DurationMs{60'000};
      operations_.push_back(op);
      operations_[index].sequence = client.acquire(op.key, op.owner, op.lease_ms.value, 0, done);
    }
  }

  Clock::time_point epoch_;
  std::vector<std::unique_ptr<client::ClusterClient>> clients_;
  std::vector<std::optional<Token>> held_;
  std::vector<ClusterOperation> operations_;
  bool stopping_ = false;
};

TEST(ClusterClientPatience, TwentyLeaderKillsGiveNoIndeterminateRequest) {
  LockCluster::Options options;
  options.lockstep_binary = lockstep_binary();
  options.leader_ttl_s = 5;  // serve --cluster's default
  std::string error;
  auto cluster = LockCluster::start(options, error);
  ASSERT_TRUE(cluster) << error;
  RequestLoop loop(cluster->addresses());
  loop.run_for(1s);
  std::vector<double> failovers_s;
  for (int trial = 1; trial <= trials; ++trial) {
    const int leader = cluster->leader();
    ASSERT_GE(leader, 0) << "trial " << trial << ": no leader";
    loop.run_for(300ms);
    cluster->kill(leader);
    const auto killed_us = loop.now_us();
    // Answered again by the next leader, and for a while after.
    ASSERT_TRUE(loop.run_until([&] { return loop.first_answer_since(killed_us).has_value(); }, 60s))
        << "trial " << trial << ": nothing answered within 60 s of the kill";
    const auto answered_us = *loop.first_answer_since(killed_us);
    failovers_s.push_back(static_cast<double>(answered_us - killed_us) / 1e6);
    fmt::print("trial {}: killed n{}, answered again after {:.2f} s\n", trial, leader + 1, failovers_s.back());
    loop.run_for(500ms);
    ASSERT_TRUE(cluster->restart(leader)) << "trial " << trial << ": n" << leader + 1 << " did not start again";
  }
  loop.stop();
  ASSERT_TRUE(loop.run_until([&] { return loop.idle(); }, 60s));

  std::uint64_t indeterminate = 0, other = 0;
  std::int64_t slowest_us = 0;
  for (const auto& op : loop.operations()) {
    if (!op.answered_us) {
      ++indeterminate;
      continue;
    }
    slowest_us = std::max(slowest_us, *op.answered_us - op.sent_us);
    const auto kind = op.response->kind;
    if (kind != (op.acquire ? ResponseKind::granted : ResponseKind::released)) ++other;
  }
  std::sort(failovers_s.begin(), failovers_s.end());
  fmt::print("{} requests, {} indeterminate; failover (kill to the next answer) {:.2f} s .. {:.2f} s, median {:.2f} s; "
             "slowest request {:.2f} s\n",
             loop.operations().size(), indeterminate, failovers_s.front(), failovers_s.back(),
             failovers_s[failovers_s.size() / 2], static_cast<double>(slowest_us) / 1e6);
  EXPECT_EQ(indeterminate, 0u);
  EXPECT_EQ(other, 0u) << "an answer other than a grant or a release";
  const auto report = check_cluster_history(loop.operations(), loop.unexpected(), ClusterCheckOptions{DurationMs{3}, {}});
  EXPECT_EQ(report.violations, 0u) << (report.messages.empty() ? "" : report.messages.front());
}

}  // namespace
}  // namespace lockstep::live
