// `lockstep serve --cluster`: one node of a lock-service cluster whose log,
// election and snapshots are kept in etcd (drivers/etcd/log.hpp), around the
// sans-IO cluster node (impl/cluster/node.hpp). A driver: it owns the
// sockets, the clock and the etcd client; the node owns every decision.
//
// One thread and one epoll loop serve the clients and feed the node; the
// etcd driver's threads post what etcd says (committed entries, leader
// changes, failed proposals) to an event queue that the loop polls like a
// socket, so the node is only ever called from the loop. Per turn: etcd's
// events (in their order), then ticks, then at most `lines_per_turn` lines
// of each connection; after each call to the node its outputs are handled
// in the node's order: proposals to etcd, then lines and closes to clients,
// then a snapshot to store (only the leader stores one).
//
// The node's clock: with --test-clock, the node's own (it moves on `C`);
// otherwise the wall clock in milliseconds (so that every node's clock is
// within the skew bound S of true time, as NTP keeps it), never going back
// and never behind the latest instant the node applied (impl/cluster/
// DESIGN.md, "On etcd").
//
// Start-up: the node first joins its cluster (drivers/etcd/membership.hpp):
// the prefix must hold one (or --init creates it), the node id must be a
// member at the address advertised, and no live process may hold that id;
// then it reads the log from etcd (snapshot, then entries). Each refusal,
// and an etcd that cannot be read within --etcd-timeout-ms, is a one-line
// error and exit 2. Then it takes an incarnation (a revision no other node run ever
// got) that makes its connection ids unique over the cluster's life, and
// listens; with the test clock it listens only once it leads (it is meant as
// a one-node cluster for exact replay). SIGTERM or SIGINT resigns and exits
// 0; SIGUSR1 prints one status line (applied index, digest of the table,
// leadership) on stderr.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "impl/cluster/bugs.hpp"
#include "impl/cluster/sessions.hpp"
#include "impl/limits.hpp"

namespace lockstep {

struct ClusterServerConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 7878;
  // Where clients reach this node, for the redirects of the others
  // (`E not-leader <host>:<port>`); host:port.
  std::string advertise;
  std::string etcd_endpoints;
  std::string node_id;
  std::string prefix = "lockstep";
  // Create the cluster under the prefix if it holds none, with `members`
  // (`n1=host:port,...`; empty: this node alone). Without it, a prefix with
  // no cluster is refused.
  bool init = false;
  std::string members;
  std::int64_t leader_ttl_s = 5;
  std::int64_t etcd_timeout_ms = 5'000;
  Limits limits;
  cluster::SessionLimits sessions;
  // How long a waiter a leader change detached is kept for its client's
  // retry (docs/protocol.md, "Waiters and leader changes").
  std::int64_t waiter_grace_ms = 5'000;
  std::uint64_t in_flight_max = 65'536;
  std::uint64_t snapshot_every = 10'000;
  std::uint64_t max_connections = 1'024;
  std::uint64_t max_output_bytes = 1 << 20;
  std::uint64_t lines_per_turn = 64;
  bool test_clock = false;
  cluster::ClusterBug bug = cluster::ClusterBug::none;
  bool quiet = false;
};

// The reason a configuration cannot run, or nothing.
std::optional<std::string> validate(const ClusterServerConfig& config);

// Runs until SIGTERM or SIGINT; returns the exit code: 0 after a signal, 2
// when it cannot start (bad configuration, port in use, etcd unreachable)
// or the log in etcd cannot be read.
int run_cluster_server(const ClusterServerConfig& config);

}  // namespace lockstep
