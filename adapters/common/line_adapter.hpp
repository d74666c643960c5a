// The server every adapter runs (adapters/): a TCP server that speaks
// lockstep's line protocol (docs/protocol.md: `A` and `R`, the session
// fields of cluster nodes, `E` for malformed lines and limits) and carries
// out each request with a lock service's own operations (lock_service.hpp).
// It adds nothing the service does not do; docs/testing-other-lock-services.md
// says what lockstep then reports, and why. A driver: sockets, threads and
// clocks.
//
// One thread runs an epoll loop over the listener, the clients and a queue
// of the workers' events; every request that is parsed gets a worker thread
// of its own (bounded by --max-in-flight), which blocks on the service and
// posts `placed` (it has its place in the service) and `finished` (its
// answer). A connection's next request goes to the service only once its
// previous one is placed, so one connection's requests take effect in the
// order sent; a waiting acquire does not hold the next one up.
//
// Sessions (docs/protocol.md, "Cluster nodes on the wire") are kept by the
// loop in the cluster node's own table (impl/cluster/sessions.hpp): a retry
// of a (client, seq) already taken hears its outcome (a waiter dropped with
// its connection: `T`), or, while it still waits, its answer goes to the
// connection the retry came on; a seq below the window is `E stale
// request`. They live in this process: a second adapter in front of the
// same service would not know them.
//
// A connection that closes takes its waiting acquires out of the service's
// queue (simple mode point 10); keys it holds stay held until released or
// until the service ends their lease. SIGTERM or SIGINT stops listening,
// takes every waiting acquire out, and exits 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "adapters/common/lock_service.hpp"
#include "impl/cluster/sessions.hpp"
#include "impl/limits.hpp"

namespace lockstep::adapters {

struct LineAdapterConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0: a free port, named in the start-up line
  // max_lease_ms, max_wait_ms and max_line_bytes bound the requests (`E`
  // past them); max_waiters_per_key and max_waiters the acquires that wait
  // in the service (`B` past them). max_keys and sweep_ms have no meaning
  // here: the service has its own bound on keys, or none, and ends leases
  // by itself.
  Limits limits = [] {
    Limits l;
    l.max_waiters_per_key = 256;
    l.max_waiters = 512;
    return l;
  }();
  cluster::SessionLimits sessions;
  std::uint64_t max_in_flight = 1'024;
  std::uint64_t max_connections = 1'024;
  std::uint64_t max_output_bytes = 1 << 20;
  std::uint64_t lines_per_turn = 64;
  bool quiet = false;
};

// Why the configuration cannot run, or nothing.
std::optional<std::string> validate(const LineAdapterConfig& config);

// Runs until SIGTERM or SIGINT; returns the exit code: 0 after a signal, 2
// when it cannot start (bad configuration, port in use, a service that
// does not answer). `program` names the adapter in its log lines.
int run_line_adapter(std::string_view program, const LineAdapterConfig& config, LockService& service);

}  // namespace lockstep::adapters
