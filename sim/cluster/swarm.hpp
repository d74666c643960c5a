// `lockstep sim --mode raft` and `--mode cluster` over a range of seeds:
// the Raft cluster simulator with the append-only register (raft) or the
// lock service's replicated table and its clients (cluster) on it, each
// seed with the outputs asked for (timeline, trace: one seed), through the
// swarm runner (sim/core/swarm.hpp). The command line only parses options.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/swarm.hpp"

namespace lockstep::sim {

struct RaftSwarmOptions {
  std::uint32_t nodes = 3;
  bool swarm = false;
  std::optional<std::int64_t> duration_ms;
  std::string bug = "none";  // a Raft bug, or with `cluster` a cluster bug (checked by the caller)
  // The lock service on the cluster instead of the register.
  bool cluster = false;
  std::optional<std::uint32_t> clients, keys;
  bool skew_beyond_bound = false;
  // --mode cluster, one seed only (the caller checks): files to write; a
  // traced run, or one whose clients' view is recorded as a history, goes
  // on past the first violation.
  std::string timeline, trace, history;
};

// The names --inject-bug takes: none and the Raft bugs, and with `cluster`
// the cluster bugs too.
std::vector<std::string> raft_swarm_bug_names(bool cluster);

SwarmOutcome run_raft_swarm(const RaftSwarmOptions& options, const SwarmConfig& config);

}  // namespace lockstep::sim
