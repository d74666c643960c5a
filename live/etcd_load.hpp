// etcd's own rate of lock transactions, through the client cluster mode uses
// (drivers/etcd/client.hpp): `concurrency` callers, each with its own
// connection, in a closed loop of try-lock then release on keys drawn
// uniformly, one transaction per operation: the try-lock creates the key if
// it is absent (a Txn comparing its create revision with 0), the release
// deletes it if it still holds the caller's value (a Txn comparing the
// value). The floor `bench cluster` compares the cluster with: what etcd does
// when each lock operation is its own etcd transaction.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "live/load.hpp"

namespace lockstep::live {

struct EtcdLoadConfig {
  std::string endpoints;
  std::string prefix = "bench/etcd/";
  int concurrency = 50;
  int keys = 10'000;
  std::chrono::milliseconds duration{5'000};
  std::chrono::milliseconds call_timeout{5'000};
  std::uint64_t seed = 1;
};

// operations: transactions; grants: try-locks that took their key.
LoadResult run_etcd_load(const EtcdLoadConfig& config);

}  // namespace lockstep::live
