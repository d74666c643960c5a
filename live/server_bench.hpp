// `lockstep bench server --against redis`: lockstep's server and Redis, each
// started here on a free loopback port, driven by the same load generator
// with the same connections, keys and try-lock/release mix in one run, then
// lockstep alone on a contention mix with waiters (which Redis's SET NX
// cannot express). Prints ops/s, latency percentiles and `ratio: X`.
#pragma once

#include <cstdint>
#include <string>

namespace lockstep::live {

struct ServerBenchOptions {
  std::string lockstep_binary;  // path of this lockstep binary
  std::string against = "redis";  // the server compared with (Redis only, so far)
  std::string redis_binary = "redis-server";
  int connections = 50;
  int keys = 10'000;
  int seconds = 5;
  std::uint64_t seed = 1;
};

int run_server_bench(const ServerBenchOptions& options);

}  // namespace lockstep::live
