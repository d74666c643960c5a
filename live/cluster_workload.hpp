// Clients of a lock-service cluster in real time, for the fault tests (and
// whatever else drives a live cluster): each client is a ClusterClient with
// its own session that acquires a few contended keys, waits or not, holds,
// and releases (early, just before its lease ends, or never, letting it
// expire), one request at a time; every request is recorded as a
// ClusterOperation for model/cluster_client_checker. Single-threaded: run_for
// drives every client for a while and may be called again after the caller
// did something to the cluster (killed a node, paused one); drain stops new
// requests and waits for the pending ones to be answered or given up.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/cluster_client.hpp"
#include "impl/prng.hpp"
#include "model/cluster_client_checker.hpp"

namespace lockstep::live {

struct ClusterWorkloadOptions {
  int clients = 8;
  int keys = 4;
  std::int64_t lease_min_ms = 200, lease_max_ms = 800;
  std::int64_t wait_min_ms = 0, wait_max_ms = 1'500;
  double try_lock = 0.3;       // share of acquires with wait 0 (when wait_min_ms is 0)
  double let_expire = 0.15;    // share of grants never released
  // Share of grants released just before the lease ends as the cluster
  // counts it: at most release_late_max_ms before the grant's arrival plus
  // the lease (the grant was applied a little before it arrived), so that
  // the release and the leader's Expire are in flight together.
  double release_late = 0.3;
  std::int64_t release_late_max_ms = 3;
  std::int64_t think_max_ms = 50;
  std::uint64_t seed = 1;
  std::chrono::milliseconds answer_timeout{1'500};
  // How long a request is tried before it is indeterminate
  // (client::ClusterClient::Options::patience).
  std::chrono::milliseconds patience{30'000};
  // Optional: what each client (by index) does on its connections, for a
  // recorder of the run as a history (live/cluster_fuzz.hpp).
  std::function<client::ClusterClient::WireObserver(int client)> wire;
};

// Fills in the record of a request from its result: when it was first sent,
// its attempts and, if it was answered, when and what; in microseconds
// since `epoch`.
void record_result(ClusterOperation& op, const client::ClusterClient::Result& result,
                   std::chrono::steady_clock::time_point epoch);

class ClusterWorkload {
 public:
  ClusterWorkload(std::vector<client::NodeAddress> nodes, ClusterWorkloadOptions options);
  ~ClusterWorkload();

  // Drives the clients for `duration`, issuing new requests.
  void run_for(std::chrono::milliseconds duration);
  // No new requests; returns once every request is answered or
  // indeterminate, or after `patience` (false then).
  bool drain(std::chrono::milliseconds patience);

  const std::vector<ClusterOperation>& operations() const { return operations_; }
  std::vector<std::string> unexpected() const;
  // Grants answered at or after `since` (microseconds since the start).
  std::uint64_t grants_since(std::int64_t since_us) const;
  std::int64_t now_us() const;
  client::ClusterClient::Stats stats() const;
  // The longest the workload itself ran later than it asked to (a poll that
  // returned past its timeout): the machine did not schedule it, and may
  // not have scheduled the nodes either.
  std::int64_t stall_us() const { return stall_us_; }

 private:
  struct Client;
  void act(Client& client);
  void poll_once(std::chrono::milliseconds timeout);

  ClusterWorkloadOptions options_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<ClusterOperation> operations_;
  std::chrono::steady_clock::time_point epoch_;
  SplitMix64 prng_;
  bool stopping_ = false;
  std::int64_t stall_us_ = 0;
};

}  // namespace lockstep::live
