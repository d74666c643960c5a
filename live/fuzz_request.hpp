// What `lockstep fuzz` was asked, as its command line gave it: the options
// of both modes (each range already checked when parsed), which ones were
// given, and the outputs of the verdict. live/fuzz_run.hpp and
// live/cluster_fuzz_run.hpp check the options against each other and the
// mode, settle what was not given, and run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "live/cluster_fuzz.hpp"
#include "live/fuzz.hpp"
#include "live/history_verdict.hpp"

namespace lockstep::live {

// The options only `--mode cluster` takes.
struct ClusterFuzzRequest {
  ClusterFuzzOptions fuzz;  // filled by run_cluster_fuzz_request
  std::string node_command;
  int nodes = 3;
  int etcd_members = 0;
  std::string nemesis;  // kill,pause,restart,partition-node,partition-clients,slow-etcd or a part, or all
  double nemesis_every_s = 5;
  bool nemesis_etcd = false;
  std::int64_t nemesis_slow_ms = 200;
  bool nemesis_at_leader = false;
  std::int64_t clock_allowance_ms = 10;
  bool skew_clocks = false;         // started nodes' clocks wrong, within the allowance
  bool clock_beyond_bound = false;  // ... or ten times beyond it
  std::int64_t max_lateness_ms = -1;
};

struct FuzzRequest {
  FuzzOptions fuzz;  // simple mode's workload; the shared options are read from it in both modes
  std::string mode = "simple";
  ClusterFuzzRequest cluster;
  std::vector<std::string> given;  // every option given, by its flag
  std::string target;              // HOST:PORT, or in cluster mode HOST:PORT,...
  std::string lease_range, wait_range;  // A..B, or empty
  // Which limits were given on the command line (the others take the
  // defaults of the mode: the protocol's for --target, the edge-seeking ones
  // for --exec).
  std::vector<std::string> limits_given;
  VerdictOutputs outputs;

  bool was_given(std::string_view flag) const { return std::find(given.begin(), given.end(), flag) != given.end(); }
  bool limit_given(std::string_view name) const {
    return std::find(limits_given.begin(), limits_given.end(), name) != limits_given.end();
  }
};

}  // namespace lockstep::live
