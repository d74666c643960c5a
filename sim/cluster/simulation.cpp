// The lock workload on the Raft harness. Each simulated node is one
// cluster::Node (impl/cluster/node.hpp), which does everything a node does:
// the workload only drives it over our Raft, with the term as its epoch:
// client lines in, committed entries in (through NodeReplica), leadership
// and the leader's address in, ticks on the node's own clock; proposals out
// to Raft while their epoch is the node's current term (any other is
// reported failed to the node, as a fenced write would be), responses and
// closes out to the clients, snapshots out to Raft's compaction. The rest
// is clients, faults and checking: clients send one request at a time
// (with their session: `A ... <client> <seq>`), follow `E not-leader`
// redirects, and retry with backoff on a new connection after a timeout or
// when the node closes the connection (it could not tell whether the
// request would commit), so a retry is applied at most once. Nodes are not
// told that a connection was given up, so no Close is proposed: a waiter
// stays queued until answered or moved by its retry. Close is covered by
// the node's unit tests and the cluster vectors, not here: the checker
// would first need to expect the T that a dropped waiter's retry gets.
//
// This file holds the run's parameters and runs it. The workload is
// LockWorkload (workload.hpp), in parts: workload.cpp what the harness
// calls, nodes.cpp the nodes' side, clients.cpp the clients'.
#include "sim/cluster/simulation.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sim/cluster/workload.hpp"

namespace lockstep::sim {

ClusterSimParams cluster_default_params(std::uint64_t seed, std::uint32_t nodes) {
  ClusterSimParams p;
  p.raft = raft_default_params(seed, nodes);
  p.raft.duration_ms = DurationMs{10'000};
  p.limits.max_keys = 64;
  p.limits.max_waiters_per_key = 8;
  p.limits.max_waiters = 128;
  p.limits.max_lease_ms = DurationMs{60'000};
  p.limits.max_wait_ms = DurationMs{60'000};
  return p;
}

ClusterSimParams cluster_swarm_params(std::uint64_t seed, std::uint32_t nodes) {
  ClusterSimParams p = cluster_default_params(seed, nodes);
  p.raft = raft_swarm_params(seed, nodes);
  p.raft.duration_ms = DurationMs{10'000};
  Prng prng(seed ^ 0x434c555354455253ULL);  // "CLUSTERS": apart from the run's own streams
  p.keys = static_cast<std::uint32_t>(prng.between(1, 40));
  p.lease_min_ms = DurationMs{prng.between(10, 200)};
  p.lease_max_ms = DurationMs{p.lease_min_ms.value + prng.between(50, 3'000)};
  p.wait_max_ms = DurationMs{prng.between(0, 2'500)};
  p.try_lock = prng.unit() * 0.3;
  p.let_expire = prng.unit() * 0.6;
  p.think_max_ms = DurationMs{prng.between(1, 500)};
  p.hold_max_ms = DurationMs{prng.between(1, 2'000)};
  p.client_latency_max_ms = DurationMs{p.client_latency_min_ms.value + prng.between(0, 30)};
  p.response_loss = prng.chance(0.3) ? 0 : prng.unit() * 0.05;
  p.rpc_timeout_ms = DurationMs{prng.between(150, 800)};
  p.limits.max_keys = static_cast<std::uint64_t>(prng.between(1, 64));
  p.limits.max_waiters_per_key = static_cast<std::uint64_t>(prng.between(1, 12));
  p.limits.max_waiters = static_cast<std::uint64_t>(prng.between(1, 128));
  p.skew_bound_ms = DurationMs{prng.between(5, 200)};
  // Drawn last, so that the draws above are those of earlier versions.
  p.reuse_sequence = prng.chance(0.5) ? 0 : prng.unit() * 0.05;
  p.give_up = prng.chance(0.5) ? 0 : prng.unit() * 0.15;
  p.waiter_grace_ms = DurationMs{prng.between(0, 3'000)};
  return p;
}

std::string describe(const ClusterSimParams& p) {
  return fmt::format(
      "{} | clients={} keys={} lease={}..{}ms wait<={}ms try={:.2f} expire={:.2f} think<={}ms hold<={}ms "
      "client-latency={}..{}ms response-loss={:.3f} rpc-timeout={}ms reuse={:.3f} give-up={:.2f} grace={}ms "
      "skew-bound={}ms{} limits={}/{}/{} bug={}",
      describe(p.raft), p.clients, p.keys, p.lease_min_ms.value, p.lease_max_ms.value, p.wait_max_ms.value, p.try_lock,
      p.let_expire, p.think_max_ms.value, p.hold_max_ms.value, p.client_latency_min_ms.value,
      p.client_latency_max_ms.value, p.response_loss, p.rpc_timeout_ms.value, p.reuse_sequence, p.give_up,
      p.waiter_grace_ms.value, p.skew_bound_ms.value,
      p.skew_beyond_bound ? " (beyond)" : "", p.limits.max_keys, p.limits.max_waiters_per_key, p.limits.max_waiters,
      cluster::cluster_bug_name(p.bug));
}

DurationMs cluster_liveness_ms(const ClusterSimParams& p) {
  // Every client's last request answered: a wait, retries with backoff
  // after a leader appears, and every lease that was running ended.
  const auto needed = p.raft.leader_bound_ms.value + p.wait_max_ms.value + p.lease_max_ms.value +
                      p.waiter_grace_ms.value + p.expire_bound_ms.value +
                      4 * (8 * p.rpc_timeout_ms.value + p.backoff_max_ms.value);
  return DurationMs{std::max(raft_liveness_ms(p.raft).value, needed)};
}


ClusterRunResult run_cluster_simulation(const ClusterSimParams& params, ClusterTimelineRecorder* timeline,
                                        ClusterTraceWriter* trace) {
  ClusterRunOptions options;
  options.timeline = timeline;
  options.trace = trace;
  return run_cluster_simulation(params, options);
}

ClusterRunResult run_cluster_simulation(const ClusterSimParams& params, const ClusterRunOptions& options) {
  ClusterTimelineRecorder* timeline = options.timeline;
  ClusterSimParams p = params;
  p.raft.stop_at_first_violation = p.raft.stop_at_first_violation && options.stop_at_first_violation;
  // The session table keeps every client, as the checker, which knows no
  // eviction, assumes: a client evicted while it retries would apply twice.
  p.sessions.clients_max = std::max<std::uint64_t>(p.sessions.clients_max, p.clients);
  // Clock errors in [0, 2S]: offsets in [S/2, 3S/2], drift and jumps each
  // within S/4 over the run. Beyond the bound: offsets in [0, 20S], so two
  // clocks may differ by ten times what the checker allows.
  const auto s = p.skew_bound_ms.value;
  const auto total_ms = p.raft.duration_ms.value + cluster_liveness_ms(p).value;
  p.raft.clock_offset_min_ms = DurationMs{p.skew_beyond_bound ? 0 : s / 2};
  p.raft.clock_offset_max_ms = DurationMs{p.skew_beyond_bound ? 20 * s : 3 * s / 2};
  p.raft.clock_drift_max_ppm = s / 4 * 1'000'000 / total_ms;
  p.raft.clock_jump_total_max_ms = DurationMs{s / 4};
  p.raft.clock_jump_max_ms = DurationMs{std::max<std::int64_t>(1, s / 8)};
  LockWorkload workload(p, timeline, options.trace, options.clients);
  RaftHarness<LockWorkload> harness(p.raft, workload);
  ClusterRunResult result;
  result.raft = harness.run();
  result.lock = workload.lock_stats(harness);
  const auto& lateness = workload.lateness(result.raft.stats.simulated_until);
  result.lateness_ms = lateness.worst_ms();
  result.lateness_what = lateness.worst_what();
  if (timeline != nullptr) timeline->finish(result.raft.stats.simulated_until);
  return result;
}

}  // namespace lockstep::sim
