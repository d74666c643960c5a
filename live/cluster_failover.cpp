#include "live/cluster_failover.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
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
    fmt::print(stderr, "lockstep bench cluster --failover: cannot start the cluster: {}\n", error);
    return 2;
  }
  fmt::print(
      "bench cluster --failover: {} etcd members, {} nodes (leader TTL {} s, etcd call deadline {} ms), {} clients, {} "
      "trials per fault\n",
      cluster->etcd().size(), cluster->size(), options.leader_ttl_s, options.etcd_timeout_ms, options.clients,
      options.trials);
  fmt::print("  time from the fault to the first grant of a request sent after it; each client try-locks keys\n"
             "  of its own (no contention) and releases them\n");

  ClusterWorkloadOptions workload_options;
  workload_options.clients = options.clients;
  workload_options.keys = 100'000;
  workload_options.lease_min_ms = 1'000;
  workload_options.lease_max_ms = 1'000;
  workload_options.wait_min_ms = 0;
  workload_options.wait_max_ms = 0;
  workload_options.let_expire = 0;
  workload_options.release_late = 0;
  workload_options.think_max_ms = 5;
  workload_options.seed = options.seed;
  ClusterWorkload workload(cluster->addresses(), workload_options);
  workload.run_for(1s);

  auto* relays = cluster->relays();
  const std::vector<Fault> faults = {
      {"leader-kill",
       [&](std::string& why) -> std::optional<std::function<bool()>> {
         const int leader = cluster->leader();
         if (leader < 0) return why = "no node leads", std::nullopt;
         cluster->kill(leader);
         return [&, leader] { return cluster->restart(leader); };
       }},
      {"leader-partition",
       [&](std::string& why) -> std::optional<std::function<bool()>> {
         const int leader = cluster->leader();
         if (leader < 0) return why = "no node leads", std::nullopt;
         for (const int link : cluster->etcd_links(leader)) relays->cut(link, FaultProxy::Direction::both);
         return [&, leader] {
           for (const int link : cluster->etcd_links(leader)) relays->heal(link);
           return true;
         };
       }},
      {"etcd-leader-kill",
       [&](std::string& why) -> std::optional<std::function<bool()>> {
         const int member = cluster->etcd().leader();
         if (member < 0) return why = "etcd has no leader", std::nullopt;
         cluster->etcd().kill(member);
         return [&, member] { return cluster->etcd().restart(member); };
       }},
  };

  std::map<std::string, std::vector<std::int64_t>> gaps_us;
  for (int trial = 1; trial <= options.trials; ++trial) {
    for (const auto& fault : faults) {
      // Answering before the fault, so that the figure is the fault's.
      if (cluster->leader() < 0) {
        fmt::print(stderr, "lockstep bench cluster --failover: {} trial {}: no node leads before the fault\n", fault.name,
                   trial);
        return 1;
      }
      workload.run_for(300ms);
      const auto at_us = workload.now_us();
      std::string why;
      const auto heal = fault.make(why);
      if (!heal) {
        fmt::print(stderr, "lockstep bench cluster --failover: {} trial {}: {}\n", fault.name, trial, why);
        return 1;
      }
      std::optional<std::int64_t> granted;
      for (const auto until = workload.now_us() + 60'000'000; !granted && workload.now_us() < until;) {
        workload.run_for(10ms);
        granted = first_grant_sent_since(workload, at_us);
      }
      if (!granted) {
        fmt::print(stderr, "lockstep bench cluster --failover: {} trial {}: no grant within 60 s of the fault\n",
                   fault.name, trial);
        return 1;
      }
      gaps_us[fault.name].push_back(*granted - at_us);
      fmt::print("  {:<17} trial {:>3}: next grant after {:>6.0f} ms\n", fault.name, trial,
                 static_cast<double>(*granted - at_us) / 1e3);
      workload.run_for(200ms);
      if (!(*heal)()) {
        fmt::print(stderr, "lockstep bench cluster --failover: {} trial {}: could not heal the fault\n", fault.name,
                   trial);
        return 1;
      }
      // The healed process rejoins (and etcd's member catches up) before
      // the next fault.
      workload.run_for(1'500ms);
    }
  }
  if (!workload.drain(60s)) {
    fmt::print(stderr, "lockstep bench cluster --failover: requests still pending 60 s after the last trial\n");
    return 1;
  }

  fmt::print("time to the next grant (p50 / max over {} trials):\n", options.trials);
  for (const auto& fault : faults) {
    auto gaps = gaps_us[fault.name];
    if (gaps.empty()) continue;
    std::sort(gaps.begin(), gaps.end());
    // The lower median: a figure some trial really took.
    fmt::print("  {:<17} p50 {:>6.0f} ms   max {:>6.0f} ms\n", fault.name,
               static_cast<double>(gaps[(gaps.size() - 1) / 2]) / 1e3, static_cast<double>(gaps.back()) / 1e3);
  }
  const auto report = check_cluster_history(workload.operations(), workload.unexpected(),
                                            ClusterCheckOptions{DurationMs{3}, DurationMs{0}});
  fmt::print("checked: {} requests, {} grants, {} releases, {} indeterminate, {} violations\n",
             workload.operations().size(), report.grants, report.releases, report.indeterminate, report.violations);
  for (const auto& message : report.messages) fmt::print("  {}\n", message);
  return report.violations == 0 ? 0 : 1;
}

}  // namespace lockstep::live
