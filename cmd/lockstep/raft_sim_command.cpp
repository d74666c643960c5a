// `lockstep sim --mode raft` and `--mode cluster`: the Raft cluster
// simulator over a range of seeds, with the append-only register (raft) or
// the lock service's replicated table and its clients (cluster) on it.
// Prints a summary that ends with `violations: N` and `speed: X` (simulated
// seconds per wall second, as the lock simulator's), and exits 1 on any
// violation, printing each failing seed with the command that reproduces it.
// `--trace` writes one cluster seed's trace, which `--validate-trace` has TLC
// check against spec/TraceLockCluster.tla.
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cmd/lockstep/raft_sim_command.hpp"
#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/validate_trace.hpp"
#include "impl/cluster/bugs.hpp"
#include "sim/cluster_sim.hpp"
#include "sim/cluster_timeline.hpp"
#include "sim/history_recorder.hpp"
#include "sim/cluster_trace.hpp"
#include "sim/raft_sim.hpp"

namespace lockstep::cli {

namespace {

void add(sim::ClusterLockStats& t, const sim::ClusterLockStats& s) {
  t.requests += s.requests;
  t.attempts += s.attempts;
  t.retries += s.retries;
  t.redirects += s.redirects;
  t.granted += s.granted;
  t.timed_out += s.timed_out;
  t.busy += s.busy;
  t.released += s.released;
  t.not_held += s.not_held;
  t.errors += s.errors;
  t.expires_proposed += s.expires_proposed;
  t.timeouts_proposed += s.timeouts_proposed;
  t.expires_applied += s.expires_applied;
  t.timeouts_applied += s.timeouts_applied;
  t.snapshots += s.snapshots;
  t.closed_unknown += s.closed_unknown;
}

std::string reproduce_command(const RaftSimOptions& o, std::uint64_t seed) {
  std::string command =
      fmt::format("lockstep sim --mode {} --nodes {} --seed {}", o.cluster ? "cluster" : "raft", o.nodes, seed);
  if (o.swarm) command += " --swarm";
  if (o.clients) command += fmt::format(" --clients {}", *o.clients);
  if (o.keys) command += fmt::format(" --keys {}", *o.keys);
  if (o.skew_beyond_bound) command += " --skew-beyond-bound";
  if (o.duration_ms) command += fmt::format(" --duration-ms {}", *o.duration_ms);
  if (o.bug != "none") command += fmt::format(" --inject-bug {}", o.bug);
  return command;
}

// A bug name is either the lock table's or Raft's: cluster mode runs both.
sim::ClusterSimParams cluster_params(const RaftSimOptions& o, std::uint64_t seed) {
  auto params = o.swarm ? sim::cluster_swarm_params(seed, o.nodes) : sim::cluster_default_params(seed, o.nodes);
  if (o.duration_ms) params.raft.duration_ms = DurationMs{*o.duration_ms};
  if (o.clients) params.clients = *o.clients;
  if (o.keys) params.keys = *o.keys;
  params.skew_beyond_bound = o.skew_beyond_bound;
  params.bug = cluster::cluster_bug_from_name(o.bug).value_or(cluster::ClusterBug::none);
  params.raft.raft.bug = raft::raft_bug_from_name(o.bug).value_or(raft::RaftBug::none);
  // A traced run goes on past the simulator's first violation: the spec may
  // see the fault earlier or later than the checkers do, and the trace is the
  // same whether it is validated at once or later.
  params.raft.stop_at_first_violation = o.trace.empty() && !o.validate_trace;
  return params;
}

void print_bugs() {
  fmt::print(stderr, "; Raft bugs:");
  for (const auto& entry : raft::raft_bug_catalogue()) fmt::print(stderr, " {}", entry.name);
  fmt::print(stderr, "; cluster bugs (--mode cluster):");
  for (const auto& entry : cluster::cluster_bug_catalogue()) fmt::print(stderr, " {}", entry.name);
  fmt::print(stderr, "\n");
}

}  // namespace

int run_raft_sim(const RaftSimOptions& o) {
  const auto bug = raft::raft_bug_from_name(o.bug);
  const auto cluster_bug = cluster::cluster_bug_from_name(o.bug);
  if ((!bug && !cluster_bug) || (!o.cluster && !bug)) {
    fmt::print(stderr, "sim: unknown bug '{}' for --mode {}", o.bug, o.cluster ? "cluster" : "raft");
    print_bugs();
    return 2;
  }
  if (!o.timeline.empty() && !o.cluster) {
    fmt::print(stderr, "sim: --timeline draws the lock service: --mode lock or --mode cluster\n");
    return 2;
  }
  if (!o.timeline.empty() && o.first_seed != o.last_seed) {
    fmt::print(stderr, "sim: --timeline draws one seed; use --seed N\n");
    return 2;
  }
  if (!o.history.empty() && (!o.cluster || o.first_seed != o.last_seed)) {
    fmt::print(stderr, "sim: --history records one seed of the lock service; use --seed N\n");
    return 2;
  }
  if ((!o.trace.empty() || o.validate_trace) && !o.cluster) {
    fmt::print(stderr, "sim: --trace and --validate-trace record the lock service: --mode lock or --mode cluster\n");
    return 2;
  }
  if ((!o.trace.empty() || o.validate_trace) && o.first_seed != o.last_seed) {
    fmt::print(stderr, "sim: --trace and --validate-trace record one seed; use --seed N\n");
    return 2;
  }
  std::string jar, trace_path = o.trace, trace_dir;
  if (o.validate_trace) {
    const auto lookup = find_tla2tools_jar();
    if (!lookup.jar) {
      fmt::print(stderr, "sim: --validate-trace needs TLC: {}\n", lookup.problem);
      return 2;
    }
    jar = *lookup.jar;
    if (trace_path.empty()) {
      trace_dir = make_work_dir();
      trace_path = trace_dir + "/trace.ndjson";
    }
  }
  sim::RaftSimStats totals;
  sim::ClusterLockStats lock_totals;
  std::uint64_t seeds = 0, failed = 0, violations = 0, simulated_ms = 0;
  std::optional<std::int64_t> first_violation_ms;  // of the last seed, for --validate-trace
  const auto start = std::chrono::steady_clock::now();
  // One seed's run: the register's, or the lock cluster's with its figures.
  const auto run_seed = [&](std::uint64_t seed, sim::ClusterLockStats* lock,
                            sim::ClusterTimelineRecorder* timeline = nullptr, sim::ClusterTraceWriter* trace = nullptr,
                            sim::ClusterHistoryRecorder* history = nullptr) {
    if (!o.cluster) {
      auto params = o.swarm ? sim::raft_swarm_params(seed, o.nodes) : sim::raft_default_params(seed, o.nodes);
      if (o.duration_ms) params.duration_ms = DurationMs{*o.duration_ms};
      params.raft.bug = *bug;
      return sim::run_raft_simulation(params);
    }
    sim::ClusterRunOptions options;
    options.timeline = timeline;
    options.trace = trace;
    options.clients = history;
    // The whole run, past a violation too: what the clients saw of it.
    options.stop_at_first_violation = history == nullptr;
    auto result = sim::run_cluster_simulation(cluster_params(o, seed), options);
    if (history != nullptr) history->finish(result.raft.stats.simulated_until);
    if (lock != nullptr) *lock = result.lock;
    return result.raft;
  };
  for (std::uint64_t seed = o.first_seed; seed <= o.last_seed; ++seed) {
    sim::ClusterLockStats lock;
    std::unique_ptr<sim::ClusterTimelineRecorder> timeline;
    if (!o.timeline.empty()) timeline = std::make_unique<sim::ClusterTimelineRecorder>(o.nodes);
    std::unique_ptr<sim::ClusterHistoryRecorder> history;
    if (!o.history.empty()) {
      history = std::make_unique<sim::ClusterHistoryRecorder>(cluster_params(o, seed), reproduce_command(o, seed));
    }
    std::ofstream trace_file;
    std::unique_ptr<sim::ClusterTraceWriter> trace;
    if (!trace_path.empty()) {
      trace_file.open(trace_path, std::ios::binary);
      if (!trace_file) {
        fmt::print(stderr, "sim: cannot write {}\n", trace_path);
        return 2;
      }
      trace = std::make_unique<sim::ClusterTraceWriter>(trace_file, cluster_params(o, seed));
    }
    auto r = run_seed(seed, &lock, timeline.get(), trace.get(), history.get());
    if (history) {
      std::ofstream file(o.history, std::ios::binary);
      history::write_history(file, history->history());
      if (!file) {
        fmt::print(stderr, "sim: cannot write {}\n", o.history);
        return 2;
      }
    }
    if (trace) {
      trace->finish(r.stats.simulated_until, r.violation_count, r.event_hash);
      trace_file.close();
      if (!trace_file) fmt::print(stderr, "sim: cannot write {}\n", trace_path);
    }
    if (timeline) {
      std::ofstream svg(o.timeline, std::ios::binary);
      svg << sim::render_cluster_svg(*timeline, cluster_params(o, seed), r.stats.simulated_until);
      if (!svg) {
        fmt::print(stderr, "sim: cannot write {}\n", o.timeline);
        return 2;
      }
    }
    if (o.check_determinism) {
      const auto again = run_seed(seed, nullptr);
      if (again.event_hash != r.event_hash || again.stats.events != r.stats.events) {
        ++r.violation_count;
        r.violations.push_back({r.stats.simulated_until, "determinism",
                                fmt::format("two runs differ: event hash {:016x} over {} events, then {:016x} over {}",
                                            r.event_hash, r.stats.events, again.event_hash, again.stats.events)});
      }
    }
    ++seeds;
    if (!r.violations.empty()) first_violation_ms = r.violations.front().at.value;
    const auto& s = r.stats;
    totals.events += s.events;
    totals.elections += s.elections;
    totals.leader_changes += s.leader_changes;
    totals.committed += s.committed;
    totals.proposed += s.proposed;
    totals.acknowledged += s.acknowledged;
    totals.refused += s.refused;
    totals.sent += s.sent;
    totals.dropped += s.dropped;
    totals.duplicated += s.duplicated;
    totals.snapshots_sent += s.snapshots_sent;
    totals.crashes += s.crashes;
    totals.torn_writes += s.torn_writes;
    totals.restarts += s.restarts;
    totals.partitions += s.partitions;
    totals.clock_jumps += s.clock_jumps;
    simulated_ms += static_cast<std::uint64_t>(s.simulated_until.value);
    add(lock_totals, lock);
    if (r.violation_count == 0) continue;
    ++failed;
    violations += r.violation_count;
    const auto params = o.cluster ? sim::describe(cluster_params(o, seed))
                                  : sim::describe(r.params);
    fmt::print("\nFAIL seed {}: {} violation(s)\n  params: {}\n", seed, r.violation_count, params);
    for (std::size_t i = 0; i < r.violations.size() && i < 5; ++i) {
      const auto& v = r.violations[i];
      fmt::print("  [{}] at {} ms: {}\n", v.checker, v.at.value, v.what);
    }
    fmt::print("  reproduce: {}\n", reproduce_command(o, seed));
  }
  const double wall_s =
      std::max(1e-9, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  const auto row = [](const char* name, auto value) { fmt::print("  {:<22} {:>14}\n", name, value); };
  if (o.check_determinism) fmt::print("determinism: every seed ran twice{}\n", failed ? "" : " with the same event hash");
  fmt::print("\nlockstep sim --mode {} summary ({} nodes)\n", o.cluster ? "cluster" : "raft", o.nodes);
  row("seeds", seeds);
  row("failed seeds", failed);
  row("events", totals.events);
  row("elections", totals.elections);
  row("leader changes", totals.leader_changes);
  row("commits", totals.committed);
  row("proposals accepted", totals.proposed);
  row("acknowledged", totals.acknowledged);
  row("proposals refused", totals.refused);
  row("messages sent", totals.sent);
  row("messages dropped", totals.dropped);
  row("messages duplicated", totals.duplicated);
  row("snapshots sent", totals.snapshots_sent);
  row("partitions", totals.partitions);
  row("crashes", totals.crashes);
  row("torn writes", totals.torn_writes);
  row("restarts", totals.restarts);
  row("clock jumps", totals.clock_jumps);
  if (o.cluster) {
    const auto& l = lock_totals;
    row("lock requests", l.requests);
    row("attempts", l.attempts);
    row("retries", l.retries);
    row("redirects", l.redirects);
    row("granted (A)", l.granted);
    row("timed out (T)", l.timed_out);
    row("busy (B)", l.busy);
    row("released (R)", l.released);
    row("not held (N)", l.not_held);
    row("Expires proposed", l.expires_proposed);
    row("Expires applied", l.expires_applied);
    row("Timeouts proposed", l.timeouts_proposed);
    row("Timeouts applied", l.timeouts_applied);
    row("lock snapshots", l.snapshots);
    row("closed: fate unknown", l.closed_unknown);
  }
  row("simulated time (s)", fmt::format("{:.1f}", static_cast<double>(simulated_ms) / 1000));
  row("wall time (s)", fmt::format("{:.2f}", wall_s));
  fmt::print("violations: {}\n", violations);
  fmt::print("speed: {:.0f}\n", static_cast<double>(simulated_ms) / 1000 / wall_s);
  if (o.validate_trace) {
    const auto verdict = validate_run_trace(trace_path, jar, violations, first_violation_ms);
    if (!trace_dir.empty()) remove_work_dir(trace_dir);
    // 2 when the trace could not be checked; otherwise 1 on either verdict.
    if (verdict == TraceVerdict::Kind::error) return 2;
    if (verdict == TraceVerdict::Kind::invalid) return 1;
  }
  return violations == 0 ? 0 : 1;
}

}  // namespace lockstep::cli
