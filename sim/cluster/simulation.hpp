// The cluster-mode simulator: the lock service's replicated table
// (impl/cluster) on 3 or 5 Raft nodes, under every fault of the Raft
// simulator (sim/raft/harness.hpp), driven by clients that find the leader
// through redirects, time out, and retry with backoff on a new connection.
// The Raft checkers and the lock checkers (sim/cluster/checker.hpp) run
// after every event; a liveness phase ends each run: every request answered
// and every lease and wait ended within expire_bound_ms on the leader's clock.
//
// Clocks: every node's clock reads global time plus an error that stays in
// [0, 2·skew_bound_ms] (offset, drift and jumps are drawn inside that), so
// two clocks differ by at most 2·S, and the lease-safety checker allows
// exactly the overlap that bound gives (spec/README.md, "Lease safety: the
// bound"). skew_beyond_bound draws clock offsets up to 20·S instead: the
// checker, which still assumes S, must then see violations.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "impl/cluster/bugs.hpp"
#include "impl/cluster/sessions.hpp"
#include "impl/counters.hpp"
#include "impl/limits.hpp"
#include "impl/units.hpp"
#include "sim/raft/simulation.hpp"

namespace lockstep::sim {

struct ClusterSimParams {
  RaftSimParams raft;  // seed, nodes, Raft faults, durations
  // workload
  std::uint32_t clients = 50;
  std::uint32_t keys = 20;
  DurationMs lease_min_ms{50};
  DurationMs lease_max_ms{2'000};
  DurationMs wait_max_ms{1'500};
  double try_lock = 0.15;       // an A with wait 0
  double let_expire = 0.3;      // a holder that never releases
  double stale_release = 0.05;  // R with an earlier grant's token
  double random_release = 0.02;  // R with a token nobody was given
  // A client that reuses the number of its last request for another one (a
  // program run twice with one client id): answered E, never the other's outcome.
  double reuse_sequence = 0.0;
  // A client waiting for a key (an acquire with a wait) whose connection
  // the node closed (the node stopped leading, or could not tell the
  // request's fate) that gives the request up instead of retrying: its
  // waiter must not be granted unseen (no-ghost-grant).
  double give_up = 0.0;
  DurationMs think_max_ms{300};
  DurationMs hold_max_ms{1'500};
  // clients and their network
  DurationMs client_latency_min_ms{1};
  DurationMs client_latency_max_ms{10};
  double response_loss = 0.01;     // a connection breaks and a response is lost with it
  DurationMs rpc_timeout_ms{400};  // beyond the request's wait
  DurationMs backoff_min_ms{10};
  DurationMs backoff_max_ms{1'000};
  // cluster
  DurationMs skew_bound_ms{100};  // S
  bool skew_beyond_bound = false;
  DurationMs expire_bound_ms{3'000};  // after the heal, a lease or wait ends within this of its instant
  // How long the leader keeps a waiter a leader change detached for its
  // client's retry (cluster::NodeConfig::waiter_grace_ms).
  DurationMs waiter_grace_ms{1'000};
  Limits limits;
  cluster::SessionLimits sessions;
  cluster::ClusterBug bug = cluster::ClusterBug::none;
};

ClusterSimParams cluster_default_params(std::uint64_t seed, std::uint32_t nodes);
// Every fault rate and workload shape drawn from the seed.
ClusterSimParams cluster_swarm_params(std::uint64_t seed, std::uint32_t nodes);
std::string describe(const ClusterSimParams& params);
// The liveness phase's length: long enough for every request to be answered
// and every lease to end after the heal, and for Raft's own catch-up.
DurationMs cluster_liveness_ms(const ClusterSimParams& params);

struct ClusterLockStats {
  std::uint64_t requests = 0;   // distinct requests (sessions)
  std::uint64_t attempts = 0;   // sends, retries included
  std::uint64_t retries = 0, redirects = 0;
  std::uint64_t granted = 0, timed_out = 0, busy = 0, released = 0, not_held = 0, errors = 0;
  std::uint64_t expires_proposed = 0, timeouts_proposed = 0;
  std::uint64_t expires_applied = 0;   // Expire entries that ended a grant (first application)
  std::uint64_t timeouts_applied = 0;  // Timeout entries that answered a waiter
  std::uint64_t snapshots = 0;
  std::uint64_t closed_unknown = 0;  // connections a node closed: a request's fate unknown
  std::uint64_t closed_waiting = 0;  // connections of waiters a node closed on stepping down
  std::uint64_t given_up = 0;        // requests whose client gave up when its connection was closed
  std::uint64_t reused = 0;          // requests that reused their client's last number (answered E)
};

// The lock service's counters in a cluster run, each once with its summary
// label (impl/counters.hpp).
inline constexpr std::array<Counter<ClusterLockStats>, 19> cluster_lock_counters{{
    {"lock requests", &ClusterLockStats::requests},
    {"attempts", &ClusterLockStats::attempts},
    {"retries", &ClusterLockStats::retries},
    {"redirects", &ClusterLockStats::redirects},
    {"granted (A)", &ClusterLockStats::granted},
    {"timed out (T)", &ClusterLockStats::timed_out},
    {"busy (B)", &ClusterLockStats::busy},
    {"released (R)", &ClusterLockStats::released},
    {"not held (N)", &ClusterLockStats::not_held},
    {"errors (E)", &ClusterLockStats::errors},
    {"Expires proposed", &ClusterLockStats::expires_proposed},
    {"Expires applied", &ClusterLockStats::expires_applied},
    {"Timeouts proposed", &ClusterLockStats::timeouts_proposed},
    {"Timeouts applied", &ClusterLockStats::timeouts_applied},
    {"lock snapshots", &ClusterLockStats::snapshots},
    {"closed: fate unknown", &ClusterLockStats::closed_unknown},
    {"closed: waiter's leader left", &ClusterLockStats::closed_waiting},
    {"given up by their client", &ClusterLockStats::given_up},
    {"sequence numbers reused", &ClusterLockStats::reused},
}};
static_assert(lists_every_counter(cluster_lock_counters), "a counter of ClusterLockStats is missing from cluster_lock_counters");

struct ClusterRunResult {
  RaftRunResult raft;  // params.raft, Raft figures, every violation
  ClusterLockStats lock;
  // How late the run's Expires and caused answers really were, in the
  // black-box checker's terms (sim/cluster/lateness.hpp), and what was
  // latest.
  std::int64_t lateness_ms = 0;
  std::string lateness_what;
};

class ClusterTimelineRecorder;
class ClusterTraceWriter;

// A client's connection to a node (each attempt of a request opens a new
// one), as the simulator knows it: the node knows it only by its id.
struct ClientConnection {
  raft::NodeId node = 0;
  std::uint32_t client = 0;  // 1..clients
  ConnectionId id;
};

// What the clients of a cluster run do on their connections (each attempt
// of a request is a new connection), for a recorder of their view
// (sim/history/recorder.hpp). Times are global (the reference the node
// clocks err from).
class ClusterClientObserver {
 public:
  virtual ~ClusterClientObserver() = default;
  virtual void sent(TimeMs at, ConnectionId connection, std::string_view line) = 0;  // on a new connection
  virtual void received(TimeMs at, ConnectionId connection, std::string_view line) = 0;
  virtual void closed_by_node(TimeMs at, ConnectionId connection) = 0;  // the node closed it
  virtual void given_up(TimeMs at, ConnectionId connection) = 0;  // the client stops reading it
};

struct ClusterRunOptions {
  ClusterTimelineRecorder* timeline = nullptr;  // sim/cluster/timeline.hpp
  ClusterTraceWriter* trace = nullptr;          // sim/cluster/trace.hpp
  ClusterClientObserver* clients = nullptr;
  // false: the run goes on past its first violation (the clients' view of
  // a bug includes what follows it), whatever params.raft says.
  bool stop_at_first_violation = true;
};

// With a `timeline`, the run is recorded into it (sim/cluster/timeline.hpp),
// with a `trace` written to it (sim/cluster/trace.hpp); both only watch, so
// the run is the same.
ClusterRunResult run_cluster_simulation(const ClusterSimParams& params, ClusterTimelineRecorder* timeline = nullptr,
                                        ClusterTraceWriter* trace = nullptr);
ClusterRunResult run_cluster_simulation(const ClusterSimParams& params, const ClusterRunOptions& options);

}  // namespace lockstep::sim
