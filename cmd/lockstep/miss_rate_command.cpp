// `lockstep miss-rate`: the share of bug seeds the simulator catches that
// the black-box checker misses, on swarm seeds of a range (sim/history/miss_rate.*
// runs them; this driver parses options and prints the table). Exit 0 when
// every clean seed conforms and every bug seed the simulator's own
// clients'-side checker reports (so visible from the clients) is reported
// by the black-box checker too; each other missed seed is listed with the
// simulator's checkers that saw it. 1 otherwise.
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/validators.hpp"
#include "impl/decimal.hpp"
#include "sim/history/miss_rate.hpp"

namespace lockstep::cli {

namespace {

struct MissRateCommand {
  std::string mode = "simple";
  std::string seeds = "1..20";
  std::vector<std::string> bugs;
  std::uint64_t budget_states = 3'000'000;
  std::uint32_t nodes = 3;
};

std::vector<sim::SimBug> bugs_of(const std::string& mode) {
  return mode == "cluster" ? sim::cluster_mode_bugs() : sim::simple_mode_bugs();
}

std::string seed_list(const std::vector<std::uint64_t>& seeds) {
  std::string text;
  for (std::size_t i = 0; i < seeds.size() && i < 12; ++i) text += (i ? " " : "") + std::to_string(seeds[i]);
  if (seeds.size() > 12) text += " ...";
  return text;
}

// At most this many seeds in one run: a range past it is a typo, not a plan.
constexpr std::uint64_t seeds_max = 100'000;

std::vector<std::string> bug_names() {
  std::vector<std::string> names;
  for (const auto& bug : sim::simple_mode_bugs()) names.push_back(bug.name);
  for (const auto& bug : sim::cluster_mode_bugs()) {
    if (std::find(names.begin(), names.end(), bug.name) == names.end()) names.push_back(bug.name);
  }
  return names;
}

int run_miss_rate(const MissRateCommand& command) {
  sim::MissRateOptions options;
  std::tie(options.first_seed, options.last_seed) = *parse_seed_range(command.seeds, seeds_max);  // checked when parsed
  options.budget_states = command.budget_states;
  options.nodes = command.nodes;
  const auto all = bugs_of(command.mode);
  if (command.bugs.empty()) {
    options.bugs = all;
  } else {
    for (const auto& name : command.bugs) {
      const auto found = std::find_if(all.begin(), all.end(), [&](const sim::SimBug& bug) { return bug.name == name; });
      if (found == all.end()) {
        fmt::print(stderr, "miss-rate: --bug {} is not a bug of --mode {}\n", name, command.mode);
        return 2;
      }
      options.bugs.push_back(*found);
    }
  }
  fmt::print("miss rate of the black-box checker on simulated histories: {} swarm seeds {}..{}, each run's clients' "
             "view\nchecked by check-history ({} configurations at most per history)\n",
             command.mode == "cluster" ? fmt::format("cluster ({} nodes)", command.nodes) : std::string("simple-mode"),
             options.first_seed, options.last_seed, options.budget_states);
  const auto started = std::chrono::steady_clock::now();
  const auto tallies = sim::measure_miss_rate(options);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  fmt::print("  {:<26} {:>5} {:>9} {:>11} {:>7} {:>6} {:>9} {:>9}\n", "bug", "seeds", "simulator", "its clients",
             "checker", "missed", "undecided", "miss rate");
  bool ok = true;
  std::uint64_t caught = 0, missed = 0, visible_caught = 0, visible_missed = 0, client_missed = 0, within_lateness = 0;
  std::uint64_t false_alarms = 0, clean_undecided = 0;
  std::vector<std::string> notes;
  for (const auto& tally : tallies) {
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
      if (!seed.within_lateness.empty()) {
        ++within_lateness;
        notes.push_back(fmt::format("{} seed {}: passed, within the run's own lateness: {} ({})", name, seed.seed,
                                    seed.within_lateness, seed.simulator_checkers));
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
             within_lateness == 0 ? std::string()
                                  : fmt::format(" (and {} passed within their run's own lateness)", within_lateness));
  fmt::print("false alarms: {}, clean seeds undecided: {}\n", false_alarms, clean_undecided);
  fmt::print("wall time: {:.1f} s\n", wall_s);
  return ok ? 0 : 1;
}

}  // namespace

void add_miss_rate_command(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<MissRateCommand>();
  auto* command = app.add_subcommand(
      "miss-rate",
      "Runs the simulator on swarm seeds, clean and with each catalogued bug, writes what the clients\n"
      "saw as a history and checks it with the black-box checker: prints, per bug, the seeds the\n"
      "simulator caught, those the checker caught too, and the miss rate. Exit 0 when every clean\n"
      "seed conforms and every bug real time can see is caught wherever the simulator caught it.");
  command->add_option("--mode", options->mode,
                      "simple: the simulator of one server and simple mode's catalogue; cluster: the cluster "
                      "simulator (sim --mode cluster) and the cluster catalogue, histories read as a cluster's")
      ->check(one_of({"simple", "cluster"}, "the modes", "simple or cluster"))
      ->capture_default_str();
  command->add_option("--seeds", options->seeds, "swarm seeds A..B")->check(seed_range(seeds_max))->capture_default_str();
  command->add_option("--bug", options->bugs, "only this bug (repeatable; `none` for the clean runs)")
      ->check(one_of(bug_names(), "the bugs",
                     "lockstep serve --list-bugs, none and restart-forgets-tokens; with --mode cluster the cluster "
                     "catalogue (lockstep sim --mode cluster --help)"));
  command->add_option("--nodes", options->nodes, "cluster size (--mode cluster)")->check(whole(3, 9))->capture_default_str();
  command->add_option("--budget-states", options->budget_states,
                      "configurations the checker may step per history (default 3000000; with --mode cluster "
                      "20000000, check-history's: a cluster's history is longer, its run going on to heal)")
      ->check(whole(1, std::uint64_t{1} << 40));
  command->callback([options, command, &run] {
    if (options->mode != "cluster" && command->count("--nodes") > 0) {
      throw CLI::ValidationError("--nodes", "is not used by --mode simple (it applies to --mode cluster)");
    }
    if (options->mode == "cluster" && command->count("--budget-states") == 0) options->budget_states = 20'000'000;
    run = [options] { return run_miss_rate(*options); };
  });
}

}  // namespace lockstep::cli
