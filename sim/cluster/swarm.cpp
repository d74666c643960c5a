#include "sim/cluster/swarm.hpp"

#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "impl/cluster/bugs.hpp"
#include "impl/counters.hpp"
#include "sim/cluster/simulation.hpp"
#include "sim/cluster/timeline.hpp"
#include "sim/cluster/trace.hpp"
#include "sim/history/recorder.hpp"
#include "sim/raft/simulation.hpp"

namespace lockstep::sim {

namespace {

std::string reproduce_command(const RaftSwarmOptions& o, std::uint64_t seed) {
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

RaftSimParams raft_params(const RaftSwarmOptions& o, std::uint64_t seed) {
  auto params = o.swarm ? raft_swarm_params(seed, o.nodes) : raft_default_params(seed, o.nodes);
  if (o.duration_ms) params.duration_ms = DurationMs{*o.duration_ms};
  params.raft.bug = raft::raft_bug_from_name(o.bug).value_or(raft::RaftBug::none);
  return params;
}

// A bug name is either the lock table's or Raft's: cluster mode runs both.
ClusterSimParams cluster_params(const RaftSwarmOptions& o, std::uint64_t seed) {
  auto params = o.swarm ? cluster_swarm_params(seed, o.nodes) : cluster_default_params(seed, o.nodes);
  if (o.duration_ms) params.raft.duration_ms = DurationMs{*o.duration_ms};
  if (o.clients) params.clients = *o.clients;
  if (o.keys) params.keys = *o.keys;
  params.skew_beyond_bound = o.skew_beyond_bound;
  params.bug = cluster::cluster_bug_from_name(o.bug).value_or(cluster::ClusterBug::none);
  params.raft.raft.bug = raft::raft_bug_from_name(o.bug).value_or(raft::RaftBug::none);
  // A traced run goes on past the simulator's first violation: the spec may
  // see the fault earlier or later than the checkers do, and the trace is the
  // same whether it is validated at once or later.
  params.raft.stop_at_first_violation = o.trace.empty();
  return params;
}

SeedOutcome outcome_of(const RaftRunResult& r, std::string params) {
  SeedOutcome outcome{r.stats.events, r.event_hash, r.stats.simulated_until, r.violation_count, {}, std::move(params), {}};
  for (const auto& v : r.violations) outcome.violations.push_back({v.at, v.checker, v.what, {}});
  for (const auto& counter : raft_counters) outcome.counters.emplace_back(counter.label, r.stats.*counter.field);
  return outcome;
}

}  // namespace

std::vector<std::string> raft_swarm_bug_names(bool cluster) {
  std::vector<std::string> names{"none"};
  for (const auto& entry : raft::raft_bug_catalogue()) names.emplace_back(entry.name);
  if (cluster) {
    for (const auto& entry : cluster::cluster_bug_catalogue()) names.emplace_back(entry.name);
  }
  return names;
}

SwarmOutcome run_raft_swarm(const RaftSwarmOptions& o, const SwarmConfig& config) {
  SwarmOutcome outcome;
  bool written = true;
  SwarmMode mode;
  mode.summary_title = fmt::format("lockstep sim --mode {} summary ({} nodes)", o.cluster ? "cluster" : "raft", o.nodes);
  mode.reproduce = [&](std::uint64_t seed) { return reproduce_command(o, seed); };
  mode.run = [&](std::uint64_t seed, const std::function<void(double)>&) {
    if (!o.cluster) {
      const auto params = raft_params(o, seed);
      const auto r = run_raft_simulation(params);
      outcome.last_seed_first_violation_ms =
          r.violations.empty() ? std::nullopt : std::optional{r.violations.front().at.value};
      return outcome_of(r, describe(params));
    }
    const auto params = cluster_params(o, seed);
    std::unique_ptr<ClusterTimelineRecorder> timeline;
    if (!o.timeline.empty()) timeline = std::make_unique<ClusterTimelineRecorder>(o.nodes);
    std::ofstream trace_file;
    std::unique_ptr<ClusterTraceWriter> trace;
    if (!o.trace.empty()) {
      trace_file.open(o.trace, std::ios::binary);
      trace = std::make_unique<ClusterTraceWriter>(trace_file, params);
    }
    std::unique_ptr<ClusterHistoryRecorder> history;
    if (!o.history.empty()) history = std::make_unique<ClusterHistoryRecorder>(params, reproduce_command(o, seed));
    ClusterRunOptions run;
    run.timeline = timeline.get();
    run.trace = trace.get();
    run.clients = history.get();
    // A history is what the clients saw of the whole run, past a violation too.
    run.stop_at_first_violation = history == nullptr;
    const auto r = run_cluster_simulation(params, run);
    const TimeMs end = r.raft.stats.simulated_until;
    if (history) {
      history->finish(end, r.lateness_ms);
      std::ofstream file(o.history, std::ios::binary);
      history::write_history(file, history->history());
      if (!file) {
        fmt::print(stderr, "lockstep sim: cannot write {}\n", o.history);
        written = false;
      }
    }
    if (trace) {
      trace->finish(end, r.raft.violation_count, r.raft.event_hash);
      trace_file.close();
      if (!trace_file) {
        fmt::print(stderr, "lockstep sim: cannot write {}\n", o.trace);
        written = false;
      }
    }
    if (timeline) {
      std::ofstream svg(o.timeline, std::ios::binary);
      svg << render_cluster_svg(*timeline, params, end);
      if (!svg) {
        fmt::print(stderr, "lockstep sim: cannot write {}\n", o.timeline);
        written = false;
      }
    }
    outcome.last_seed_first_violation_ms =
        r.raft.violations.empty() ? std::nullopt : std::optional{r.raft.violations.front().at.value};
    auto seed_outcome = outcome_of(r.raft, describe(params));
    for (const auto& counter : cluster_lock_counters) seed_outcome.counters.emplace_back(counter.label, r.lock.*counter.field);
    return seed_outcome;
  };
  outcome.totals = run_swarm(config, mode);
  outcome.summary_title = mode.summary_title;
  outcome.violations = outcome.totals.violations;
  outcome.exit_code = !written ? 2 : outcome.violations > 0 ? 1 : 0;
  return outcome;
}

}  // namespace lockstep::sim
