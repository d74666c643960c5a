#include "live/server_bench.hpp"

#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include "client/line_socket.hpp"
#include "live/load.hpp"
#include "live/process.hpp"

namespace lockstep::live {

namespace {

// The compare-and-delete release of the usual Redis lock recipe.
constexpr const char* release_script =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return fmt::format("{} {} {}", one, five, fifteen);
}

void print_result(const std::string& name, const LoadResult& r) {
  fmt::print("  {:<9} {:>10.0f} ops/s   p50 {:>6.0f} us   p99 {:>6.0f} us   p99.9 {:>6.0f} us   ({} ops, {} grants)\n",
             name, r.ops_per_second(), r.p50_us, r.p99_us, r.p999_us, r.operations, r.grants);
}

// Waits until `server` accepts connections on `port`; false as soon as it
// has exited (a wrong binary, a port taken) or after `patience`.
bool wait_until_listening(ServerProcess& server, std::uint16_t port, std::chrono::milliseconds patience) {
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < give_up) {
    if (!server.running()) return false;
    if (client::LineSocket::connect("127.0.0.1", port, std::chrono::milliseconds(100))) return true;
  }
  return false;
}

// Where each server's output goes while it runs.
std::string log_path(const char* name) { return fmt::format("/tmp/lockstep-bench-{}-{}.log", name, getpid()); }

// The loopback ports the two servers listen on.
struct Ports {
  std::uint16_t lockstep = 0;
  std::uint16_t redis = 0;
};

// Two free ports, or nothing after one line on stderr.
std::optional<Ports> pick_ports() {
  const auto lockstep_port = client::pick_free_port();
  const auto redis_port = client::pick_free_port();
  if (!lockstep_port || !redis_port || *lockstep_port == *redis_port) {
    fmt::print(stderr, "lockstep bench server: no free ports\n");
    return std::nullopt;
  }
  return Ports{*lockstep_port, *redis_port};
}

// Both servers, each started whether or not the other could be.
struct Servers {
  std::optional<ServerProcess> lockstep;
  std::optional<ServerProcess> redis;
};

Servers start_servers(const ServerBenchOptions& options, Ports ports) {
  return {ServerProcess::start(fmt::format("exec {} serve --quiet --port {} --max-connections 4096",
                                           options.lockstep_binary, ports.lockstep),
                               log_path("lockstep")),
          ServerProcess::start(fmt::format("exec {} --port {} --bind 127.0.0.1 --save '' --appendonly no --protected-mode no",
                                           options.redis_binary, ports.redis),
                               log_path("redis"))};
}

// Whether both servers started and listen; false after a line on stderr.
bool servers_ready(Servers& servers, Ports ports) {
  if (!servers.lockstep || !servers.redis) {
    fmt::print(stderr, "lockstep bench server: cannot start the servers\n");
    return false;
  }
  if (!wait_until_listening(*servers.lockstep, ports.lockstep, std::chrono::seconds(10)) ||
      !wait_until_listening(*servers.redis, ports.redis, std::chrono::seconds(10))) {
    fmt::print(stderr, "lockstep bench server: a server did not start:\n{}\n{}\n", servers.lockstep->log_tail(),
               servers.redis->log_tail());
    return false;
  }
  return true;
}

// The SHA of the release script loaded into Redis, or nothing after a line
// on stderr.
std::optional<std::string> load_release_script(std::uint16_t redis_port) {
  redisContext* setup = redisConnect("127.0.0.1", redis_port);
  auto* loaded = setup == nullptr ? nullptr
                                  : static_cast<redisReply*>(redisCommand(setup, "SCRIPT LOAD %s", release_script));
  if (loaded == nullptr || loaded->type != REDIS_REPLY_STRING) {
    fmt::print(stderr, "lockstep bench server: cannot load the release script into Redis\n");
    if (loaded != nullptr) freeReplyObject(loaded);
    if (setup != nullptr) redisFree(setup);
    return std::nullopt;
  }
  std::string sha(loaded->str, loaded->len);
  freeReplyObject(loaded);
  redisFree(setup);
  return sha;
}

// The same try-lock/release mix on both servers at pipeline depth `depth`,
// and their ratio; false after a line on stderr if a load failed.
bool compare_at_depth(const ServerBenchOptions& options, Ports ports, const std::string& sha, int depth) {
  LoadConfig config;
  config.connections = options.connections;
  config.depth = depth;
  config.keys = options.keys;
  config.duration = std::chrono::seconds(options.seconds);
  config.seed = options.seed;
  config.port = ports.lockstep;
  auto ours = lockstep_protocol();
  const auto a = run_load(config, *ours);
  config.port = ports.redis;
  auto theirs = redis_protocol(sha);
  const auto b = run_load(config, *theirs);
  if (!a.error.empty() || !b.error.empty()) {
    fmt::print(stderr, "lockstep bench server: the load failed: {} {}\n", a.error, b.error);
    return false;
  }
  fmt::print("pipeline depth {}:\n", depth);
  print_result("lockstep", a);
  print_result("redis", b);
  fmt::print("ratio: {:.2f}  (depth {}: lockstep ops/s / redis ops/s; p99 {:.0f} us vs {:.0f} us)\n",
             a.ops_per_second() / b.ops_per_second(), depth, a.p99_us, b.p99_us);
  return true;
}

// Contention with waiters: 100 hot keys, short leases, waits.
LoadResult run_contention(const ServerBenchOptions& options, std::uint16_t lockstep_port) {
  LoadConfig contention;
  contention.connections = options.connections;
  contention.depth = 4;
  contention.hot_keys = 100;
  contention.lease_ms = 5;
  contention.wait_ms = 50;
  contention.duration = std::chrono::seconds(options.seconds);
  contention.port = lockstep_port;
  auto ours = lockstep_protocol();
  const auto c = run_load(contention, *ours);
  fmt::print("contention (lockstep only: 100 hot keys, lease 5 ms, wait 50 ms, depth 4):\n");
  print_result("lockstep", c);
  return c;
}

void stop_servers(Servers& servers) {
  servers.lockstep->stop();
  servers.redis->stop();
  ::unlink(log_path("lockstep").c_str());
  ::unlink(log_path("redis").c_str());
}

}  // namespace

// Every path out of here stops both servers: the ServerProcess destructors
// on a return, the signal handler of live/process.cpp on SIGINT or SIGTERM.
int run_server_bench(const ServerBenchOptions& options) {
  const auto ports = pick_ports();
  if (!ports) return 2;
  auto servers = start_servers(options, *ports);
  // Wait for both, and load the release script into Redis.
  if (!servers_ready(servers, *ports)) return 2;
  const auto sha = load_release_script(ports->redis);
  if (!sha) return 2;

  fmt::print("bench server: {} connections, {} keys, {} s per run, try-lock (lease 10 s, wait 0) then release\n",
             options.connections, options.keys, options.seconds);
  fmt::print("  load average before: {}\n", load_average());
  for (const int depth : {1, 16}) {
    if (!compare_at_depth(options, *ports, *sha, depth)) return 2;
  }
  const auto c = run_contention(options, ports->lockstep);
  fmt::print("  load average after: {}\n", load_average());
  stop_servers(servers);
  if (!c.error.empty()) {
    fmt::print(stderr, "lockstep bench server: the contention load failed: {}\n", c.error);
    return 2;
  }
  return 0;
}

}  // namespace lockstep::live
