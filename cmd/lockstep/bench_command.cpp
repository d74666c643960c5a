// `lockstep bench engine`: the engine's cost on a realistic mix over many
// keys, against the floor of a bare std::unordered_map on the same keys, and
// its memory per held key and per waiter. Figures come from one run, so the
// ratio is measured under the same machine load on both sides.
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/validators.hpp"
#include "impl/engine.hpp"
#include "live/cluster_bench.hpp"
#include "live/server_bench.hpp"

namespace lockstep::cli {

namespace {

struct BenchOptions {
  std::uint64_t keys = 1'000'000;
  std::uint64_t requests = 4'000'000;
  std::uint64_t seed = 1;
};

// splitmix64: a small, fast, seedable generator for the workload.
class Prng {
 public:
  explicit Prng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t bound) { return next() % bound; }

 private:
  std::uint64_t state_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::size_t heap_in_use() {
  const auto info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

std::string key_name(std::uint64_t id) { return fmt::format("key:{:07}", id); }

// The key id back from a response's key text (the digits after "key:").
std::uint64_t key_id(const std::string& key) {
  std::uint64_t id = 0;
  for (std::size_t i = 4; i < key.size(); ++i) id = id * 10 + static_cast<std::uint64_t>(key[i] - '0');
  return id;
}

Limits bench_limits(std::uint64_t keys) {
  Limits limits;
  limits.max_keys = keys;
  limits.max_waiters = keys;
  return limits;
}

// Floor: one insert and one erase per key of a plain hash map, per operation.
double floor_ns_per_op(const std::vector<std::string>& names) {
  std::unordered_map<std::string, std::uint64_t> map;
  map.reserve(names.size());
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t round = 0; round < 2; ++round) {
    for (std::size_t i = 0; i < names.size(); ++i) map.emplace(names[i], i);
    for (const auto& name : names) map.erase(name);
  }
  return seconds_since(start) * 1e9 / static_cast<double>(names.size() * 4);
}

struct MixResult {
  double ns_per_op = 0;
  EngineCounters counters;
};

// The mix: 45% acquire of a uniform key (lease 1-10 s, a third of them wait
// up to 2 s), 45% release of a uniform key with the token last seen for it
// (N when it changed hands), 10% acquire of one of 1,000 hot keys with a
// wait (queues, hand-offs, timeouts). Time moves 1 ms every 200 requests,
// so leases end, waits time out and sweeps run while requests arrive.
MixResult run_mix(const BenchOptions& options, const std::vector<std::string>& names) {
  Engine engine({bench_limits(options.keys), Token{1}, std::uint64_t{1} << 20, InjectedBug::none});
  std::vector<std::uint64_t> token_of(options.keys, 0);
  Prng prng(options.seed);
  Outputs out;
  const auto absorb = [&] {
    for (const auto& o : out) {
      if (o.response.kind == ResponseKind::granted) token_of[key_id(o.response.key)] = o.response.token.value;
    }
    out.clear();
  };
  TimeMs now{0};
  // Warm up: every key held once.
  for (std::uint64_t id = 0; id < options.keys; ++id) {
    engine.on_request(ConnectionId{id % 64}, AcquireRequest{names[id], "warm", DurationMs{10'000}, DurationMs{0}}, now, out);
    absorb();
  }
  const auto hot_keys = std::min<std::uint64_t>(1'000, options.keys);
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t i = 0; i < options.requests; ++i) {
    if (i % 200 == 0) now.value += 1;
    const auto connection = ConnectionId{prng.below(256)};
    const auto dice = prng.below(100);
    if (dice < 45) {
      const auto id = prng.below(options.keys);
      const auto wait = prng.below(3) == 0 ? DurationMs{static_cast<std::int64_t>(1 + prng.below(2'000))} : DurationMs{0};
      engine.on_request(connection, AcquireRequest{names[id], "owner", DurationMs{static_cast<std::int64_t>(1'000 + prng.below(9'000))}, wait}, now, out);
    } else if (dice < 90) {
      const auto id = prng.below(options.keys);
      engine.on_request(connection, ReleaseRequest{names[id], Token{token_of[id] == 0 ? 1 : token_of[id]}}, now, out);
    } else {
      const auto id = prng.below(hot_keys);
      engine.on_request(connection, AcquireRequest{names[id], "hot", DurationMs{static_cast<std::int64_t>(1 + prng.below(50))}, DurationMs{static_cast<std::int64_t>(1 + prng.below(500))}}, now, out);
    }
    absorb();
  }
  const double elapsed = seconds_since(start);
  return MixResult{elapsed * 1e9 / static_cast<double>(options.requests), engine.counters()};
}

// Heap bytes per held key (no waiters) and per waiter.
std::pair<double, double> memory_per_key_and_waiter(const BenchOptions& options,
                                                    const std::vector<std::string>& names) {
  const auto before = heap_in_use();
  auto engine = std::make_unique<Engine>(Engine::Config{bench_limits(options.keys), Token{1}, std::uint64_t{1} << 20, InjectedBug::none});
  Outputs out;
  for (std::uint64_t id = 0; id < options.keys; ++id) {
    engine->on_request(ConnectionId{0}, AcquireRequest{names[id], "holder", DurationMs{60'000}, DurationMs{0}}, TimeMs{0}, out);
    out.clear();
  }
  const auto held = heap_in_use();
  const std::uint64_t waiters = std::min<std::uint64_t>(options.keys, 200'000);
  for (std::uint64_t i = 0; i < waiters; ++i) {
    engine->on_request(ConnectionId{1 + i % 64}, AcquireRequest{names[i % (options.keys / 4 + 1)], "waiter", DurationMs{1'000}, DurationMs{30'000}}, TimeMs{0}, out);
    out.clear();
  }
  const auto queued = heap_in_use();
  const auto per_key = static_cast<double>(held - before) / static_cast<double>(options.keys);
  const auto per_waiter = static_cast<double>(queued - held) / static_cast<double>(waiters);
  return {per_key, per_waiter};
}

int run_bench_engine(const BenchOptions& options) {
  std::vector<std::string> names;
  names.reserve(options.keys);
  for (std::uint64_t id = 0; id < options.keys; ++id) names.push_back(key_name(id));

  const auto [per_key, per_waiter] = memory_per_key_and_waiter(options, names);
  const auto mix = run_mix(options, names);
  const auto floor = floor_ns_per_op(names);
  const auto& c = mix.counters;
  fmt::print("bench engine: {} keys (names of {} bytes), {} requests of the mix, seed {}\n",
             options.keys, names.front().size(), options.requests, options.seed);
  fmt::print("  mix: 45% acquire of a uniform key, 45% release, 10% contended acquire with wait;\n"
             "       1 ms passes every 200 requests\n");
  fmt::print("  done: {} grants, {} takeovers, {} hand-offs, {} sweep hand-offs, {} queued,\n"
             "        {} timeouts, {} refused (T at once), {} busy, {} releases, {} not held,\n"
             "        {} sweeps deleting {} keys\n",
             c.grants, c.takeovers, c.handoffs, c.sweep_handoffs, c.queued, c.timeouts, c.refused,
             c.busy, c.releases, c.not_held, c.sweeps, c.sweep_deletions);
  fmt::print("engine: {:.1f} ns/op (one request, its responses included)\n", mix.ns_per_op);
  fmt::print("floor: {:.1f} ns/op (std::unordered_map<std::string, uint64_t> insert or erase, same keys)\n", floor);
  fmt::print("ratio: {:.2f}\n", mix.ns_per_op / floor);
  fmt::print("bytes per idle held key: {:.1f}\n", per_key);
  fmt::print("bytes per waiter: {:.1f}\n", per_waiter);
  return 0;
}

// The redis-server binary: a path to an executable file, or a name found
// on PATH. Checked before anything starts, so a typo is one line, not a
// server that never answers.
CLI::Validator executable_check() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        const auto executable = [](const std::filesystem::path& path) {
          std::error_code error;
          return std::filesystem::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
        };
        if (name.find('/') != std::string::npos) {
          return executable(name) ? std::string() : fmt::format("{} is not an executable file", name);
        }
        const char* path = std::getenv("PATH");
        std::string folders = path != nullptr ? path : "";
        for (std::size_t start = 0; start <= folders.size();) {
          const auto end = std::min(folders.find(':', start), folders.size());
          const auto folder = folders.substr(start, end - start);
          if (!folder.empty() && executable(std::filesystem::path(folder) / name)) return {};
          start = end + 1;
        }
        return fmt::format("{} is not found on PATH (scripts/setup.sh installs redis-server)", name);
      },
      "an executable", "executable");
}

}  // namespace

void add_bench_command(CLI::App& app, std::function<int()>& run) {
  auto* bench = app.add_subcommand("bench", "Benchmarks that print figures");
  bench->require_subcommand(1);
  auto options = std::make_shared<BenchOptions>();
  auto* engine = bench->add_subcommand(
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
  engine->callback([options, &run] { run = [options] { return run_bench_engine(*options); }; });

  auto server_options = std::make_shared<live::ServerBenchOptions>();
  auto* server = bench->add_subcommand(
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
      ->check(executable_check())
      ->capture_default_str();
  server->callback([server_options, &run] {
    run = [server_options] {
      server_options->lockstep_binary = std::filesystem::read_symlink("/proc/self/exe").string();
      return live::run_server_bench(*server_options);
    };
  });

  auto cluster_options = std::make_shared<live::ClusterBenchOptions>();
  auto* cluster = bench->add_subcommand(
      "cluster",
      "three etcd members and three `serve --cluster` nodes on loopback: try-lock then release through\n"
      "the leader, unpipelined; beside it, in the same run, etcd's own rate of one lock transaction per\n"
      "operation through the same gRPC client at the same concurrency; ops/s, p50/p99/p99.9, commands\n"
      "per etcd write, `ratio: X` (lockstep ops/s / etcd txn/s), and bytes per held key of a node's table");
  cluster->add_option("--connections", cluster_options->connections, "client connections, and etcd callers")
      ->check(CLI::Range(1, 1'000))
      ->capture_default_str();
  cluster->add_option("--keys", cluster_options->keys, "keys drawn from uniformly")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  cluster->add_option("--seconds", cluster_options->seconds, "length of each run")
      ->check(CLI::Range(1, 3'600))
      ->capture_default_str();
  cluster->add_option("--leader-ttl-s", cluster_options->leader_ttl_s, "the nodes' leader TTL")
      ->check(CLI::Range(1, 3'600))
      ->capture_default_str();
  cluster->add_option("--table-keys", cluster_options->table_keys, "keys held when the table's bytes are measured")
      ->check(CLI::Range(1'000, 10'000'000))
      ->capture_default_str();
  cluster->callback([cluster_options, &run] {
    run = [cluster_options] {
      cluster_options->lockstep_binary = std::filesystem::read_symlink("/proc/self/exe").string();
      return live::run_cluster_bench(*cluster_options);
    };
  });
}

}  // namespace lockstep::cli
