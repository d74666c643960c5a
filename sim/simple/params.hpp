// The parameters of one simulated run: the workload the clients generate,
// the network, the faults and the server's limits. Defaults describe a
// realistic service (100 clients over 1,000 keys); `swarm` draws every
// parameter from the seed instead, so that many seeds explore many shapes
// of workload (swarm testing: each run leaves some features out and
// stresses others).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "impl/bugs.hpp"
#include "impl/limits.hpp"
#include "impl/prng.hpp"
#include "impl/units.hpp"
#include "sim/core/network.hpp"

namespace lockstep::sim {

enum class KeyShape { uniform, zipf };

// Faults of the simulated world that are not engine bugs: wrappers around a
// correct engine that break what the simulated server promises.
enum class ServerFault {
  none,
  restart_forgets_tokens,  // a restarted server starts its tokens at 1 again
};

struct Workload {
  std::uint32_t clients = 100;
  std::uint32_t keys = 1000;
  KeyShape key_shape = KeyShape::zipf;
  double zipf_exponent = 0.9;
  std::uint32_t owners_per_client = 3;  // requests in flight per connection (pipelining)
  std::uint32_t owner_pool = 0;         // 0: owners private to a client; else names shared from a pool
  DurationMs lease_min_ms{50};
  DurationMs lease_max_ms{5000};
  DurationMs wait_min_ms{1};
  DurationMs wait_max_ms{3000};
  double try_lock_share = 0.3;      // wait = 0
  DurationMs think_mean_ms{1500};   // between an answer and an owner's next request
  double overstay_share = 0.05;     // releases after the lease ended
  double forget_share = 0.02;       // never releases
  double stale_release_share = 0.03;  // a release with a token no longer held
};

struct Faults {
  double drops_per_client_hour = 20;    // a connection breaks, the client reconnects
  double crashes_per_client_hour = 5;   // the client dies (holds are never released), restarts later
  double restarts_per_hour = 60;         // the server restarts and loses its state
  DurationMs reconnect_min_ms{10};
  DurationMs reconnect_max_ms{500};
  DurationMs server_down_min_ms{10};
  DurationMs server_down_max_ms{2000};
};

struct SimParams {
  std::uint64_t seed = 1;
  Workload workload;
  LatencyModel latency{DurationMs{0}, DurationMs{20}, LatencyShape::long_tail};
  Faults faults;
  Limits limits;
  std::uint64_t token_block = 64;  // small, so that the mark moves (and is persisted) often
  DurationMs duration_ms{60'000};  // requests are sent in [0, duration); then the drain
  InjectedBug bug = InjectedBug::none;
  ServerFault server_fault = ServerFault::none;
};

// The defaults for `seed`, with a moderate server limit set.
SimParams default_params(std::uint64_t seed);
// Every parameter drawn from `seed`.
SimParams swarm_params(std::uint64_t seed);

// How long the drain runs after the workload stops: long enough for every
// wait and lease to end and for one more sweep to run.
DurationMs drain_ms(const SimParams& params);

// A one-line description, for failure reports and trace headers.
std::string describe(const SimParams& params);

// A fault that a name on the command line chooses, beside the engine's bugs;
// its catalogue entry says the same as an engine bug's (impl/bugs.hpp): its
// story, and what the clients'-side protocol checker says when it sees it.
struct ServerFaultDescription {
  ServerFault fault;
  std::string_view name;
  std::string_view story;
  std::string_view symptom;
};
std::span<const ServerFaultDescription> server_fault_catalogue();
std::optional<ServerFault> server_fault_from_name(const std::string& name);
std::string server_fault_name(ServerFault fault);

// Picks keys by index, uniformly or with a Zipf law (key 0 hottest).
class KeyChooser {
 public:
  KeyChooser(std::uint32_t keys, KeyShape shape, double exponent);
  std::uint32_t pick(Prng& prng) const;

 private:
  std::uint32_t keys_;
  std::vector<double> cumulative_;  // empty when uniform
};

}  // namespace lockstep::sim
