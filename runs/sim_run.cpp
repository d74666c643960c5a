#include "runs/sim_run.hpp"

#include <unistd.h>

#include <chrono>
#include <tuple>

#include <fmt/format.h>

#include "live/process.hpp"
#include "runs/shard_summary.hpp"
#include "runs/tlc/tlc_runner.hpp"

namespace lockstep::live {

namespace {

// The whole run as a command line, every option that changes what a seed
// does: what the shards of one run share.
std::string sim_run(const SimRequest& o, SeedRange seeds) {
  const auto& s = o.simple;
  std::string run = fmt::format("lockstep sim --mode {}", o.mode);
  if (o.mode != "lock") run += fmt::format(" --nodes {}", o.raft.nodes);
  run += fmt::format(" --seeds {}..{}", seeds.first, seeds.second);
  if (s.swarm) run += " --swarm";
  if (s.clients) run += fmt::format(" --clients {}", *s.clients);
  if (s.keys) run += fmt::format(" --keys {}", *s.keys);
  if (s.duration_ms) run += fmt::format(" --duration-ms {}", *s.duration_ms);
  if (s.bug != "none") run += " --inject-bug " + s.bug;
  if (s.no_model) run += " --no-model";
  if (o.raft.skew_beyond_bound) run += " --skew-beyond-bound";
  if (o.check_determinism) run += " --check-determinism";
  return run;
}

}  // namespace

SeedRange default_sim_seeds(const std::string& mode) { return {1, mode == "lock" ? 1000 : 100}; }

int run_sim(SimRequest o) {
  sim::SwarmConfig config;
  const bool raft_modes = o.mode != "lock";
  // The default run, no seed named: a swarm that ends within a minute.
  SeedRange seeds = default_sim_seeds(o.mode);
  if (o.seed) {
    seeds = {*o.seed, *o.seed};
  } else if (!o.seeds.empty()) {
    seeds = *o.seed_range;  // checked when parsed
  } else {
    o.simple.swarm = true;
  }
  std::tie(config.first_seed, config.last_seed) = o.shard ? shard_seeds(seeds, *o.shard) : seeds;
  config.check_determinism = o.check_determinism;
  config.progress = isatty(STDOUT_FILENO) != 0;
  const auto started = std::chrono::steady_clock::now();
  config.wall_seconds = [started] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  if (raft_modes) {
    o.raft.cluster = o.mode == "cluster";
    o.raft.swarm = o.simple.swarm;
    o.raft.clients = o.simple.clients;
    o.raft.keys = o.simple.keys;
    o.raft.duration_ms = o.simple.duration_ms;
    o.raft.bug = o.simple.bug;
    o.raft.timeline = o.simple.timeline;
    o.raft.trace = o.simple.trace;
    o.raft.history = o.simple.history;
  }
  std::string jar;
  std::optional<live::TemporaryFolder> trace_dir;  // when the trace is only for TLC
  std::string& trace = raft_modes ? o.raft.trace : o.simple.trace;
  if (o.validate_trace) {
    const auto lookup = tlc::find_tla2tools_jar();
    if (!lookup.jar) {
      fmt::print(stderr, "lockstep sim: --validate-trace needs TLC: {}\n", lookup.problem);
      return 2;
    }
    jar = *lookup.jar;
    if (trace.empty()) {
      auto made = live::TemporaryFolder::create("lockstep-trace");
      if (!made) {
        fmt::print(stderr, "lockstep sim: --validate-trace: cannot create a temporary directory for the trace\n");
        return 2;
      }
      trace_dir.emplace(std::move(*made));
      trace = trace_dir->path() + "/trace.ndjson";
    }
    o.simple.run_to_end = true;
  }
  sim::SwarmOutcome outcome;
  if (raft_modes) {
    outcome = sim::run_raft_swarm(o.raft, config);
  } else {
    outcome = sim::run_simple_swarm(o.simple, config);
  }
  if (!o.summary_json.empty()) {
    const ShardOf of{"sim", sim_run(o, seeds), seeds, o.shard.value_or(Shard{})};
    if (const auto error = write_sim_summary(o.summary_json, of, outcome.summary_title, o.check_determinism,
                                             outcome.totals)) {
      fmt::print(stderr, "sim: {}\n", *error);
      return 2;
    }
  }
  if (!o.validate_trace || outcome.exit_code == 2) return outcome.exit_code;
  auto verdict = tlc::TraceVerdict::Kind::error;
  try {
    verdict = tlc::validate_run_trace(trace, jar, outcome.violations, outcome.last_seed_first_violation_ms);
  } catch (const std::exception& e) {
    fmt::print(stderr, "lockstep sim: --validate-trace: {}\n", e.what());
  }
  // 2 when the trace could not be checked; otherwise 1 on either verdict.
  if (verdict == tlc::TraceVerdict::Kind::error) return 2;
  return outcome.exit_code == 0 && verdict == tlc::TraceVerdict::Kind::valid ? 0 : 1;
}

}  // namespace lockstep::live
