#include "sim/simple/swarm.hpp"

#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "impl/counters.hpp"
#include "check/history.hpp"
#include "sim/history/recorder.hpp"
#include "sim/simple/shrink.hpp"
#include "sim/simple/simulation.hpp"
#include "sim/simple/timeline.hpp"
#include "sim/simple/trace.hpp"

namespace lockstep::sim {

namespace {

SimParams params_for(const SimpleSwarmOptions& o, std::uint64_t seed) {
  SimParams p = o.swarm ? swarm_params(seed) : default_params(seed);
  if (o.clients) p.workload.clients = *o.clients;
  if (o.keys) p.workload.keys = *o.keys;
  if (o.duration_ms) p.duration_ms = DurationMs{*o.duration_ms};
  p.bug = bug_from_name(o.bug).value_or(InjectedBug::none);
  p.server_fault = server_fault_from_name(o.bug).value_or(ServerFault::none);
  return p;
}

// The summary's rows: the engine's counters, expiries of any kind, and the
// simulated world's (each table names its counters once: impl/counters.hpp).
std::vector<SummaryRow> rows_of(const SimStats& s) {
  std::vector<SummaryRow> rows;
  for (const auto& counter : engine_counters) rows.emplace_back(counter.label, s.engine.*counter.field);
  rows.emplace_back("expiries", s.engine.takeovers + s.engine.sweep_deletions + s.engine.sweep_handoffs);
  for (const auto& counter : sim_counters) rows.emplace_back(counter.label, s.*counter.field);
  return rows;
}

// The seed run again recording the server's inputs (the same run: recording
// only watches), shrunk to a vector in the shrink folder.
void shrink_seed(const SimpleSwarmOptions& o, const SimParams& params) {
  RunOptions again;
  again.compare_with_model = !o.no_model;
  again.record_inputs = true;
  again.stop_at_first_violation = false;
  const auto recorded = run_simulation(params, again);
  if (recorded.violations.empty()) return;
  const auto shrunk = shrink_failure(recorded, recorded.violations.front());
  if (shrunk.vector_text.empty()) {
    fmt::print("  shrink: {}\n", shrunk.note);
    return;
  }
  const auto path = fmt::format("{}/sim-seed-{}.vec", o.shrink_dir, params.seed);
  std::error_code created;
  std::filesystem::create_directories(o.shrink_dir, created);
  std::ofstream file(path, std::ios::binary);
  file << shrunk.vector_text;
  if (!file) {
    fmt::print("  shrink: cannot write {}\n", path);
    return;
  }
  fmt::print("  shrunk: {} ({})\n  replay: lockstep conform{} {}\n", path, shrunk.note,
             params.bug == InjectedBug::none ? "" : fmt::format(" --inject-bug {}", bug_name(params.bug)), path);
}

// One output file written whole, or why not on stderr.
bool write_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  std::ofstream file(path, std::ios::binary);
  write(file);
  if (file) return true;
  fmt::print(stderr, "lockstep sim: cannot write {}\n", path);
  return false;
}

}  // namespace

std::vector<std::string> simple_bug_names() {
  std::vector<std::string> names{"none"};
  for (const auto& entry : bug_catalogue()) names.emplace_back(entry.name);
  for (const auto& entry : server_fault_catalogue()) names.emplace_back(entry.name);
  return names;
}

std::string simple_reproduce_command(const SimpleSwarmOptions& o, std::uint64_t seed) {
  std::string command = fmt::format("lockstep sim --seed {}", seed);
  if (o.swarm) command += " --swarm";
  if (o.clients) command += fmt::format(" --clients {}", *o.clients);
  if (o.keys) command += fmt::format(" --keys {}", *o.keys);
  if (o.duration_ms) command += fmt::format(" --duration-ms {}", *o.duration_ms);
  if (o.bug != "none") command += fmt::format(" --inject-bug {}", o.bug);
  if (o.no_model) command += " --no-model";
  return command;
}

SwarmOutcome run_simple_swarm(const SimpleSwarmOptions& o, const SwarmConfig& config) {
  SwarmOutcome outcome;
  bool written = true;
  SwarmMode mode;
  mode.summary_title = "lockstep sim summary";
  mode.reproduce = [&](std::uint64_t seed) { return simple_reproduce_command(o, seed); };
  mode.after_failure = [&](std::uint64_t seed, const SeedOutcome&, bool first_failure) {
    if (first_failure) shrink_seed(o, params_for(o, seed));
  };
  mode.run = [&](std::uint64_t seed, const std::function<void(double)>& progress) {
    const auto params = params_for(o, seed);
    RunOptions run;
    run.compare_with_model = !o.no_model;
    // A trace to validate, or a history, goes on past the first violation:
    // the spec may see the fault later or earlier than the checkers do, and
    // a history is what the clients saw of the whole run.
    run.stop_at_first_violation = !o.run_to_end && o.history.empty();
    std::ofstream trace_file;
    std::unique_ptr<TraceWriter> trace;
    std::unique_ptr<TimelineRecorder> timeline;
    std::unique_ptr<SimpleHistoryObserver> history;
    if (!o.trace.empty()) {
      trace_file.open(o.trace, std::ios::binary);
      trace = std::make_unique<TraceWriter>(trace_file, params);
      run.observers.push_back(trace.get());
    }
    if (!o.timeline.empty()) {
      timeline = std::make_unique<TimelineRecorder>(params);
      run.observers.push_back(timeline.get());
    }
    if (!o.history.empty()) {
      history = std::make_unique<SimpleHistoryObserver>(params, simple_reproduce_command(o, seed));
      run.observers.push_back(history.get());
    }
    const double planned_ms = static_cast<double>(params.duration_ms.value + drain_ms(params).value);
    run.progress = [&](TimeMs now) { progress(static_cast<double>(now.value) / planned_ms); };
    run.progress_events = 1 << 18;
    const auto result = run_simulation(params, run);
    const TimeMs end = result.stats.simulated_until;
    if (trace) {
      trace->finish(end, result.violation_count, result.event_hash);
      trace_file.close();
      if (!trace_file) {
        fmt::print(stderr, "lockstep sim: cannot write {}\n", o.trace);
        written = false;
      }
    }
    if (timeline) {
      timeline->finish(end);
      written = write_file(o.timeline, [&](std::ostream& out) { out << render_svg(*timeline, params, end); }) && written;
    }
    if (history) {
      history->recorder().finish(end);
      written = write_file(o.history, [&](std::ostream& out) {
        history::write_history(out, history->recorder().history());
      }) && written;
    }
    outcome.last_seed_first_violation_ms =
        result.violations.empty() ? std::nullopt : std::optional{result.violations.front().at.value};
    return SeedOutcome{result.stats.events, result.event_hash,     end, result.violation_count,
                       result.violations,   describe(result.params), rows_of(result.stats)};
  };
  outcome.totals = run_swarm(config, mode);
  outcome.summary_title = mode.summary_title;
  outcome.violations = outcome.totals.violations;
  outcome.exit_code = !written ? 2 : outcome.violations > 0 ? 1 : 0;
  return outcome;
}

}  // namespace lockstep::sim
