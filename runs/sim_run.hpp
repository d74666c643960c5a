// `lockstep sim`, once its options are parsed: the seeds to run (a swarm
// over 1..1000, or 1..100 in the Raft modes, when none is named), the one
// swarm runner (sim/core/swarm.hpp) of the mode chosen (sim/simple/swarm.hpp,
// sim/cluster/swarm.hpp) given the wall clock and whether the terminal shows
// progress, and with --validate-trace TLC's verdict on the seed's trace
// (runs/tlc/). The simulator itself reads neither clock nor terminal. With a
// shard, only its part of the seeds runs; --summary-json writes what the
// run counted for `lockstep merge` (runs/shard_summary.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "runs/shard.hpp"
#include "sim/cluster/swarm.hpp"
#include "sim/simple/swarm.hpp"

namespace lockstep::live {

struct SimRequest {
  std::optional<std::uint64_t> seed;
  std::string seeds;  // A..B as given (for the refusals), read into seed_range
  std::optional<std::pair<std::uint64_t, std::uint64_t>> seed_range;
  std::string mode = "lock";
  bool check_determinism = false, validate_trace = false;
  sim::SimpleSwarmOptions simple;
  sim::RaftSwarmOptions raft;  // its swarm, clients, keys, duration and bug come from `simple`
  std::optional<Shard> shard;  // of the range (the caller checks it has enough seeds)
  std::string summary_json;    // where to write the summary; empty: nowhere
};

// The seeds a request runs when it names none.
SeedRange default_sim_seeds(const std::string& mode);

// Returns the exit code: 0 no violation (and with --validate-trace a valid
// trace), 1 a violation or an invalid trace, 2 TLC missing or the trace
// unreadable.
int run_sim(SimRequest request);

}  // namespace lockstep::live
