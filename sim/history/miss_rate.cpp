#include "sim/history/miss_rate.hpp"

#include <fmt/format.h>

#include <map>

#include "impl/bugs.hpp"
#include "check/checker.hpp"
#include "sim/cluster/simulation.hpp"
#include "sim/history/recorder.hpp"
#include "sim/simple/simulation.hpp"

namespace lockstep::sim {

std::vector<SimBug> simple_mode_bugs() {
  std::vector<SimBug> bugs{SimBug{"none", InjectedBug::none, ServerFault::none}};
  for (const auto& entry : bug_catalogue()) bugs.push_back(SimBug{std::string(entry.name), entry.bug, ServerFault::none});
  bugs.push_back(SimBug{server_fault_name(ServerFault::restart_forgets_tokens), InjectedBug::none,
                        ServerFault::restart_forgets_tokens});
  return bugs;
}

namespace {

// Why a cluster bug cannot be seen from the clients' side of a simulated
// run, or nothing when it can (DESIGN.md of check, "Miss rate").
std::optional<std::string> blind_from_clients(cluster::ClusterBug bug) {
  switch (bug) {
    case cluster::ClusterBug::expire_without_token_check:
      // A stale Expire ends the new holder's lease early; the clients see
      // an early end only past the clock allowance.
      return std::string("a lease ended early shows only when the lease is longer than the clock allowance 2*S and an "
                         "answer shows the key taken over before the lease's end less 2*S; the swarm draws S up to "
                         "200 ms and leases from 10 ms, so many leases end within the allowance");
    case cluster::ClusterBug::heap_not_rebuilt:
      return std::string("it makes Expires and Timeouts late, which fails a run only past a stated max_lateness_ms; "
                         "the simulator's histories state the lateness their run really had, and with this bug that "
                         "is the bug's own lateness");
    case cluster::ClusterBug::lifo_expire_handoff:
      return std::string("FIFO between two waiters shows only when one was certainly queued before the other; the "
                         "simulator's clients send one request at a time with no request behind a waiting acquire to "
                         "bound when it was queued (the fuzzer's probes do)");
    case cluster::ClusterBug::restore_forgets_sessions:
      return std::string("the replicas disagree after a snapshot is restored; a client sees it only when the restored "
                         "node leads and applies a retry a second time in a way no order of the session's sends "
                         "explains");
    default: return std::nullopt;
  }
}

}  // namespace

std::vector<SimBug> cluster_mode_bugs() {
  std::vector<SimBug> bugs{SimBug{"none", InjectedBug::none, ServerFault::none, true, cluster::ClusterBug::none}};
  for (const auto& entry : cluster::cluster_bug_catalogue()) {
    bugs.push_back(SimBug{std::string(entry.name), InjectedBug::none, ServerFault::none, true, entry.bug});
  }
  return bugs;
}

std::optional<std::string> blind_in_real_time(const SimBug& bug) {
  if (bug.cluster) return blind_from_clients(bug.cluster_bug);
  // The catalogue says which bugs change only the order of what happens
  // inside one instant: a tester that sees real time cannot tell which came
  // first.
  for (const auto& entry : bug_catalogue()) {
    if (entry.bug == bug.bug && entry.reach == BugReach::exact_replay) {
      return std::string("it reorders what happens inside one instant, which real time cannot show; exact replay "
                         "with a test clock (conform --exec) catches it");
    }
  }
  return std::nullopt;
}

namespace {

// What the simulator and the black-box checker said of one seed.
struct SeedVerdicts {
  bool simulator = false;
  bool clients = false;     // the simulator's clients'-side checker reported
  std::string checkers;     // the simulator's checkers that reported, with counts
  history::Verdict checker = history::Verdict::conforms;
  std::string within_bounds;  // MissedSeed::within_bounds
};

SeedVerdicts run_cluster_seed(const MissRateOptions& options, const SimBug& bug, std::uint64_t seed) {
  auto params = cluster_swarm_params(seed, options.nodes);
  params.bug = bug.cluster_bug;
  ClusterHistoryRecorder recorder(params, fmt::format("lockstep sim --mode cluster --nodes {} --seed {} --swarm{}",
                                                      options.nodes, seed,
                                                      bug.name == "none" ? std::string() : " --inject-bug " + bug.name));
  ClusterRunOptions run;
  run.clients = &recorder;
  // The whole run, as its clients saw it: past the simulator's first
  // violation, to where they see its effects.
  run.stop_at_first_violation = false;
  const auto result = run_cluster_simulation(params, run);
  recorder.finish(result.raft.stats.simulated_until, result.lateness_ms);
  history::CheckOptions check;
  check.budget_states = options.budget_states;
  // check-history's own memory limit (1 GiB): a bug's history can make one
  // instant branch without end (a key whose tokens repeat), and a quarter
  // of it ended such a run sooner, but clean seeds 5 and 6 hold 281 and
  // 323 MiB at their widest instant (each configuration carries the matrix
  // of its instants' constraints), and a quarter left them undecided.
  check.memory_max_bytes = std::uint64_t{1} << 30;
  check.shrink = false;
  SeedVerdicts verdicts;
  verdicts.checker = history::check_history(recorder.history(), check).verdict;
  verdicts.simulator = result.raft.violation_count > 0;
  std::map<std::string, std::uint64_t> by_checker;  // of the violations kept (the first 20)
  for (const auto& violation : result.raft.violations) {
    ++by_checker[violation.checker];
    // The clients saw a wrong answer (not merely an answer sent before its
    // command committed, which turned out right: no client can tell when a
    // command committed).
    verdicts.clients = verdicts.clients || (violation.checker == "linearizability" &&
                                            violation.what.find("before its command was committed") == std::string::npos);
  }
  for (const auto& [name, count] : by_checker) {
    verdicts.checkers += fmt::format("{}{} {}", verdicts.checkers.empty() ? "" : ", ", name, count);
  }
  // Passed, though the clients saw a wrong answer: if no explanation is
  // left once the cluster may not be late at all, their view is that of a
  // correct cluster late by no more than this run really was somewhere (the
  // history's maximum is one figure for the whole run), which no black box
  // can tell from the bug. If one is left on time, but none once the clocks
  // must agree too (no allowance), their view is that of a correct cluster
  // on time whose clocks are apart by no more than this run's bound S: the
  // contract lets such a cluster expire a lease up to 2·S early, and no
  // black box can tell that from the bug either.
  if (verdicts.clients && verdicts.checker == history::Verdict::conforms) {
    auto on_time = recorder.history();
    on_time.header.max_lateness_ms = lateness_margin_ms;
    if (history::check_history(on_time, check).verdict == history::Verdict::violation) {
      verdicts.within_bounds = fmt::format(
          "the clients' view needs lateness, and the run really was {} ms late ({}); a correct cluster that late "
          "answers what they saw",
          result.lateness_ms, result.lateness_what);
    } else {
      auto agreed_clocks = on_time;
      agreed_clocks.header.clock_allowance_ms = 0;
      if (history::check_history(agreed_clocks, check).verdict == history::Verdict::violation) {
        verdicts.within_bounds = fmt::format(
            "the clients' view needs the clock allowance, and the run's clocks were allowed {} ms apart (S; the "
            "allowance is 2·S = {} ms); a correct cluster on time with clocks that far apart answers what they saw",
            params.skew_bound_ms.value, on_time.header.clock_allowance_ms);
      }
    }
  }
  return verdicts;
}

SeedVerdicts run_simple_seed(const MissRateOptions& options, const SimBug& bug, std::uint64_t seed) {
  SimParams params = swarm_params(seed);
  params.bug = bug.bug;
  params.server_fault = bug.fault;
  SimpleHistoryObserver recorder(params, fmt::format("lockstep sim --seed {} --swarm{}", seed,
                                                     bug.name == "none" ? std::string() : " --inject-bug " + bug.name));
  RunOptions run;
  run.observers.push_back(&recorder);
  // The whole run, as a tester would see it: past the simulator's first
  // violation, to where the clients see its effects.
  run.stop_at_first_violation = false;
  const auto result = run_simulation(params, run);
  recorder.recorder().finish(result.stats.simulated_until);
  history::CheckOptions check;
  check.budget_states = options.budget_states;
  check.shrink = false;
  SeedVerdicts verdicts;
  verdicts.checker = history::check_history(recorder.recorder().history(), check).verdict;
  verdicts.simulator = result.violation_count > 0;
  for (const auto& [name, count] : result.violations_by_checker) {
    verdicts.clients = verdicts.clients || name == "client";
    verdicts.checkers += fmt::format("{}{} {}", verdicts.checkers.empty() ? "" : ", ", name, count);
  }
  return verdicts;
}

}  // namespace

std::vector<BugTally> measure_miss_rate(const MissRateOptions& options, const MissRateProgress& progress) {
  std::vector<BugTally> tallies;
  for (const auto& bug : options.bugs) {
    BugTally tally;
    tally.bug = bug;
    for (std::uint64_t seed = options.first_seed; seed <= options.last_seed; ++seed) {
      const auto seen = bug.cluster ? run_cluster_seed(options, bug, seed) : run_simple_seed(options, bug, seed);
      const bool simulator = seen.simulator;
      const bool clients = seen.clients;
      const std::string& checkers = seen.checkers;
      ++tally.seeds;
      if (simulator) ++tally.simulator_caught;
      if (simulator && clients) ++tally.clients_caught;
      const MissedSeed missed{seed, seen.checker == history::Verdict::unknown, clients, checkers, seen.within_bounds};
      switch (seen.checker) {
        case history::Verdict::violation:
          if (simulator) ++tally.checker_caught;
          if (!simulator) ++tally.checker_only;
          if (bug.name == "none") {
            ++tally.false_alarms;
            tally.false_alarm_seeds.push_back(seed);
          }
          break;
        case history::Verdict::unknown:
          if (simulator || bug.name == "none") ++tally.undecided;
          if (bug.name == "none") tally.undecided_seeds.push_back(seed);
          if (simulator && bug.name != "none") tally.missed_seeds.push_back(missed);
          break;
        case history::Verdict::conforms:
          if (simulator) {
            ++tally.missed;
            tally.missed_seeds.push_back(missed);
          }
          break;
      }
      if (progress) progress(bug, seed);
    }
    tallies.push_back(std::move(tally));
  }
  return tallies;
}

}  // namespace lockstep::sim
