// `lockstep sim --mode raft`: the Raft cluster simulator over a range of
// seeds, with the append-only register as its state machine. Prints a
// summary that ends with `violations: N` and `speed: X` (simulated seconds
// per wall second, as the lock simulator's), and exits 1 on any violation,
// printing each failing seed with the command that reproduces it.
#include <chrono>

#include <fmt/format.h>

#include "cmd/lockstep/raft_sim_command.hpp"
#include "cmd/lockstep/commands.hpp"
#include "sim/raft_sim.hpp"

namespace lockstep::cli {

namespace {

std::string reproduce_command(const RaftSimOptions& o, std::uint64_t seed) {
  std::string command = fmt::format("lockstep sim --mode raft --nodes {} --seed {}", o.nodes, seed);
  if (o.swarm) command += " --swarm";
  if (o.duration_ms) command += fmt::format(" --duration-ms {}", *o.duration_ms);
  if (o.bug != "none") command += fmt::format(" --inject-bug {}", o.bug);
  return command;
}

}  // namespace

int run_raft_sim(const RaftSimOptions& o) {
  const auto bug = raft::raft_bug_from_name(o.bug);
  if (!bug) {
    fmt::print(stderr, "sim: unknown Raft bug '{}'; Raft bugs:", o.bug);
    for (const auto& entry : raft::raft_bug_catalogue()) fmt::print(stderr, " {}", entry.name);
    fmt::print(stderr, "\n");
    return 2;
  }
  sim::RaftSimStats totals;
  std::uint64_t seeds = 0, failed = 0, violations = 0, simulated_ms = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t seed = o.first_seed; seed <= o.last_seed; ++seed) {
    auto params = o.swarm ? sim::raft_swarm_params(seed, o.nodes) : sim::raft_default_params(seed, o.nodes);
    if (o.duration_ms) params.duration_ms = DurationMs{*o.duration_ms};
    params.raft.bug = *bug;
    auto r = sim::run_raft_simulation(params);
    if (o.check_determinism) {
      const auto again = sim::run_raft_simulation(params);
      if (again.event_hash != r.event_hash || again.stats.events != r.stats.events) {
        ++r.violation_count;
        r.violations.push_back({r.stats.simulated_until, "determinism",
                                fmt::format("two runs differ: event hash {:016x} over {} events, then {:016x} over {}",
                                            r.event_hash, r.stats.events, again.event_hash, again.stats.events)});
      }
    }
    ++seeds;
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
    if (r.violation_count == 0) continue;
    ++failed;
    violations += r.violation_count;
    fmt::print("\nFAIL seed {}: {} violation(s)\n  params: {}\n", seed, r.violation_count, sim::describe(r.params));
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
  fmt::print("\nlockstep sim --mode raft summary ({} nodes)\n", o.nodes);
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
  row("simulated time (s)", fmt::format("{:.1f}", static_cast<double>(simulated_ms) / 1000));
  row("wall time (s)", fmt::format("{:.2f}", wall_s));
  fmt::print("violations: {}\n", violations);
  fmt::print("speed: {:.0f}\n", static_cast<double>(simulated_ms) / 1000 / wall_s);
  return violations == 0 ? 0 : 1;
}

}  // namespace lockstep::cli
