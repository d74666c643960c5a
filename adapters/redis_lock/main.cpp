// `lockstep-redis-lock`: the common lock of a single Redis instance behind
// lockstep's line protocol, so that `lockstep fuzz` can test it
// (docs/testing-other-lock-services.md). This file only reads the options;
// redis_lock.hpp says what each request does in Redis.
#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "adapters/common/adapter_options.hpp"
#include "adapters/redis_lock/redis_lock.hpp"
#include "cli/validators.hpp"

namespace {

constexpr const char* program = "lockstep-redis-lock";

// Why the Redis side of the configuration cannot run, or nothing.
std::optional<std::string> validate(const std::string& redis, const std::string& prefix,
                                    lockstep::redis_lock::RedisLockConfig& config) {
  const auto colon = redis.rfind(':');
  const auto port = colon == std::string::npos ? std::nullopt : lockstep::cli::digits_value(redis.substr(colon + 1));
  if (colon == 0 || !port || *port < 1 || *port > 65'535) return fmt::format("--redis '{}' is not HOST:PORT", redis);
  config.host = redis.substr(0, colon);
  config.port = static_cast<std::uint16_t>(*port);
  if (prefix.empty() || prefix.size() > 200 ||
      !std::all_of(prefix.begin(), prefix.end(), [](char c) { return c > ' ' && c < 127; })) {
    return fmt::format("--prefix '{}' is not 1 to 200 printable bytes without space", prefix);
  }
  config.prefix = prefix;
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  lockstep::adapters::LineAdapterConfig server;
  server.port = 7880;
  lockstep::redis_lock::RedisLockConfig config;
  std::string redis = "127.0.0.1:6379", prefix = config.prefix, wait_by = "poll", tokens = "random";
  std::int64_t timeout_ms = config.call_timeout.count(), poll_ms = config.poll.count();
  CLI::App app{
      "lockstep-redis-lock: serves lockstep's line protocol (docs/protocol.md) with the common lock of a\n"
      "single Redis instance: SET <prefix>:<key> <random value> NX PX <lease_ms> to acquire (the value is\n"
      "the token), a compare-and-delete script to release; a waiter tries the SET again by polling or on\n"
      "the key's keyspace notifications until its wait is over. SIGTERM or SIGINT stops it (exit 0); a\n"
      "configuration it cannot run with, or a Redis that does not answer, is refused at start (exit 2)."};
  app.add_option("--redis", redis, "the Redis server, HOST:PORT")->capture_default_str();
  app.add_option("--prefix", prefix, "the prefix of the locks' Redis keys (1 to 200 printable bytes)")
      ->capture_default_str();
  app.add_option("--redis-timeout-ms", timeout_ms, "the deadline of every Redis call")
      ->check(lockstep::cli::whole_signed(100, 600'000))
      ->capture_default_str();
  app.add_option("--wait", wait_by,
                 "how a waiter learns that the key may be free: poll (tries the SET every --poll-ms) or notify "
                 "(Redis's keyspace notifications of the key: notify-keyspace-events must hold K, g and x)")
      ->check(lockstep::cli::one_of({"poll", "notify"}, "the ways of waiting", "poll or notify"))
      ->capture_default_str();
  app.add_option("--tokens", tokens,
                 "where a grant's token comes from: random (the recipe's random value) or counter (a script takes a "
                 "free key with the next number of a counter as its value, INCR and SET in one step)")
      ->check(lockstep::cli::one_of({"random", "counter"}, "the sources of tokens", "random or counter"))
      ->capture_default_str();
  app.add_option("--poll-ms", poll_ms, "--wait poll: the pause between two tries of a waiter")
      ->check(lockstep::cli::whole_signed(1, 60'000))
      ->capture_default_str();
  lockstep::adapters::add_line_adapter_options(app, program, server);
  if (const auto code = lockstep::adapters::parse_command_line(app, program, argc, argv)) return *code;
  config.wait_by = wait_by == "notify" ? lockstep::redis_lock::WaitBy::notify : lockstep::redis_lock::WaitBy::poll;
  if (config.wait_by == lockstep::redis_lock::WaitBy::notify && app.count("--poll-ms") > 0) {
    fmt::print(stderr, "{}: --poll-ms is not used by --wait notify (it applies to --wait poll) (see {} --help)\n",
               program, program);
    return 2;
  }
  config.tokens = tokens == "counter" ? lockstep::redis_lock::TokensFrom::counter : lockstep::redis_lock::TokensFrom::random;
  config.call_timeout = std::chrono::milliseconds(timeout_ms);
  config.poll = std::chrono::milliseconds(poll_ms);
  auto error = validate(redis, prefix, config);
  if (!error) error = lockstep::adapters::validate(server);
  if (error) {
    fmt::print(stderr, "{}: {}\n", program, *error);
    return 2;
  }
  lockstep::redis_lock::RedisLock service(config);
  return lockstep::adapters::run_line_adapter(program, server, service);
}
