// How much of what the simulator catches a black-box tester catches too:
// each seed of a swarm range is run (clean, and with each catalogued bug),
// the clients' view of the run is recorded as a history (sim/history/recorder.hpp)
// and judged by the black-box checker (check). A bug seed the
// simulator reports but the checker passes is a miss; a clean seed the
// checker does not pass is a false alarm (or undecided, when its search
// budget ran out). Deterministic: the same range gives the same table.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "impl/bugs.hpp"
#include "impl/cluster/bugs.hpp"
#include "sim/simple/params.hpp"

namespace lockstep::sim {

// A bug under test: in simple mode an engine bug, or a server fault of the
// simulator's own; in cluster mode a bug of the cluster catalogue
// (impl/cluster/bugs.hpp).
struct SimBug {
  std::string name;  // "none" for the clean runs
  InjectedBug bug = InjectedBug::none;
  ServerFault fault = ServerFault::none;
  bool cluster = false;
  cluster::ClusterBug cluster_bug = cluster::ClusterBug::none;
};

// Every catalogued engine bug and server fault, in catalogue order, after
// the clean runs ("none").
std::vector<SimBug> simple_mode_bugs();
// The cluster catalogue, after the clean runs ("none").
std::vector<SimBug> cluster_mode_bugs();

// Why a real-time tester cannot see a bug, or nothing when it can.
std::optional<std::string> blind_in_real_time(const SimBug& bug);

struct MissRateOptions {
  std::uint64_t first_seed = 1, last_seed = 20;
  std::uint32_t nodes = 3;  // cluster mode
  std::vector<SimBug> bugs;               // each is run on every seed
  std::uint64_t budget_states = 3'000'000;  // for each history's check
};

// A seed the checker did not report although the simulator did, and what
// the simulator saw there: only its checkers inside the server (the model,
// the protocol, durability: the server's state and order, which no client
// observes), or its clients'-side checker too (then the clients' view shows
// the bug, and the black-box checker should have).
struct MissedSeed {
  std::uint64_t seed = 0;
  bool undecided = false;        // the checker's budget ran out (else it passed the history)
  // The simulator's clients'-side checker reported it (cluster mode: its
  // linearizability checker, which judges every answer a client received).
  bool clients_saw_it = false;
  std::string simulator_checkers;  // which of the simulator's checkers reported, with counts
  // Cluster mode, a seed passed though its clients saw it: why that is no
  // miss, when their view needs lateness and the run really was that late,
  // or needs the clock allowance the run's clock bound gives (DESIGN.md of
  // check, "Miss rate (cluster mode)"); else empty.
  std::string within_bounds;
};

struct BugTally {
  SimBug bug;
  std::uint64_t seeds = 0;
  std::uint64_t simulator_caught = 0;  // seeds the simulator reported
  std::uint64_t clients_caught = 0;    // of those, seeds its clients'-side checker reported
  std::uint64_t checker_caught = 0;    // of those, seeds the black-box checker reported too
  std::uint64_t missed = 0;            // of those, seeds the checker passed
  std::uint64_t undecided = 0;         // of those (or, clean, of all), seeds the checker could not decide
  std::uint64_t false_alarms = 0;      // clean seeds the checker reported
  std::uint64_t checker_only = 0;      // seeds the checker reported and the simulator did not
  std::vector<MissedSeed> missed_seeds;  // missed or undecided bug seeds
  std::vector<std::uint64_t> undecided_seeds, false_alarm_seeds;  // clean seeds
};

// Called after each seed, for progress.
using MissRateProgress = std::function<void(const SimBug& bug, std::uint64_t seed)>;

std::vector<BugTally> measure_miss_rate(const MissRateOptions& options, const MissRateProgress& progress = {});

}  // namespace lockstep::sim
