#include "runs/miss_rate_report.hpp"

#include <algorithm>
#include <chrono>
#include <tuple>

#include <fmt/format.h>

#include "runs/shard_summary.hpp"
#include "sim/history/miss_rate.hpp"

namespace lockstep::live {

namespace {

// The whole run as a command line: what every shard of it shares.
std::string miss_rate_run(const MissRateRequest& command) {
  std::string run = fmt::format("lockstep miss-rate --mode {} --seeds {}..{}", command.mode, command.seed_range.first,
                                command.seed_range.second);
  for (const auto& bug : command.bugs) run += " --bug " + bug;
  if (command.mode == "cluster") run += fmt::format(" --nodes {}", command.nodes);
  return run + fmt::format(" --budget-states {}", command.budget_states);
}

std::string seed_list(const std::vector<std::uint64_t>& seeds) {
  std::string text;
  for (std::size_t i = 0; i < seeds.size() && i < 12; ++i) text += (i ? " " : "") + std::to_string(seeds[i]);
  if (seeds.size() > 12) text += " ...";
  return text;
}

}  // namespace

std::vector<sim::SimBug> miss_rate_bugs(const std::string& mode) {
  return mode == "cluster" ? sim::cluster_mode_bugs() : sim::simple_mode_bugs();
}

int run_miss_rate(const MissRateRequest& command) {
  sim::MissRateOptions options;
  const SeedRange seeds = command.shard ? shard_seeds(command.seed_range, *command.shard) : command.seed_range;
  std::tie(options.first_seed, options.last_seed) = seeds;
  options.budget_states = command.budget_states;
  options.nodes = command.nodes;
  const auto all = miss_rate_bugs(command.mode);
  if (command.bugs.empty()) {
    options.bugs = all;
  } else {
    for (const auto& name : command.bugs) {
      const auto found = std::find_if(all.begin(), all.end(), [&](const sim::SimBug& bug) { return bug.name == name; });
      if (found == all.end()) {
        fmt::print(stderr, "lockstep miss-rate: --bug {} is not a bug of --mode {}\n", name, command.mode);
        return 2;
      }
      options.bugs.push_back(*found);
    }
  }
  MissRateSummary summary{command.mode, command.nodes, seeds, options.budget_states, {}, 0};
  print_miss_rate_header(summary);
  const auto started = std::chrono::steady_clock::now();
  summary.tallies = sim::measure_miss_rate(options);
  summary.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const int code = print_miss_rate_table(summary);
  if (!command.summary_json.empty()) {
    const ShardOf of{"miss-rate", miss_rate_run(command), command.seed_range, command.shard.value_or(Shard{})};
    if (const auto error = write_miss_rate_summary(command.summary_json, of, summary)) {
      fmt::print(stderr, "miss-rate: {}\n", *error);
      return 2;
    }
  }
  return code;
}

void print_miss_rate_header(const MissRateSummary& summary) {
  fmt::print("miss rate of the black-box checker on simulated histories: {} swarm seeds {}..{}, each run's clients' "
             "view\nchecked by check-history ({} configurations at most per history)\n",
             summary.mode == "cluster" ? fmt::format("cluster ({} nodes)", summary.nodes) : std::string("simple-mode"),
             summary.seeds.first, summary.seeds.second, summary.budget_states);
}

int print_miss_rate_table(const MissRateSummary& summary) {
  fmt::print("  {:<26} {:>5} {:>9} {:>11} {:>7} {:>6} {:>9} {:>9}\n", "bug", "seeds", "simulator", "its clients",
             "checker", "missed", "undecided", "miss rate");
  bool ok = true;
  std::uint64_t caught = 0, missed = 0, visible_caught = 0, visible_missed = 0, client_missed = 0, within_bounds = 0;
  std::uint64_t false_alarms = 0, clean_undecided = 0;
  std::vector<std::string> notes;
  for (const auto& tally : summary.tallies) {
    const auto& name = tally.bug.name;
    if (name == "none") {
      fmt::print("  {:<26} {:>5} {:>9} {:>11} {:>7} {:>6} {:>9} {:>9}\n", "none (clean)", tally.seeds, "-", "-", "-", "-",
                 tally.undecided, fmt::format("false alarms: {}", tally.false_alarms));
      false_alarms += tally.false_alarms;
      clean_undecided += tally.undecided;
      if (tally.false_alarms > 0) notes.push_back("false alarms on clean seeds: " + seed_list(tally.false_alarm_seeds));
      if (tally.undecided > 0) notes.push_back("clean seeds undecided: " + seed_list(tally.undecided_seeds));
      if (tally.false_alarms > 0 || tally.undecided > 0) ok = false;
      continue;
    }
    const auto not_caught = tally.missed + tally.undecided;
    const double rate = tally.simulator_caught == 0 ? 0.0 : 100.0 * static_cast<double>(not_caught) /
                                                               static_cast<double>(tally.simulator_caught);
    fmt::print("  {:<26} {:>5} {:>9} {:>11} {:>7} {:>6} {:>9} {:>8.1f}%\n", name, tally.seeds, tally.simulator_caught,
               tally.clients_caught, tally.checker_caught, tally.missed, tally.undecided, rate);
    caught += tally.checker_caught;
    missed += not_caught;
    if (const auto blind = sim::blind_in_real_time(tally.bug)) {
      notes.push_back(fmt::format("{}: {}: {}", name,
                                  tally.bug.cluster ? "not required of the checker" : "not visible in real time", *blind));
      continue;
    }
    visible_caught += tally.checker_caught;
    visible_missed += not_caught;
    for (const auto& seed : tally.missed_seeds) {
      // A seed that the simulator's clients'-side checker also reported was
      // visible from the clients: the black-box checker must report it.
      if (!seed.within_bounds.empty()) {
        ++within_bounds;
        notes.push_back(fmt::format("{} seed {}: passed, within the run's own bounds: {} ({})", name, seed.seed,
                                    seed.within_bounds, seed.simulator_checkers));
        continue;
      }
      if (seed.clients_saw_it) {
        ok = false;
        ++client_missed;
      }
      notes.push_back(fmt::format("{} seed {}: {}; the simulator saw it {} ({})", name, seed.seed,
                                  seed.undecided ? "undecided" : "passed",
                                  seed.clients_saw_it ? "from its clients too: a miss"
                                                      : "but its clients'-side checker did not",
                                  seed.simulator_checkers));
    }
  }
  for (const auto& note : notes) fmt::print("  {}\n", note);
  const auto rate = [](std::uint64_t miss, std::uint64_t hit) {
    return miss + hit == 0 ? 0.0 : 100.0 * static_cast<double>(miss) / static_cast<double>(miss + hit);
  };
  fmt::print("miss rate: {:.1f}% ({} of {} bug seeds the simulator caught); of the bugs real time can see: {:.1f}% "
             "({} of {}); seen by the simulator's clients and missed: {}{}\n",
             rate(missed, caught), missed, missed + caught, rate(visible_missed, visible_caught), visible_missed,
             visible_missed + visible_caught, client_missed,
             within_bounds == 0 ? std::string()
                                  : fmt::format(" (and {} passed within their run's own bounds)", within_bounds));
  fmt::print("false alarms: {}, clean seeds undecided: {}\n", false_alarms, clean_undecided);
  fmt::print("wall time: {:.1f} s\n", summary.wall_s);
  return ok ? 0 : 1;
}

}  // namespace lockstep::live
