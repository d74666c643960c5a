// `lockstep sim --mode raft` and `--mode cluster`: the options sim_command.cpp
// parses for them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace lockstep::cli {

struct RaftSimOptions {
  std::uint32_t nodes = 3;
  std::uint64_t first_seed = 1, last_seed = 1;
  bool swarm = false;
  bool check_determinism = false;
  std::optional<std::int64_t> duration_ms;
  std::string bug = "none";
  // --mode cluster: the lock service on the cluster instead of the register.
  bool cluster = false;
  std::optional<std::uint32_t> clients, keys;
  bool skew_beyond_bound = false;
  std::string timeline;
  std::string history;  // --mode cluster, one seed: the clients' view as a history
  // --mode cluster, one seed: write its trace (sim/cluster_trace.hpp), and
  // have TLC check it against spec/TraceLockCluster.tla.
  std::string trace;
  bool validate_trace = false;
};

int run_raft_sim(const RaftSimOptions& options);

}  // namespace lockstep::cli
