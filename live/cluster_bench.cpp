#include "live/cluster_bench.hpp"

#include <malloc.h>

#include <fstream>

#include <fmt/format.h>

#include "impl/cluster/lock_machine.hpp"
#include "live/etcd_load.hpp"
#include "live/load.hpp"
#include "live/lock_cluster.hpp"

namespace lockstep::live {

namespace {

std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return fmt::format("{} {} {}", one, five, fifteen);
}

void print_result(const std::string& name, const std::string& unit, const LoadResult& r) {
  fmt::print("  {:<9} {:>9.0f} {}   p50 {:>7.0f} us   p99 {:>7.0f} us   p99.9 {:>7.0f} us   ({} ops, {} grants)\n", name,
             r.ops_per_second(), unit, r.p50_us, r.p99_us, r.p999_us, r.operations, r.grants);
}

std::size_t heap_in_use() {
  const auto info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

}  // namespace

double table_bytes_per_held_key(std::uint64_t keys) {
  cluster::MachineConfig config;
  config.limits.max_keys = keys;
  config.limits.max_waiters = keys;
  const auto before = heap_in_use();
  {
    auto machine = std::make_unique<cluster::LockMachine>(config);
    // One client, as many as one connection would send: its session keeps
    // only the window's last outcomes, so the table is what grows.
    for (std::uint64_t i = 0; i < keys; ++i) {
      cluster::Acquire acquire{cluster::Session{"bench-client", i + 1}, ConnectionId{1}, fmt::format("key:{:07}", i), "holder",
                               DurationMs{60'000}, DurationMs{0}, TimeMs{0}};
      machine->apply_command(acquire, i + 1);
    }
    const auto held = heap_in_use();
    return static_cast<double>(held - before) / static_cast<double>(keys);
  }
}

int run_cluster_bench(const ClusterBenchOptions& options) {
  LockCluster::Options cluster_options;
  cluster_options.lockstep_binary = options.lockstep_binary;
  cluster_options.leader_ttl_s = options.leader_ttl_s;
  cluster_options.extra_options = "--quiet --max-connections 4096";
  std::string error;
  auto cluster = LockCluster::start(cluster_options, error);
  if (!cluster) {
    fmt::print(stderr, "lockstep bench cluster: cannot start the cluster: {}\n", error);
    return 2;
  }
  const int leader = cluster->leader();
  if (leader < 0) {
    fmt::print(stderr, "lockstep bench cluster: no leader\n");
    return 2;
  }
  fmt::print("bench cluster: {} etcd members, {} nodes (leader TTL {} s), {} connections, {} keys, {} s per run\n",
             cluster->etcd().size(), cluster->size(), options.leader_ttl_s, options.connections, options.keys,
             options.seconds);
  fmt::print("  try-lock (lease 10 s, wait 0) then release, unpipelined; lockstep through its leader, etcd with one\n"
             "  Txn per operation (create if absent; delete if still ours) through the same gRPC client\n");
  fmt::print("  load average before: {}\n", load_average());
  const auto before = cluster->status(leader);

  LoadConfig config;
  config.port = cluster->address(leader).port;
  config.connections = options.connections;
  config.keys = options.keys;
  config.duration = std::chrono::seconds(options.seconds);
  config.seed = options.seed;
  auto protocol = lockstep_protocol();
  const auto ours = run_load(config, *protocol);
  const auto after = cluster->status(leader);

  EtcdLoadConfig etcd_config;
  etcd_config.endpoints = cluster->etcd().endpoints();
  etcd_config.concurrency = options.connections;
  etcd_config.keys = options.keys;
  etcd_config.duration = std::chrono::seconds(options.seconds);
  etcd_config.seed = options.seed;
  const auto theirs = run_etcd_load(etcd_config);
  if (!ours.error.empty() || !theirs.error.empty()) {
    fmt::print(stderr, "lockstep bench cluster: {} {}\n", ours.error, theirs.error);
    return 1;
  }
  print_result("lockstep", "ops/s", ours);
  print_result("etcd", "txn/s", theirs);
  if (before && after && after->entries_written > before->entries_written) {
    const auto entries = after->entries_written - before->entries_written;
    const auto commands = after->proposals_written - before->proposals_written;
    fmt::print("group commit: yes: the leader wrote {} commands in {} etcd writes ({:.1f} per write; one write in "
               "flight, the next takes everything proposed meanwhile)\n",
               commands, entries, static_cast<double>(commands) / static_cast<double>(entries));
  }
  fmt::print("ratio: {:.2f}  (lockstep ops/s / etcd txn/s; p99 {:.0f} us vs {:.0f} us)\n",
             ours.ops_per_second() / std::max(theirs.ops_per_second(), 1e-9), ours.p99_us, theirs.p99_us);
  fmt::print("  load average after: {}\n", load_average());
  fmt::print("bytes per held key: {:.1f}  (a node's lock table, {} keys held)\n",
             table_bytes_per_held_key(options.table_keys), options.table_keys);
  return 0;
}

}  // namespace lockstep::live
