// One simulated run of simple mode: clients, a virtual network and one
// server node, driven by one event loop from one seed, judged after every
// event. The run stops at the first violation (the point of a seed is to
// reproduce it), or after the workload and the drain phase.
//
// Phases: [0, duration) the clients send requests and faults strike; then
// the drain: no new requests and no faults, time runs on until every wait
// and lease has ended and a sweep has run; then the final checks: every
// request answered (unless its connection closed), no key left registered.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "impl/counters.hpp"
#include "impl/engine.hpp"
#include "sim/core/violations.hpp"
#include "sim/simple/client_edge.hpp"
#include "sim/simple/observer.hpp"
#include "sim/simple/params.hpp"

namespace lockstep::sim {

// One input the server handled, as the shrinker replays it.
struct InputRecord {
  enum class Kind { line, close, restart };
  Kind kind = Kind::line;
  TimeMs at;
  ConnectionId connection;
  std::string line;
  RequestId request = 0;     // the request the line carries
  RequestId release_of = 0;  // a release: the acquire whose grant gave its token
};

struct SimStats {
  std::uint64_t events = 0;
  std::uint64_t requests_sent = 0;
  std::uint64_t responses_received = 0;
  std::uint64_t connections = 0;
  std::uint64_t drops = 0;
  std::uint64_t crashes = 0;
  std::uint64_t restarts = 0;
  std::uint64_t lost_messages = 0;
  std::uint64_t server_steps = 0;
  EngineCounters engine;  // summed over the server's incarnations
  TimeMs simulated_until;
};

// The simulated world's counters beside the engine's, each once with its
// summary label (impl/counters.hpp).
inline constexpr std::array<Counter<SimStats>, 8> sim_counters{{
    {"requests sent", &SimStats::requests_sent},
    {"responses received", &SimStats::responses_received},
    {"connections", &SimStats::connections},
    {"connection drops", &SimStats::drops},
    {"client crashes", &SimStats::crashes},
    {"restarts", &SimStats::restarts},
    {"messages lost", &SimStats::lost_messages},
    {"server steps", &SimStats::server_steps},
}};
// events is the runner's own row; the engine's counters have their table.
static_assert(lists_every_counter(sim_counters, sizeof(std::uint64_t) + sizeof(EngineCounters) + sizeof(TimeMs)),
              "a counter of SimStats is missing from sim_counters");

struct RunOptions {
  bool compare_with_model = true;
  bool check_protocol = true;
  bool record_inputs = false;
  // Stop at the first violation (a seed's point); the shrinker's recording
  // run goes on, to find a later symptom that a vector can show.
  bool stop_at_first_violation = true;
  std::vector<Observer*> observers;
  // Called every `progress_events` events with the current instant.
  std::function<void(TimeMs)> progress;
  std::uint64_t progress_events = 1 << 20;
};

struct RunResult {
  SimParams params;
  SimStats stats;
  std::uint64_t violation_count = 0;
  std::vector<Violation> violations;  // the first few
  std::vector<std::pair<std::string, std::uint64_t>> violations_by_checker;  // all of them, counted
  std::uint64_t event_hash = 0;       // of every event and every response, in order
  std::vector<InputRecord> inputs;    // with record_inputs
};

RunResult run_simulation(const SimParams& params, const RunOptions& options);

}  // namespace lockstep::sim
