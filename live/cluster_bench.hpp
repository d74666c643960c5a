// `lockstep bench cluster`: three etcd members and three cluster nodes on
// loopback, started here (live/lock_cluster), driven by the server
// benchmark's load generator (try-lock then release, unpipelined) through
// the leader; then, in the same run and on the same etcd, etcd's own rate of
// one lock transaction per operation through the same gRPC client at the same
// concurrency (live/etcd_load). Prints ops/s and p50/p99/p99.9 of both,
// how many commands one etcd write carried (group commit), `ratio: X`
// (lockstep ops/s ÷ etcd txn/s), and the bytes per held key of a node's lock
// table.
#pragma once

#include <cstdint>
#include <string>

namespace lockstep::live {

struct ClusterBenchOptions {
  std::string lockstep_binary;
  int connections = 50;
  int keys = 10'000;
  int seconds = 5;
  std::int64_t leader_ttl_s = 5;
  std::uint64_t table_keys = 100'000;  // for the bytes per held key
  std::uint64_t seed = 1;
};

int run_cluster_bench(const ClusterBenchOptions& options);

// Heap bytes per held key of a node's lock table with `keys` keys held.
double table_bytes_per_held_key(std::uint64_t keys);

}  // namespace lockstep::live
