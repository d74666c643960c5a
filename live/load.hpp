// A closed-loop load generator against a live server: N connections, each
// with `depth` requests in flight, over a set of keys, for a fixed time. The
// protocol is a parameter (the lock protocol of lockstep, or Redis's
// SET NX PX with a compare-and-delete script), so that both servers are
// driven by the same clients, keys and mix in one run. One thread, one epoll
// loop; latency is measured per request from send to response.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace lockstep::live {

// What one in-flight slot of a connection does next.
struct Step {
  std::string bytes;        // the request, encoded
  bool is_acquire = true;
};

// Encodes requests and decodes replies of one protocol. Replies arrive in
// request order on a connection for the mixes used here (try-locks and
// releases are answered at once); `parse` takes complete replies off `input`.
class LoadProtocol {
 public:
  virtual ~LoadProtocol() = default;
  virtual std::string acquire(const std::string& key, const std::string& owner, std::int64_t lease_ms,
                              std::int64_t wait_ms, std::uint64_t nonce) = 0;
  virtual std::string release(const std::string& key, const std::string& token) = 0;
  struct Reply {
    bool granted = false;  // for an acquire
    std::string token;     // what releases it
    std::string owner;     // lockstep's replies name the owner (matching)
    std::string error;     // an `E` reply: the run stops with it
  };
  // Takes one complete reply off the front of `input`, if there is one.
  virtual bool parse(std::string& input, Reply& reply) = 0;
  // Whether replies may come out of order (lockstep's hand-offs do).
  virtual bool matches_by_owner() const = 0;
};

std::unique_ptr<LoadProtocol> lockstep_protocol();
// `script_sha` names the loaded compare-and-delete script.
std::unique_ptr<LoadProtocol> redis_protocol(std::string script_sha);

struct LoadConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  int connections = 50;
  int depth = 1;
  int keys = 10'000;
  std::int64_t lease_ms = 10'000;
  std::int64_t wait_ms = 0;      // > 0: a contention mix (lockstep only)
  int hot_keys = 0;              // > 0: keys are drawn from the first hot_keys only
  std::chrono::milliseconds duration{5'000};
  std::uint64_t seed = 1;
};

struct LoadResult {
  std::uint64_t operations = 0;
  std::uint64_t grants = 0;
  double seconds = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0;
  std::string error;  // empty on success
  double ops_per_second() const { return seconds > 0 ? static_cast<double>(operations) / seconds : 0; }
};

LoadResult run_load(const LoadConfig& config, LoadProtocol& protocol);

}  // namespace lockstep::live
