#include "live/sim_run.hpp"

#include <unistd.h>

#include <chrono>
#include <tuple>

#include <fmt/format.h>

#include "live/process.hpp"
#include "live/tlc/tlc_runner.hpp"

namespace lockstep::live {

int run_sim(SimRequest o) {
  sim::SwarmConfig config;
  const bool raft_modes = o.mode != "lock";
  // The default run, no seed named: a swarm that ends within a minute.
  config.first_seed = 1;
  config.last_seed = raft_modes ? 100 : 1000;
  if (o.seed) {
    config.first_seed = config.last_seed = *o.seed;
  } else if (!o.seeds.empty()) {
    std::tie(config.first_seed, config.last_seed) = *o.seed_range;  // checked when parsed
  } else {
    o.simple.swarm = true;
  }
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
