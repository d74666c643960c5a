// Cluster mode for real, under faults: three etcd members and three
// `lockstep serve --cluster` nodes on loopback (live/lock_cluster), eight
// clients holding, waiting for and releasing a few contended keys through
// client::ClusterClient (live/cluster_workload), while the test kills the
// leader node (and then the next), pauses it past its leader TTL and resumes it, kills etcd
// members (a follower, then etcd's leader), and kills and restarts a node.
// Every run is judged from the clients' side by model/cluster_client_checker
// (tokens, one holder per key within the clock allowance, no grant lost, no
// early T, no stray answer); the cluster must also keep granting after each
// fault. Beyond the clients' view: after the pause, etcd's log holds no
// entry of the paused leader's epoch written after a newer epoch began (the
// fence); after the restart, the restarted node caught up from a snapshot
// and, once the cluster is quiet, every node reports the same table digest at
// the same applied index (status line on SIGUSR1); the log kept in etcd stays
// shorter than what was applied. With `answer-before-commit` or
// `expire-without-token-check` injected, the checker must report a violation;
// and so with `heap-not-rebuilt` (keys stuck past the stated lateness after
// a takeover) and `restore-forgets-sessions` (digests that differ), which
// exact replay cannot show.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "drivers/etcd/client.hpp"
#include "drivers/etcd/log_format.hpp"
#include "live/cluster_workload.hpp"
#include "live/lock_cluster.hpp"

namespace lockstep::live {
namespace {

using namespace std::chrono_literals;

// Lease ends are judged to the millisecond: the nodes and the clients run
// on one machine, so S is 0 here; what is left is the rounding of instants to
// whole milliseconds on both sides.
constexpr DurationMs allowance{3};
// How late an Expire may come: a leader's TTL (2 s here), a campaign, and
// the new leader's catching up; etcd's own election when its leader dies.
constexpr DurationMs max_lateness{6'000};

std::string lockstep_binary() {
  const char* path = std::getenv("LOCKSTEP_BINARY");
  return path ? path : "lockstep";
}

std::unique_ptr<LockCluster> start_cluster(const std::string& bug = "none", const std::string& extra = "") {
  LockCluster::Options options;
  options.lockstep_binary = lockstep_binary();
  options.leader_ttl_s = 2;
  options.bug = bug;
  options.extra_options = "--max-lease-ms 10000 --max-wait-ms 10000 " + extra;
  std::string error;
  auto cluster = LockCluster::start(options, error);
  EXPECT_TRUE(cluster) << error;
  return cluster;
}

ClusterCheckReport judge(const ClusterWorkload& workload) {
  const auto unexpected = workload.unexpected();
  return check_cluster_history(workload.operations(), unexpected, ClusterCheckOptions{allowance, max_lateness});
}

std::string describe(const ClusterCheckReport& report, const ClusterWorkload& workload) {
  const auto stats = workload.stats();
  std::string text = fmt::format("{} violations; {} grants, {} releases, {} indeterminate; {} attempts, {} redirects, "
                                 "{} timeouts, {} connections lost",
                                 report.violations, report.grants, report.releases, report.indeterminate,
                                 stats.attempts, stats.redirects, stats.timeouts, stats.connections_lost);
  for (const auto& message : report.messages) text += "\n  " + message;
  return text;
}

void expect_clean(const ClusterWorkload& workload) {
  const auto report = judge(workload);
  fmt::print("{}\n", describe(report, workload));
  EXPECT_EQ(report.violations, 0u) << describe(report, workload);
  EXPECT_GT(report.grants, 10u) << describe(report, workload);
}

// Kills the leader node, then the next: most holders let their lease run
// out, so keys are held at each takeover and the new leader must expire
// them (what heap-not-rebuilt gets wrong, below). Returns when each kill
// was made, in the workload's microseconds.
std::vector<std::int64_t> kill_two_leaders(LockCluster& cluster, ClusterWorkload& workload) {
  std::vector<std::int64_t> killed_at;
  workload.run_for(2s);
  for (int kill = 0; kill < 2; ++kill) {
    const int leader = cluster.leader();
    EXPECT_GE(leader, 0);
    if (leader < 0) break;
    cluster.kill(leader);
    killed_at.push_back(workload.now_us());
    workload.run_for(kill == 0 ? 5s : 10s);
  }
  return killed_at;
}

ClusterWorkloadOptions expiring_holders() {
  ClusterWorkloadOptions options;
  options.keys = 3;
  options.let_expire = 0.7;
  return options;
}

TEST(ClusterFaults, KillTheLeaderNodeThenTheNext) {
  auto cluster = start_cluster();
  ASSERT_TRUE(cluster);
  ClusterWorkload workload(cluster->addresses(), expiring_holders());
  const auto killed_at = kill_two_leaders(*cluster, workload);
  ASSERT_TRUE(workload.drain(20s));
  expect_clean(workload);
  ASSERT_EQ(killed_at.size(), 2u);
  EXPECT_GT(workload.grants_since(killed_at[0] + 1'000'000), workload.grants_since(killed_at[1]))
      << "no grants between the kills";
  EXPECT_GT(workload.grants_since(killed_at[1] + 1'000'000), 5u) << "no grants once the third node should lead";
  EXPECT_GE(cluster->leader(), 0);
}

// Every log entry of an epoch was written before any later epoch began:
// what a paused leader proposed after it was replaced never reached the log.
void expect_fenced_log(LockCluster& cluster) {
  std::string error;
  etcd::Client client(*etcd::parse_endpoints(cluster.etcd().endpoints(), error));
  const etcd::Keys keys(cluster.prefix());
  etcdserverpb::RangeRequest request;
  request.set_key(keys.log_prefix());
  request.set_range_end(etcd::prefix_end(keys.log_prefix()));
  request.set_keys_only(true);
  etcdserverpb::RangeResponse response;
  ASSERT_TRUE(client.range(request, response, 5s).ok());
  std::map<std::uint64_t, std::int64_t> last_write;  // epoch -> revision of its last entry
  for (const auto& kv : response.kvs()) {
    const auto epoch = std::stoull(kv.key().substr(keys.log_prefix().size(), 16), nullptr, 16);
    last_write[epoch] = std::max(last_write[epoch], kv.mod_revision());
  }
  ASSERT_GE(last_write.size(), 2u) << "the log shows one leader only";
  for (const auto& [epoch, revision] : last_write) {
    for (const auto& [later, ignored] : last_write) {
      if (later > epoch) {
        EXPECT_LT(revision, static_cast<std::int64_t>(later))
            << "epoch " << epoch << " wrote at revision " << revision << ", after epoch " << later << " began";
      }
    }
  }
}

TEST(ClusterFaults, PauseTheLeaderPastItsLeaseThenResumeIt) {
  auto cluster = start_cluster("none", "--snapshot-every 0");
  ASSERT_TRUE(cluster);
  ClusterWorkload workload(cluster->addresses(), ClusterWorkloadOptions{});
  workload.run_for(2s);
  const int leader = cluster->leader();
  ASSERT_GE(leader, 0);
  cluster->pause(leader);
  const auto paused_at = workload.now_us();
  workload.run_for(5s);  // the TTL is 2 s: another node leads meanwhile
  cluster->resume(leader);
  workload.run_for(3s);
  ASSERT_TRUE(workload.drain(20s));
  expect_clean(workload);
  EXPECT_GT(workload.grants_since(paused_at + 3'000'000), 5u) << "no grants while the leader was paused";
  expect_fenced_log(*cluster);
  EXPECT_NE(cluster->log_tail(leader).find("stops leading"), std::string::npos) << cluster->log_tail(leader);
}

TEST(ClusterFaults, KillAnEtcdMemberThenEtcdsLeader) {
  auto cluster = start_cluster();
  ASSERT_TRUE(cluster);
  ClusterWorkload workload(cluster->addresses(), ClusterWorkloadOptions{});
  workload.run_for(2s);
  auto& etcd = cluster->etcd();
  const int etcd_leader = etcd.leader();
  ASSERT_GE(etcd_leader, 0);
  const int follower = (etcd_leader + 1) % etcd.size();
  etcd.kill(follower);
  const auto first_kill = workload.now_us();
  workload.run_for(3s);
  EXPECT_GT(workload.grants_since(first_kill), 5u) << "no grants with one etcd member down";
  // With two members left, losing etcd's leader too would leave no quorum:
  // the first comes back before its leader goes.
  ASSERT_TRUE(etcd.restart(follower));
  workload.run_for(2s);
  const int second = etcd.leader();
  ASSERT_GE(second, 0);
  etcd.kill(second);
  const auto second_kill = workload.now_us();
  workload.run_for(6s);
  ASSERT_TRUE(workload.drain(20s));
  expect_clean(workload);
  EXPECT_GT(workload.grants_since(second_kill + 2'000'000), 5u) << "no grants after etcd's leader was killed";
}

// Once the cluster is quiet (leases run out, nothing is proposed), every
// node's status at one applied index; fewer when they never agree on one.
std::vector<LockCluster::Status> quiet_statuses(LockCluster& cluster) {
  std::vector<LockCluster::Status> statuses;
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(500ms);
    statuses.clear();
    for (int i = 0; i < cluster.size(); ++i) {
      if (auto status = cluster.status(i)) statuses.push_back(*status);
    }
    if (statuses.size() == static_cast<std::size_t>(cluster.size()) &&
        std::all_of(statuses.begin(), statuses.end(), [&](const auto& s) { return s.applied == statuses[0].applied; })) {
      return statuses;
    }
  }
  return {};
}

TEST(ClusterFaults, AKilledNodeRestartsFromASnapshotAndAgrees) {
  auto cluster = start_cluster("none", "--snapshot-every 50");
  ASSERT_TRUE(cluster);
  ClusterWorkload workload(cluster->addresses(), ClusterWorkloadOptions{});
  workload.run_for(2s);
  const int leader = cluster->leader();
  ASSERT_GE(leader, 0);
  const int victim = (leader + 1) % cluster->size();
  cluster->kill(victim);
  workload.run_for(3s);
  ASSERT_TRUE(cluster->restart(victim));
  workload.run_for(3s);
  ASSERT_TRUE(workload.drain(20s));
  expect_clean(workload);
  // It started from a snapshot (the log before it was gone from etcd).
  EXPECT_NE(cluster->log_tail(victim).find("(from the snapshot of index "), std::string::npos)
      << cluster->log_tail(victim);
  const auto statuses = quiet_statuses(*cluster);
  ASSERT_EQ(statuses.size(), static_cast<std::size_t>(cluster->size())) << "the nodes never agreed on an index";
  for (const auto& status : statuses) {
    EXPECT_EQ(status.applied, statuses[0].applied) << status.line;
    EXPECT_EQ(status.digest, statuses[0].digest) << status.line << "\n" << statuses[0].line;
  }
  // The log kept in etcd is what came after the last snapshot, not all.
  std::string error;
  etcd::Client client(*etcd::parse_endpoints(cluster->etcd().endpoints(), error));
  const etcd::Keys keys(cluster->prefix());
  etcdserverpb::RangeRequest request;
  request.set_key(keys.log_prefix());
  request.set_range_end(etcd::prefix_end(keys.log_prefix()));
  request.set_count_only(true);
  etcdserverpb::RangeResponse response;
  ASSERT_TRUE(client.range(request, response, 5s).ok());
  etcdserverpb::RangeRequest pointer;
  pointer.set_key(keys.snapshot());
  etcdserverpb::RangeResponse snapshot;
  ASSERT_TRUE(client.range(pointer, snapshot, 5s).ok());
  EXPECT_EQ(snapshot.kvs_size(), 1) << "no snapshot was stored";
  EXPECT_LT(response.count(), 200) << "the log in etcd was not cut by the snapshots";
}

// The workload that gives a stale Expire its chance: few keys, many
// waiters, most holders releasing within milliseconds before the cluster's
// end of their lease, so that the release is in flight when the leader
// proposes the Expire.
ClusterWorkloadOptions near_expiry() {
  ClusterWorkloadOptions options;
  options.keys = 2;
  options.lease_min_ms = 50;
  options.lease_max_ms = 150;
  options.try_lock = 0.1;
  options.let_expire = 0.1;
  options.release_late = 0.8;
  options.release_late_max_ms = 12;
  return options;
}

TEST(ClusterFaults, ANearExpiryWorkloadConforms) {
  auto cluster = start_cluster();
  ASSERT_TRUE(cluster);
  ClusterWorkload workload(cluster->addresses(), near_expiry());
  workload.run_for(8s);
  ASSERT_TRUE(workload.drain(20s));
  expect_clean(workload);
}

TEST(ClusterFaults, ExpireWithoutTokenCheckIsReported) {
  auto cluster = start_cluster("expire-without-token-check");
  ASSERT_TRUE(cluster);
  // A stale Expire needs a release to land just ahead of it: a few do in a
  // round of 8 s; rounds (fresh clients each) go on until one is reported.
  std::uint64_t violations = 0;
  for (std::uint64_t round = 1; round <= 4 && violations == 0; ++round) {
    auto options = near_expiry();
    options.seed = round;
    ClusterWorkload workload(cluster->addresses(), options);
    workload.run_for(8s);
    workload.drain(20s);
    const auto report = judge(workload);
    fmt::print("round {}: {}\n", round, describe(report, workload));
    violations = report.violations;
  }
  EXPECT_GT(violations, 0u);
}

TEST(ClusterFaults, AnswerBeforeCommitIsReported) {
  auto cluster = start_cluster("answer-before-commit");
  ASSERT_TRUE(cluster);
  ClusterWorkload workload(cluster->addresses(), ClusterWorkloadOptions{});
  workload.run_for(5s);
  workload.drain(20s);
  const auto report = judge(workload);
  fmt::print("{}\n", describe(report, workload));
  EXPECT_GT(report.violations, 0u) << describe(report, workload);
}

// The bugs exact replay cannot show (a one-node cluster neither changes
// leader nor restores), shown here by the check that guards their rule.

// A new leader that kept its (empty) heap never expires the keys held when
// it took over: try-locks on them are refused long after every lease ended.
TEST(ClusterFaults, HeapNotRebuiltIsReported) {
  auto cluster = start_cluster("heap-not-rebuilt");
  ASSERT_TRUE(cluster);
  ClusterWorkload workload(cluster->addresses(), expiring_holders());
  kill_two_leaders(*cluster, workload);
  workload.drain(20s);
  const auto report = judge(workload);
  fmt::print("{}\n", describe(report, workload));
  EXPECT_GT(report.violations, 0u) << describe(report, workload);
}

// A node restored without the sessions holds another table than the nodes
// that applied the log: their digests differ at the same applied index.
TEST(ClusterFaults, RestoreForgetsSessionsIsReported) {
  auto cluster = start_cluster("restore-forgets-sessions", "--snapshot-every 50");
  ASSERT_TRUE(cluster);
  ClusterWorkload workload(cluster->addresses(), ClusterWorkloadOptions{});
  workload.run_for(2s);
  const int leader = cluster->leader();
  ASSERT_GE(leader, 0);
  const int victim = (leader + 1) % cluster->size();
  cluster->kill(victim);
  workload.run_for(3s);
  ASSERT_TRUE(cluster->restart(victim));
  workload.drain(20s);
  const auto statuses = quiet_statuses(*cluster);
  ASSERT_EQ(statuses.size(), static_cast<std::size_t>(cluster->size())) << "the nodes never agreed on an index";
  bool differ = false;
  for (const auto& status : statuses) {
    fmt::print("{}\n", status.line);
    differ = differ || status.digest != statuses[0].digest;
  }
  EXPECT_TRUE(differ) << "every node reports the same table";
}

}  // namespace
}  // namespace lockstep::live
