// `lockstep fuzz --mode cluster`: black-box fuzzing of a lock service that
// runs as a cluster, in real time. Clients of live/cluster_workload.hpp
// (each a client::ClusterClient: a session per client, `E not-leader`
// followed, a lost or silent attempt sent again elsewhere with the same
// session) drive the nodes given (`targets`) or nodes started from a
// command template (live/lock_cluster.hpp), with the etcd members they rely
// on started too; a nemesis (live/nemesis.hpp) kills, pauses and restarts
// what was started, and cuts or slows its links through relays
// (live/fault_proxy.hpp) when its faults include link faults. Everything the clients did on their connections, and
// every nemesis step, is recorded on one monotonic clock as a history read
// as a cluster's (`"mode":"cluster"`, the clock allowance, the maximum
// lateness), which check then checks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "client/cluster_client.hpp"
#include "impl/limits.hpp"
#include "live/nemesis.hpp"
#include "live/unavailability.hpp"
#include "live/resource_watch.hpp"
#include "check/history.hpp"

namespace lockstep::live {

struct ClusterFuzzOptions {
  std::vector<client::NodeAddress> targets;  // running nodes, or:
  std::string node_command;                  // a template (LockCluster::Options::node_command)
  int nodes = 3;
  int etcd_members = 0;                      // started for the nodes; {etcd} names them
  Limits limits;                             // the target's, for the checker and the template
  std::uint32_t clients = 16;
  std::uint32_t keys = 8;
  double duration_s = 10;
  std::uint64_t seed = 1;
  std::int64_t tolerance_ms = 50;
  std::int64_t clock_allowance_ms = 10;
  std::int64_t max_lateness_ms = -1;         // -1: lateness only reported
  std::int64_t lease_min_ms = 50, lease_max_ms = 2'000;
  std::int64_t wait_min_ms = 0, wait_max_ms = 1'500;
  std::vector<NemesisFault> nemesis;         // empty: none (needs node_command)
  double nemesis_every_s = 5;
  bool nemesis_etcd = false;                 // act on the etcd members too
  std::int64_t nemesis_slow_ms = 200;        // slow-etcd's delay, each way
  // Every fault on a node aims at the leader of the moment; a partition-node
  // then waits (two seconds at most) until the leader holds keys with
  // waiters, the moment a node that kept answering would hurt most.
  bool nemesis_at_leader = false;
  // Wrong clocks (live/node_clocks.hpp), for started nodes: each node's
  // clock error within ±clock_allowance_ms/2 (S, the allowance being 2·S),
  // or with clock_beyond_bound ten times that, when a correct cluster may
  // break lease safety. clock-jump in `nemesis` starts the nodes so too.
  bool skew_clocks = false;
  bool clock_beyond_bound = false;
  std::chrono::milliseconds start_patience{30'000};  // for a started cluster to lead
};

struct ClusterFuzzRun {
  history::History history;
  std::string error;  // why the run could not be made (then history is partial)
  client::ClusterClient::Stats clients;
  std::uint64_t nemesis_steps = 0;
  std::uint64_t unexpected_lines = 0;  // lines that answered no request of their client
  std::int64_t tester_stall_us = 0;    // the longest the clients ran late
  std::int64_t nemesis_slowest_us = 0;  // the longest one nemesis step took (a restart waits for its port)
  std::vector<std::string> node_commands;  // what the started nodes run
  std::vector<std::string> clocks;         // each node's clock, when they were made wrong
  // Faults the nemesis opened, by name (`kill`, `pause` ...), on nodes and
  // on etcd members.
  std::map<std::string, std::uint64_t> faults_on_nodes, faults_on_etcd;
  std::vector<NemesisFaultAt> faults;  // every fault opened, when and of which kind
  // What the processes cost (live/resource_watch.hpp): the nodes and etcd
  // members started, and the fuzzer.
  std::vector<ProcessFigures> processes;
  ProcessFigures tester;
};

ClusterFuzzRun run_cluster_fuzz(const ClusterFuzzOptions& options);

}  // namespace lockstep::live
