// `lockstep bench`: the benchmarks' options (engine: live/engine_bench.hpp;
// server: live/server_bench.hpp; cluster: live/cluster_bench.hpp), each
// printing figures and a `ratio:` measured within one run.
#include <filesystem>
#include <memory>
#include <string>

#include "cmd/lockstep/commands.hpp"
#include "cli/validators.hpp"
#include "live/cluster_bench.hpp"
#include "live/cluster_failover.hpp"
#include "live/engine_bench.hpp"
#include "live/server_bench.hpp"

namespace lockstep::cli {

namespace {

// The path of this lockstep binary, which the benchmarks start as servers.
std::string this_binary() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

void add_engine_bench(CLI::App& bench, std::function<int()>& run) {
  auto options = std::make_shared<live::EngineBenchOptions>();
  auto* engine = bench.add_subcommand(
      "engine",
      "ns/op of the engine on a realistic mix over many keys, the floor of a bare\n"
      "std::unordered_map on the same keys, their ratio (`ratio: X`), and bytes per held key\n"
      "and per waiter");
  // Fewer than 1,000 keys is not the realistic mix (1,000 of them are the
  // hot keys), and a mix of no request has no cost to measure.
  engine->add_option("--keys", options->keys, "number of keys")
      ->check(whole(1'000, 100'000'000))
      ->capture_default_str();
  engine->add_option("--requests", options->requests, "requests in the timed mix")
      ->check(whole(1, 10'000'000'000))
      ->capture_default_str();
  engine->add_option("--seed", options->seed, "seed of the workload")->check(whole(0))->capture_default_str();
  engine->callback([options, &run] { run = [options] { return live::run_engine_bench(*options); }; });
}

void add_server_bench(CLI::App& bench, std::function<int()>& run) {
  auto server_options = std::make_shared<live::ServerBenchOptions>();
  auto* server = bench.add_subcommand(
      "server",
      "lockstep serve and redis-server (SET NX PX + compare-and-delete by EVALSHA) side by side:\n"
      "the same load generator, connections, keys and try-lock/release mix in one run, unpipelined\n"
      "and at pipeline depth 16; ops/s, p50/p99/p99.9 latency, `ratio: X`; then lockstep alone on\n"
      "a contention mix with waiters");
  // CLI11 writes the value when it parses: the target must outlive this
  // function, so it lives in the options the callback keeps.
  server->add_option("--against", server_options->against, "the server to compare with")
      ->check(one_of({"redis"}, "the servers it compares with", "only redis"))
      ->capture_default_str();
  // At least one connection, one key and one second, or the figures
  // divide by nothing; the server under test takes up to 4,096 connections.
  server->add_option("--connections", server_options->connections, "client connections")
      ->check(whole(1, 4'096))
      ->capture_default_str();
  server->add_option("--keys", server_options->keys, "keys drawn from uniformly")
      ->check(whole(1, 10'000'000))
      ->capture_default_str();
  server->add_option("--seconds", server_options->seconds, "length of each run")
      ->check(whole(1, 3'600))
      ->capture_default_str();
  server->add_option("--redis-server", server_options->redis_binary, "the redis-server binary")
      ->check(executable_on_path())
      ->capture_default_str();
  server->callback([server_options, &run] {
    run = [server_options] {
      server_options->lockstep_binary = this_binary();
      return live::run_server_bench(*server_options);
    };
  });
}

// The cluster's load: its size, its length, and the table measured.
void add_cluster_load_options(CLI::App& cluster, live::ClusterBenchOptions& options) {
  cluster.add_option("--connections", options.connections, "client connections, and etcd callers")
      ->check(CLI::Range(1, 1'000))
      ->capture_default_str();
  cluster.add_option("--keys", options.keys, "keys drawn from uniformly")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  cluster.add_option("--seconds", options.seconds, "length of each run")
      ->check(CLI::Range(1, 3'600))
      ->capture_default_str();
  cluster.add_option("--leader-ttl-s", options.leader_ttl_s, "the nodes' leader TTL")
      ->check(CLI::Range(1, 3'600))
      ->capture_default_str();
  cluster.add_option("--table-keys", options.table_keys, "keys held when the table's bytes are measured")
      ->check(CLI::Range(1'000, 10'000'000))
      ->capture_default_str();
}

// --failover measures something else on its own cluster: the time to the
// next grant after a fault (live/cluster_failover.hpp).
void add_failover_options(CLI::App& cluster, bool& failover, live::FailoverBenchOptions& options) {
  auto* failover_flag = cluster.add_flag(
      "--failover", failover,
      "instead: the time to the next grant after a leader kill, a leader cut from etcd and an etcd\n"
      "leader kill, --trials times each; p50 and max per fault");
  // Twenty trials is the README's figure; a hundred of each fault is half
  // an hour at the default leader TTL.
  cluster.add_option("--trials", options.trials, "--failover: trials per fault")
      ->check(whole(1, 100))
      ->needs(failover_flag)
      ->capture_default_str();
  // serve --cluster's range.
  cluster.add_option("--etcd-timeout-ms", options.etcd_timeout_ms, "--failover: the nodes' deadline of every etcd call")
      ->check(whole_signed(100, 600'000))
      ->needs(failover_flag)
      ->capture_default_str();
}

// The cluster benchmark, or with --failover the failover one, which takes
// the cluster's leader TTL and seed.
int run_cluster_or_failover(live::ClusterBenchOptions& cluster, bool failover, live::FailoverBenchOptions& options) {
  cluster.lockstep_binary = this_binary();
  if (!failover) return live::run_cluster_bench(cluster);
  options.lockstep_binary = cluster.lockstep_binary;
  options.leader_ttl_s = cluster.leader_ttl_s;
  options.seed = cluster.seed;
  return live::run_failover_bench(options);
}

void add_cluster_bench(CLI::App& bench, std::function<int()>& run) {
  auto cluster_options = std::make_shared<live::ClusterBenchOptions>();
  auto* cluster = bench.add_subcommand(
      "cluster",
      "three etcd members and three `serve --cluster` nodes on loopback: try-lock then release through\n"
      "the leader, unpipelined; beside it, in the same run, etcd's own rate of one lock transaction per\n"
      "operation through the same gRPC client at the same concurrency; ops/s, p50/p99/p99.9, commands\n"
      "per etcd write, `ratio: X` (lockstep ops/s / etcd txn/s), and bytes per held key of a node's table");
  add_cluster_load_options(*cluster, *cluster_options);
  auto failover = std::make_shared<bool>(false);
  auto failover_options = std::make_shared<live::FailoverBenchOptions>();
  add_failover_options(*cluster, *failover, *failover_options);
  cluster->callback([cluster_options, failover, failover_options, &run] {
    run = [cluster_options, failover, failover_options] {
      return run_cluster_or_failover(*cluster_options, *failover, *failover_options);
    };
  });
}

}  // namespace

void add_bench_command(CLI::App& app, std::function<int()>& run) {
  auto* bench = app.add_subcommand("bench", "Benchmarks that print figures");
  bench->require_subcommand(1);
  add_engine_bench(*bench, run);
  add_server_bench(*bench, run);
  add_cluster_bench(*bench, run);
}

}  // namespace lockstep::cli
