#include "live/cluster_failover.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "live/cluster_workload.hpp"
#include "live/lock_cluster.hpp"
#include "model/cluster_client_checker.hpp"

namespace lockstep::live {

namespace {

using namespace std::chrono_literals;

// The first grant answered to a request sent at or after `since_us`.
std::optional<std::int64_t> first_grant_sent_since(const ClusterWorkload& workload, std::int64_t since_us) {
  std::optional<std::int64_t> first;
  for (const auto& op : workload.operations()) {
    if (!op.acquire || op.sent_us < since_us || !op.answered_us || op.response->kind != ResponseKind::granted) continue;
    if (!first || *op.answered_us < *first) first = *op.answered_us;
  }
  return first;
}

struct Fault {
  const char* name;
  // Makes the fault; returns what heals it, or nothing and a reason.
  std::function<std::optional<std::function<bool()>>(std::string& why)> make;
};

constexpr const char* kBench = "lockstep bench cluster --failover";

ClusterWorkloadOptions failover_workload(const FailoverBenchOptions& options) {
  ClusterWorkloadOptions workload;
  workload.clients = options.clients;
  workload.keys = 100'000;
  workload.lease_min_ms = 1'000;
  workload.lease_max_ms = 1'000;
  workload.wait_min_ms = 0;
  workload.wait_max_ms = 0;
  workload.let_expire = 0;
  workload.release_late = 0;
  workload.think_max_ms = 5;
  workload.seed = options.seed;
  return workload;
}

// The three faults timed, each on whatever leads when it is made.
std::vector<Fault> failover_faults(LockCluster& cluster) {
  auto* relays = cluster.relays();
  return {
      {"leader-kill",
       [&cluster](std::string& why) -> std::optional<std::function<bool()>> {
         const int leader = cluster.leader();
         if (leader < 0) return why = "no node leads", std::nullopt;
         cluster.kill(leader);
         return [&cluster, leader] { return cluster.restart(leader); };
       }},
      {"leader-partition",
       [&cluster, relays](std::string& why) -> std::optional<std::function<bool()>> {
         const int leader = cluster.leader();
         if (leader < 0) return why = "no node leads", std::nullopt;
         for (const int link : cluster.etcd_links(leader)) relays->cut(link, FaultProxy::Direction::both);
         return [&cluster, relays, leader] {
           for (const int link : cluster.etcd_links(leader)) relays->heal(link);
           return true;
         };
       }},
      {"etcd-leader-kill",
       [&cluster](std::string& why) -> std::optional<std::function<bool()>> {
         const int member = cluster.etcd().leader();
         if (member < 0) return why = "etcd has no leader", std::nullopt;
         cluster.etcd().kill(member);
         return [&cluster, member] { return cluster.etcd().restart(member); };
       }},
  };
}

// One trial of one fault: the time from the fault to the first grant of a
// request sent after it, or why there is none (printed).
std::optional<std::int64_t> time_fault(LockCluster& cluster, ClusterWorkload& workload, const Fault& fault,
                                       int trial) {
  const auto fail = [&](std::string_view why) {
    fmt::print(stderr, "{}: {} trial {}: {}\n", kBench, fault.name, trial, why);
    return std::nullopt;
  };
  // Answering before the fault, so that the figure is the fault's.
  if (cluster.leader() < 0) return fail("no node leads before the fault");
  workload.run_for(300ms);
  const auto at_us = workload.now_us();
  std::string why;
  const auto heal = fault.make(why);
  if (!heal) return fail(why);
  std::optional<std::int64_t> granted;
  for (const auto until = workload.now_us() + 60'000'000; !granted && workload.now_us() < until;) {
    workload.run_for(10ms);
    granted = first_grant_sent_since(workload, at_us);
  }
  if (!granted) return fail("no grant within 60 s of the fault");
  fmt::print("  {:<17} trial {:>3}: next grant after {:>6.0f} ms\n", fault.name, trial,
             static_cast<double>(*granted - at_us) / 1e3);
  workload.run_for(200ms);
  if (!(*heal)()) return fail("could not heal the fault");
  // The healed process rejoins (and etcd's member catches up) before the
  // next fault.
  workload.run_for(1'500ms);
  return *granted - at_us;
}

void print_gaps(const std::vector<Fault>& faults, std::map<std::string, std::vector<std::int64_t>> gaps_us,
                int trials) {
  fmt::print("time to the next grant (p50 / max over {} trials):\n", trials);
  for (const auto& fault : faults) {
    auto& gaps = gaps_us[fault.name];
    if (gaps.empty()) continue;
    std::sort(gaps.begin(), gaps.end());
    // The lower median: a figure some trial really took.
    fmt::print("  {:<17} p50 {:>6.0f} ms   max {:>6.0f} ms\n", fault.name,
               static_cast<double>(gaps[(gaps.size() - 1) / 2]) / 1e3, static_cast<double>(gaps.back()) / 1e3);
  }
}

}  // namespace

int run_failover_bench(const FailoverBenchOptions& options) {
  LockCluster::Options cluster_options;
  cluster_options.lockstep_binary = options.lockstep_binary;
  cluster_options.leader_ttl_s = options.leader_ttl_s;
  cluster_options.relays = true;  // so that a node can be cut from etcd
  cluster_options.extra_options = fmt::format("--quiet --etcd-timeout-ms {}", options.etcd_timeout_ms);
  std::string error;
  auto cluster = LockCluster::start(cluster_options, error);
  if (!cluster) {
    fmt::print(stderr, "{}: cannot start the cluster: {}\n", kBench, error);
    return 2;
  }
  fmt::print(
      "bench cluster --failover: {} etcd members, {} nodes (leader TTL {} s, etcd call deadline {} ms), {} clients, {} "
      "trials per fault\n",
      cluster->etcd().size(), cluster->size(), options.leader_ttl_s, options.etcd_timeout_ms, options.clients,
      options.trials);
  fmt::print("  time from the fault to the first grant of a request sent after it; each client try-locks keys\n"
             "  of its own (no contention) and releases them\n");
  ClusterWorkload workload(cluster->addresses(), failover_workload(options));
  workload.run_for(1s);

  const auto faults = failover_faults(*cluster);
  std::map<std::string, std::vector<std::int64_t>> gaps_us;
  for (int trial = 1; trial <= options.trials; ++trial) {
    for (const auto& fault : faults) {
      const auto gap = time_fault(*cluster, workload, fault, trial);
      if (!gap) return 1;
      gaps_us[fault.name].push_back(*gap);
    }
  }
  if (!workload.drain(60s)) {
    fmt::print(stderr, "{}: requests still pending 60 s after the last trial\n", kBench);
    return 1;
  }
  print_gaps(faults, std::move(gaps_us), options.trials);
  const auto report = check_cluster_history(workload.operations(), workload.unexpected(),
                                            ClusterCheckOptions{DurationMs{3}, DurationMs{0}});
  fmt::print("checked: {} requests, {} grants, {} releases, {} indeterminate, {} violations\n",
             workload.operations().size(), report.grants, report.releases, report.indeterminate, report.violations);
  for (const auto& message : report.messages) fmt::print("  {}\n", message);
  return report.violations == 0 ? 0 : 1;
}

}  // namespace lockstep::live
