// `lockstep sim`: runs the deterministic simulator over one seed or a range
// of seeds, prints a summary table and the machine-readable lines
// `violations: N` and `speed: X`, and exits 1 on any violation. A failing
// seed is printed with the one command that reproduces it, and its inputs
// are shrunk to a conformance vector that `lockstep conform` replays.
// Wall time is read here only: the simulator itself never reads a clock.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/raft_sim_command.hpp"
#include "cmd/lockstep/validate_trace.hpp"
#include "cmd/lockstep/validators.hpp"
#include "impl/cluster/bugs.hpp"
#include "impl/raft/bugs.hpp"
#include "sim/history_recorder.hpp"
#include "sim/shrink.hpp"
#include "sim/simulation.hpp"
#include "sim/timeline.hpp"
#include "sim/trace.hpp"

namespace lockstep::cli {

namespace {

struct SimOptions {
  std::optional<std::uint64_t> seed;
  std::string seeds;
  bool swarm = false;
  std::optional<std::uint32_t> clients;
  std::optional<std::uint32_t> keys;
  std::optional<std::int64_t> duration_ms;
  std::string trace;
  std::string timeline;
  std::string history;
  bool check_determinism = false;
  std::string bug = "none";
  bool no_model = false;
  std::string shrink_dir = ".";
  bool validate_trace = false;
  std::string mode = "lock";
  std::uint32_t nodes = 3;
  bool skew_beyond_bound = false;
};

// The run when no seed is named: a swarm that ends within a minute.
constexpr std::uint64_t default_first_seed = 1, default_last_seed = 1000;
// Seeds are 0 .. 2^63 - 1: every tool that reads a trace or a reproduce
// line can hold them, and a range never wraps around.
constexpr std::uint64_t seed_max = (std::uint64_t{1} << 63) - 1;

struct Totals {
  std::uint64_t seeds = 0, failed_seeds = 0, violations = 0, events = 0, simulated_ms = 0;
  std::uint64_t restarts = 0, drops = 0, crashes = 0;
  EngineCounters engine;
};

void add(Totals& t, const sim::RunResult& r) {
  ++t.seeds;
  t.events += r.stats.events;
  t.simulated_ms += static_cast<std::uint64_t>(r.stats.simulated_until.value);
  t.restarts += r.stats.restarts;
  t.drops += r.stats.drops;
  t.crashes += r.stats.crashes;
  const auto& c = r.stats.engine;
  t.engine.requests += c.requests;
  t.engine.grants += c.grants;
  t.engine.takeovers += c.takeovers;
  t.engine.handoffs += c.handoffs;
  t.engine.sweep_handoffs += c.sweep_handoffs;
  t.engine.queued += c.queued;
  t.engine.timeouts += c.timeouts;
  t.engine.refused += c.refused;
  t.engine.busy += c.busy;
  t.engine.releases += c.releases;
  t.engine.not_held += c.not_held;
  t.engine.sweeps += c.sweeps;
  t.engine.sweep_deletions += c.sweep_deletions;
  t.engine.dropped_waiters += c.dropped_waiters;
}

std::optional<std::uint64_t> parse_seed(const std::string& text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (value > seed_max) return std::nullopt;
  return value;
}

// `A..B` (A <= B) or a single seed `A`, each a seed in 0..seed_max.
std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_range(const std::string& text) {
  const auto dots = text.find("..");
  if (dots == std::string::npos) {
    const auto one = parse_seed(text);
    if (!one) return std::nullopt;
    return std::pair{*one, *one};
  }
  const auto first = parse_seed(text.substr(0, dots));
  const auto last = parse_seed(text.substr(dots + 2));
  if (!first || !last || *last < *first) return std::nullopt;
  return std::pair{*first, *last};
}

CLI::Validator seed_range_check() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (parse_range(text)) return {};
        return fmt::format("'{}' is not A..B with seeds A <= B in 0..{}", text, seed_max);
      },
      "A..B", "seed range");
}

// The bug names each mode takes, with where their catalogue is listed.
std::vector<std::string> lock_bug_names() {
  std::vector<std::string> names{"none", "restart-forgets-tokens"};
  for (const auto& entry : bug_catalogue()) names.emplace_back(entry.name);
  return names;
}

std::vector<std::string> raft_bug_names(bool cluster) {
  std::vector<std::string> names{"none"};
  for (const auto& entry : raft::raft_bug_catalogue()) names.emplace_back(entry.name);
  if (cluster) {
    for (const auto& entry : cluster::cluster_bug_catalogue()) names.emplace_back(entry.name);
  }
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 1; i < names.size(); ++i) text += (i > 1 ? ", " : "") + names[i];
  return text;
}

// What a mode cannot use is refused, not ignored: an option that changes
// nothing would make the user believe the run is what it is not.
void check_mode_options(const CLI::App& command, const SimOptions& o) {
  const auto refuse_in = [&](const char* option, const char* modes) {
    if (command.count(option) > 0) {
      throw CLI::ValidationError(option, fmt::format("is not used by --mode {} (it applies to --mode {})", o.mode, modes));
    }
  };
  if (o.mode == "lock") {
    refuse_in("--nodes", "raft and cluster");
    refuse_in("--skew-beyond-bound", "cluster");
  } else {
    refuse_in("--no-model", "lock");
    refuse_in("--shrink-dir", "lock");
    if (o.mode == "raft") {
      refuse_in("--trace", "lock and cluster");
      refuse_in("--validate-trace", "lock and cluster");
      refuse_in("--clients", "lock and cluster");
      refuse_in("--keys", "lock and cluster");
      refuse_in("--timeline", "lock and cluster");
      refuse_in("--skew-beyond-bound", "cluster");
    }
  }
  const auto names = o.mode == "lock" ? lock_bug_names() : raft_bug_names(o.mode == "cluster");
  if (std::find(names.begin(), names.end(), o.bug) == names.end()) {
    const char* catalogue = o.mode == "lock"    ? "the engine's bugs (lockstep serve --list-bugs) and restart-forgets-tokens"
                            : o.mode == "raft" ? "the Raft bugs"
                                               : "the Raft and cluster bugs";
    throw CLI::ValidationError("--inject-bug", fmt::format("'{}' is not a bug of --mode {}: {}: {}", o.bug, o.mode,
                                                           catalogue, joined(names)));
  }
  const bool one_seed = o.seed.has_value() || (!o.seeds.empty() && parse_range(o.seeds)->first == parse_range(o.seeds)->second);
  for (const char* option : {"--trace", "--timeline", "--validate-trace"}) {
    if (command.count(option) > 0 && !one_seed) {
      throw CLI::ValidationError(option, "takes one seed: use --seed N");
    }
  }
}

sim::SimParams params_for(const SimOptions& o, std::uint64_t seed, InjectedBug bug, sim::ServerFault fault) {
  sim::SimParams p = o.swarm ? sim::swarm_params(seed) : sim::default_params(seed);
  if (o.clients) p.workload.clients = *o.clients;
  if (o.keys) p.workload.keys = *o.keys;
  if (o.duration_ms) p.duration_ms = DurationMs{*o.duration_ms};
  p.bug = bug;
  p.server_fault = fault;
  return p;
}

std::string reproduce_command(const SimOptions& o, std::uint64_t seed) {
  std::string command = fmt::format("lockstep sim --seed {}", seed);
  if (o.swarm) command += " --swarm";
  if (o.clients) command += fmt::format(" --clients {}", *o.clients);
  if (o.keys) command += fmt::format(" --keys {}", *o.keys);
  if (o.duration_ms) command += fmt::format(" --duration-ms {}", *o.duration_ms);
  if (o.bug != "none") command += fmt::format(" --inject-bug {}", o.bug);
  if (o.no_model) command += " --no-model";
  return command;
}

void report_failure(const SimOptions& o, const sim::RunResult& r, bool shrink) {
  fmt::print("\nFAIL seed {}: {} violation(s)\n  params: {}\n", r.params.seed, r.violation_count, sim::describe(r.params));
  for (std::size_t i = 0; i < r.violations.size() && i < 5; ++i) {
    const auto& v = r.violations[i];
    fmt::print("  [{}] at {} ms: {}\n", v.checker, v.at.value, v.what);
  }
  fmt::print("  reproduce: {}\n", reproduce_command(o, r.params.seed));
  if (!shrink || r.violations.empty()) return;
  // Run the seed again, recording the server's inputs: the same run, since
  // recording only watches.
  sim::RunOptions again;
  again.compare_with_model = !o.no_model;
  again.record_inputs = true;
  again.stop_at_first_violation = false;
  const auto recorded = sim::run_simulation(r.params, again);
  if (recorded.violations.empty()) return;
  const auto shrunk = sim::shrink_failure(recorded, recorded.violations.front());
  if (shrunk.vector_text.empty()) {
    fmt::print("  shrink: {}\n", shrunk.note);
    return;
  }
  const auto path = fmt::format("{}/sim-seed-{}.vec", o.shrink_dir, r.params.seed);
  std::error_code created;
  std::filesystem::create_directories(o.shrink_dir, created);
  std::ofstream file(path, std::ios::binary);
  file << shrunk.vector_text;
  if (!file) {
    fmt::print("  shrink: cannot write {}\n", path);
    return;
  }
  fmt::print("  shrunk: {} ({})\n  replay: lockstep conform{} {}\n", path, shrunk.note,
             r.params.bug == InjectedBug::none ? "" : fmt::format(" --inject-bug {}", bug_name(r.params.bug)), path);
}

class Progress {
 public:
  explicit Progress(std::uint64_t total) : total_(total), on_(isatty(STDOUT_FILENO) != 0) {}
  void show(std::uint64_t done, double fraction_of_current, std::uint64_t failed) {
    if (!on_) return;
    const double share = std::clamp(
        (static_cast<double>(done) + std::clamp(fraction_of_current, 0.0, 1.0)) / static_cast<double>(total_), 0.0, 1.0);
    const int width = 40;
    const int filled = static_cast<int>(share * width);
    fmt::print("\r[{}{}] {}/{} seeds, {} failed ", std::string(static_cast<std::size_t>(filled), '#'),
               std::string(static_cast<std::size_t>(width - filled), '.'), done, total_, failed);
    std::fflush(stdout);
  }
  void clear() {
    if (on_) fmt::print("\r{}\r", std::string(72, ' '));
  }

 private:
  std::uint64_t total_;
  bool on_;
};

void print_summary(const Totals& t, double wall_s) {
  const auto& c = t.engine;
  const auto row = [](const char* name, auto value) { fmt::print("  {:<22} {:>14}\n", name, value); };
  fmt::print("\nlockstep sim summary\n");
  row("seeds", t.seeds);
  row("failed seeds", t.failed_seeds);
  row("events", t.events);
  row("requests", c.requests);
  row("grants", c.grants);
  row("takeovers", c.takeovers);
  row("hand-offs (release)", c.handoffs);
  row("hand-offs (sweep)", c.sweep_handoffs);
  row("queued", c.queued);
  row("timeouts", c.timeouts);
  row("try-locks refused", c.refused);
  row("busy", c.busy);
  row("releases", c.releases);
  row("not held", c.not_held);
  row("expiries", c.takeovers + c.sweep_deletions + c.sweep_handoffs);
  row("sweeps", c.sweeps);
  row("restarts", t.restarts);
  row("connection drops", t.drops);
  row("client crashes", t.crashes);
  row("simulated time (s)", fmt::format("{:.1f}", static_cast<double>(t.simulated_ms) / 1000));
  row("wall time (s)", fmt::format("{:.2f}", wall_s));
  row("events/s", fmt::format("{:.0f}", static_cast<double>(t.events) / wall_s));
  fmt::print("violations: {}\n", t.violations);
  fmt::print("speed: {:.0f}\n", static_cast<double>(t.simulated_ms) / 1000 / wall_s);
}

// `--validate-trace`: TLC's verdict on the trace of the seed just run, beside
// the simulator's own (validate_trace.hpp, validate_run_trace).
TraceVerdict::Kind validate_sim_trace(const std::string& trace_path, const std::string& jar, const sim::RunResult& r) {
  return validate_run_trace(trace_path, jar, r.violation_count,
                            r.violations.empty() ? std::nullopt : std::optional{r.violations.front().at.value});
}

int run_sim(const SimOptions& o) {
  std::uint64_t first = default_first_seed, last = default_last_seed;
  SimOptions options = o;
  if (o.seed) {
    first = last = *o.seed;
  } else if (!o.seeds.empty()) {
    std::tie(first, last) = *parse_range(o.seeds);  // checked when parsed
  } else {
    options.swarm = true;  // the default run is a swarm
  }
  if (!o.history.empty() && (o.mode == "raft" || first != last)) {
    fmt::print(stderr, "sim: --history records one seed of the lock service (--mode lock or cluster); use --seed N\n");
    return 2;
  }
  if (o.mode == "raft" || o.mode == "cluster") {
    RaftSimOptions raft;
    raft.cluster = o.mode == "cluster";
    raft.clients = o.clients;
    raft.keys = o.keys;
    raft.skew_beyond_bound = o.skew_beyond_bound;
    raft.timeline = o.timeline;
    raft.history = o.history;
    raft.nodes = o.nodes;
    raft.first_seed = first;
    raft.last_seed = o.seed || !o.seeds.empty() ? last : 100;
    raft.swarm = options.swarm;
    raft.duration_ms = o.duration_ms;
    raft.bug = o.bug;
    raft.check_determinism = o.check_determinism;
    raft.trace = o.trace;
    raft.validate_trace = o.validate_trace;
    return run_raft_sim(raft);
  }
  // The bug name and the one-seed options were checked when parsed.
  auto bug = bug_from_name(o.bug);
  const auto fault = sim::server_fault_from_name(o.bug);
  if (!bug) bug = InjectedBug::none;
  std::string jar, trace_dir;
  if (o.validate_trace) {
    const auto lookup = find_tla2tools_jar();
    if (!lookup.jar) {
      fmt::print(stderr, "sim: --validate-trace needs TLC: {}\n", lookup.problem);
      return 2;
    }
    jar = *lookup.jar;
    if (options.trace.empty()) {
      try {
        trace_dir = make_work_dir();
      } catch (const std::exception& e) {
        fmt::print(stderr, "sim: --validate-trace: {}\n", e.what());
        return 2;
      }
      options.trace = trace_dir + "/trace.ndjson";
    }
  }
  Totals totals;
  sim::RunResult last_result;
  Progress progress(last - first + 1);
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t seed = first;; ++seed) {
    const auto params = params_for(options, seed, *bug, fault.value_or(sim::ServerFault::none));
    sim::RunOptions run;
    run.compare_with_model = !o.no_model;
    // A trace to validate goes on past the simulator's first violation: the
    // spec may see the fault later (or earlier) than the checkers do.
    if (o.validate_trace) run.stop_at_first_violation = false;
    std::ofstream trace_file;
    std::unique_ptr<sim::TraceWriter> trace;
    std::unique_ptr<sim::TimelineRecorder> timeline;
    if (!options.trace.empty()) {
      trace_file.open(options.trace, std::ios::binary);
      if (!trace_file) {
        fmt::print(stderr, "sim: cannot write {}\n", options.trace);
        return 2;
      }
      trace = std::make_unique<sim::TraceWriter>(trace_file, params);
      run.observers.push_back(trace.get());
    }
    if (!o.timeline.empty()) {
      timeline = std::make_unique<sim::TimelineRecorder>(params);
      run.observers.push_back(timeline.get());
    }
    std::unique_ptr<sim::SimpleHistoryObserver> history;
    if (!o.history.empty()) {
      // The whole run, past a violation too: what the clients saw of it.
      history = std::make_unique<sim::SimpleHistoryObserver>(params, reproduce_command(options, seed));
      run.observers.push_back(history.get());
      run.stop_at_first_violation = false;
    }
    const double planned_ms = static_cast<double>(params.duration_ms.value + sim::drain_ms(params).value);
    run.progress = [&](TimeMs now) {
      progress.show(seed - first, static_cast<double>(now.value) / planned_ms, totals.failed_seeds);
    };
    run.progress_events = 1 << 18;
    auto result = sim::run_simulation(params, run);
    if (trace) {
      trace->finish(result.stats.simulated_until, result.violation_count, result.event_hash);
      trace_file.close();
    }
    if (timeline) {
      timeline->finish(result.stats.simulated_until);
      std::ofstream svg(o.timeline, std::ios::binary);
      svg << sim::render_svg(*timeline, params, result.stats.simulated_until);
      if (!svg) {
        fmt::print(stderr, "sim: cannot write {}\n", o.timeline);
        return 2;
      }
    }
    if (history) {
      history->recorder().finish(result.stats.simulated_until);
      std::ofstream file(o.history, std::ios::binary);
      history::write_history(file, history->recorder().history());
      if (!file) {
        fmt::print(stderr, "sim: cannot write {}\n", o.history);
        return 2;
      }
    }
    if (o.check_determinism) {
      sim::RunOptions again;
      again.compare_with_model = !o.no_model;
      const auto second = sim::run_simulation(params, again);
      if (second.event_hash != result.event_hash || second.stats.events != result.stats.events) {
        ++result.violation_count;
        result.violations.push_back({result.stats.simulated_until, "determinism",
                                     fmt::format("two runs of seed {} differ: event hash {:016x} over {} events, then {:016x} over {}",
                                                 seed, result.event_hash, result.stats.events, second.event_hash, second.stats.events),
                                     {}});
      }
    }
    add(totals, result);
    if (result.violation_count > 0) {
      progress.clear();
      ++totals.failed_seeds;
      totals.violations += result.violation_count;
      report_failure(options, result, totals.failed_seeds == 1);
    }
    progress.show(seed - first + 1, 0, totals.failed_seeds);
    last_result = std::move(result);
    if (seed == last) break;  // not `seed <= last`: last may be the largest seed
  }
  progress.clear();
  const double wall_s = std::max(1e-9, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (o.check_determinism) fmt::print("determinism: every seed ran twice with the same event hash{}\n", totals.failed_seeds ? " (see failures above)" : "");
  print_summary(totals, wall_s);
  auto trace_verdict = TraceVerdict::Kind::valid;
  if (o.validate_trace) {
    try {
      trace_verdict = validate_sim_trace(options.trace, jar, last_result);
    } catch (const std::exception& e) {
      fmt::print(stderr, "sim: --validate-trace: {}\n", e.what());
      if (!trace_dir.empty()) remove_work_dir(trace_dir);
      return 2;
    }
    if (!trace_dir.empty()) remove_work_dir(trace_dir);
  }
  // 2 when the trace could not be checked; otherwise 1 on either verdict.
  if (trace_verdict == TraceVerdict::Kind::error) return 2;
  return totals.violations == 0 && trace_verdict == TraceVerdict::Kind::valid ? 0 : 1;
}

}  // namespace

void add_sim_command(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<SimOptions>();
  auto* command = app.add_subcommand(
      "sim",
      "Run the deterministic simulator: clients, a virtual network with delays, drops, crashes\n"
      "and server restarts, around the engine, judged after every event against the reference\n"
      "model and from the clients' side. Without options: a swarm over seeds 1..1000.");
  auto* seed = command->add_option("--seed", options->seed, "run one seed")->check(whole(0, seed_max));
  command->add_option("--seeds", options->seeds, "run the seeds A..B")->check(seed_range_check())->excludes(seed);
  command->add_flag("--swarm", options->swarm, "draw the parameters themselves from each seed");
  command->add_option("--clients", options->clients, "simulated clients")->check(whole(1, 10'000));
  command->add_option("--keys", options->keys, "distinct keys")->check(whole(1, 1'000'000));
  command->add_option("--duration-ms", options->duration_ms, "simulated time during which requests are sent (a drain follows)")
      ->check(whole_signed(1, std::int64_t{1} << 40));
  command->add_option("--trace", options->trace,
                      "write the run as NDJSON (one seed; schema: sim/TRACE.md; --mode cluster: its cluster trace)")
      ->check(writable_file());
  command->add_option("--history", options->history,
                      "write what the clients sent and received as a history for check-history (one seed, --mode "
                      "lock or cluster; the run goes on past a violation)")
      ->check(writable_file());
  command->add_option("--timeline", options->timeline,
                      "draw per-key ownership over time as SVG (one seed; --mode cluster also draws the leader per "
                      "term and the Expire commits)")
      ->check(writable_file());
  command->add_flag("--check-determinism", options->check_determinism, "run each seed twice and compare the event hashes");
  command->add_option("--inject-bug", options->bug,
                      "--mode lock: an engine bug (lockstep serve --list-bugs) or restart-forgets-tokens; "
                      "--mode raft: a Raft bug; --mode cluster: a Raft or cluster bug")
      ->capture_default_str();
  command->add_flag("--no-model", options->no_model, "do not compare with the reference model (faster; the other checkers run)");
  command->add_option("--shrink-dir", options->shrink_dir, "where a failing seed's shrunk vector is written")
      ->check(writable_folder())
      ->capture_default_str();
  command->add_flag("--validate-trace", options->validate_trace,
                    "check the seed's trace with TLC against spec/TraceLockServer.tla, or spec/TraceLockCluster.tla "
                    "with --mode cluster (TLA2TOOLS_JAR names the jar)");
  command->add_option("--mode", options->mode,
                      "lock: the lock service on one server; raft: a Raft cluster of the append-only register; "
                      "cluster: the lock service on a Raft cluster")
      ->check(one_of({"lock", "raft", "cluster"}, "the modes", "lock, raft or cluster"))
      ->capture_default_str();
  command->add_flag("--skew-beyond-bound", options->skew_beyond_bound,
                    "--mode cluster: clock skew beyond what the lease-safety bound assumes (violations expected)");
  command->add_option("--nodes", options->nodes, "cluster size (--mode raft, cluster)")->check(whole(1, 9))->capture_default_str();
  command->callback([options, command, &run] {
    check_mode_options(*command, *options);
    run = [options] { return run_sim(*options); };
  });
}

}  // namespace lockstep::cli
