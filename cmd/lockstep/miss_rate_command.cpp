// `lockstep miss-rate`: the options of the measure of what the black-box
// checker misses of what the simulator catches (runs/miss_rate_report.hpp).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/shard_options.hpp"
#include "cli/validators.hpp"
#include "runs/miss_rate_report.hpp"
#include "sim/history/miss_rate.hpp"

namespace lockstep::cli {

namespace {

// The seeds as given, read into the request once they have passed.
struct MissRateCommand {
  live::MissRateRequest request;
  std::string seeds = "1..20";
  ShardOptions shard;
};

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

}  // namespace

void add_miss_rate_command(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<MissRateCommand>();
  auto* command = app.add_subcommand(
      "miss-rate",
      "Runs the simulator on swarm seeds, clean and with each catalogued bug, writes what the clients\n"
      "saw as a history and checks it with the black-box checker: prints, per bug, the seeds the\n"
      "simulator caught, those the checker caught too, and the miss rate. Exit 0 when every clean\n"
      "seed conforms and every bug real time can see is caught wherever the simulator caught it.");
  command->add_option("--mode", options->request.mode,
                      "simple: the simulator of one server and simple mode's catalogue; cluster: the cluster "
                      "simulator (sim --mode cluster) and the cluster catalogue, histories read as a cluster's")
      ->check(one_of({"simple", "cluster"}, "the modes", "simple or cluster"))
      ->capture_default_str();
  command->add_option("--seeds", options->seeds, "swarm seeds A..B")->check(seed_range(seeds_max))->capture_default_str();
  command->add_option("--bug", options->request.bugs, "only this bug (repeatable; `none` for the clean runs)")
      ->check(one_of(bug_names(), "the bugs",
                     "lockstep serve --list-bugs, none and restart-forgets-tokens; with --mode cluster the cluster "
                     "catalogue (lockstep sim --mode cluster --help)"));
  command->add_option("--nodes", options->request.nodes, "cluster size (--mode cluster)")->check(whole(3, 9))->capture_default_str();
  command->add_option("--budget-states", options->request.budget_states,
                      "configurations the checker may step per history (default 3000000; with --mode cluster "
                      "20000000, check-history's: a cluster's history is longer, its run going on to heal)")
      ->check(whole(1, std::uint64_t{1} << 40));
  add_shard_options(*command, options->shard);
  command->callback([options, command, &run] {
    if (options->request.mode != "cluster" && command->count("--nodes") > 0) {
      throw CLI::ValidationError("--nodes", "is not used by --mode simple (it applies to --mode cluster)");
    }
    if (options->request.mode == "cluster" && command->count("--budget-states") == 0) options->request.budget_states = 20'000'000;
    options->request.seed_range = *parse_seed_range(options->seeds, seeds_max);  // checked when parsed
    options->request.shard = check_shard(options->shard, options->request.seed_range);
    options->request.summary_json = options->shard.summary_json;
    run = [options] { return live::run_miss_rate(options->request); };
  });
}

}  // namespace lockstep::cli
