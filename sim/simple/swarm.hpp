// `lockstep sim` in simple mode over a range of seeds: each seed's run with
// the outputs asked for (trace, timeline, history: one seed), the first
// failing seed shrunk to a conformance vector, all through the swarm runner
// (sim/core/swarm.hpp). The command line only parses options into these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/swarm.hpp"

namespace lockstep::sim {

struct SimpleSwarmOptions {
  bool swarm = false;  // draw the parameters from each seed
  std::optional<std::uint32_t> clients, keys;
  std::optional<std::int64_t> duration_ms;
  std::string bug = "none";  // an engine bug or a server fault (sim/simple/params.hpp), checked by the caller
  bool no_model = false;
  std::string shrink_dir = ".";
  // One seed only (the caller checks): files to write.
  std::string trace, timeline, history;
  // Run on past the first violation (a trace that TLC will judge).
  bool run_to_end = false;
};

SwarmOutcome run_simple_swarm(const SimpleSwarmOptions& options, const SwarmConfig& config);

// The names --inject-bug takes in simple mode: none, the engine's bugs and
// the simulator's server faults.
std::vector<std::string> simple_bug_names();

// The command that reproduces one seed of these options.
std::string simple_reproduce_command(const SimpleSwarmOptions& options, std::uint64_t seed);

}  // namespace lockstep::sim
