#include "sim/miss_rate.hpp"

#include <fmt/format.h>

#include "model/history/checker.hpp"
#include "sim/history_recorder.hpp"
#include "sim/simulation.hpp"

namespace lockstep::sim {

std::vector<SimBug> simple_mode_bugs() {
  std::vector<SimBug> bugs{SimBug{"none", InjectedBug::none, ServerFault::none}};
  for (const auto& entry : bug_catalogue()) bugs.push_back(SimBug{std::string(entry.name), entry.bug, ServerFault::none});
  bugs.push_back(SimBug{server_fault_name(ServerFault::restart_forgets_tokens), InjectedBug::none,
                        ServerFault::restart_forgets_tokens});
  return bugs;
}

std::optional<std::string> blind_in_real_time(const SimBug& bug) {
  switch (bug.bug) {
    case InjectedBug::requests_before_timeouts:
    case InjectedBug::sweep_before_timeouts:
      // Both change only the order of what happens inside one instant: a
      // tester that sees real time cannot tell which came first.
      return std::string("it reorders what happens inside one instant, which real time cannot show; exact replay with "
                         "a test clock (conform --exec) catches it");
    default: return std::nullopt;
  }
}

std::vector<BugTally> measure_miss_rate(const MissRateOptions& options, const MissRateProgress& progress) {
  std::vector<BugTally> tallies;
  for (const auto& bug : options.bugs) {
    BugTally tally;
    tally.bug = bug;
    for (std::uint64_t seed = options.first_seed; seed <= options.last_seed; ++seed) {
      SimParams params = swarm_params(seed);
      params.bug = bug.bug;
      params.server_fault = bug.fault;
      SimpleHistoryObserver recorder(
          params, fmt::format("lockstep sim --seed {} --swarm{}", seed,
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
      const auto judged = history::check_history(recorder.recorder().history(), check);
      const bool simulator = result.violation_count > 0;
      bool clients = false;
      std::string checkers;
      for (const auto& [name, count] : result.violations_by_checker) {
        clients = clients || name == "client";
        checkers += fmt::format("{}{} {}", checkers.empty() ? "" : ", ", name, count);
      }
      ++tally.seeds;
      if (simulator) ++tally.simulator_caught;
      if (simulator && clients) ++tally.clients_caught;
      const MissedSeed missed{seed, judged.verdict == history::Verdict::unknown, clients, checkers};
      switch (judged.verdict) {
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
