// `lockstep sim`: the options of the simulator over one seed or a range of
// seeds, in simple mode, on a Raft cluster or as the lock service on one
// (runs/sim_run.hpp). What a mode cannot use is refused when parsed.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/shard_options.hpp"
#include "cli/validators.hpp"
#include "runs/sim_run.hpp"

namespace lockstep::cli {

namespace {

// What a mode cannot use is refused, not ignored: an option that changes
// nothing would make the user believe the run is what it is not.
void check_mode_options(const CLI::App& command, const live::SimRequest& o) {
  const auto refuse_in = [&](const char* option, const char* modes) {
    if (command.count(option) > 0) {
      throw CLI::ValidationError(option, fmt::format("is not used by --mode {} (it applies to --mode {})", o.mode, modes));
    }
  };
  if (o.mode == "lock") {
    refuse_in("--nodes", "raft and cluster");
    refuse_in("--skew-beyond-bound", "cluster");
  } else {
    for (const char* option : {"--no-model", "--shrink-dir"}) refuse_in(option, "lock");
  }
  if (o.mode == "raft") {
    for (const char* option : {"--trace", "--validate-trace", "--clients", "--keys", "--timeline", "--history"}) {
      refuse_in(option, "lock and cluster");
    }
    refuse_in("--skew-beyond-bound", "cluster");
  }
  const auto names = o.mode == "lock" ? sim::simple_bug_names() : sim::raft_swarm_bug_names(o.mode == "cluster");
  if (std::find(names.begin(), names.end(), o.simple.bug) == names.end()) {
    const char* catalogue = o.mode == "lock"   ? "the engine's bugs (lockstep serve --list-bugs) and the server faults"
                            : o.mode == "raft" ? "the Raft bugs"
                                               : "the Raft and cluster bugs";
    std::string listed;
    for (const auto& name : names) listed += (listed.empty() ? "" : ", ") + name;
    throw CLI::ValidationError("--inject-bug", fmt::format("'{}' is not a bug of --mode {}: {}: {}", o.simple.bug,
                                                           o.mode, catalogue, listed));
  }
  const auto& range = o.seed_range;
  const bool one_seed = o.seed.has_value() || (range && range->first == range->second);
  for (const char* option : {"--trace", "--timeline", "--validate-trace", "--history"}) {
    if (command.count(option) > 0 && !one_seed) throw CLI::ValidationError(option, "takes one seed: use --seed N");
  }
}

}  // namespace

void add_sim_command(CLI::App& app, std::function<int()>& run) {
  auto o = std::make_shared<live::SimRequest>();
  auto shard = std::make_shared<ShardOptions>();
  auto* command = app.add_subcommand(
      "sim",
      "Run the deterministic simulator: clients, a virtual network with delays, drops, crashes\n"
      "and server restarts, around the engine, judged after every event against the reference\n"
      "model and from the clients' side. Without options: a swarm over seeds 1..1000.");
  auto* seed = command->add_option("--seed", o->seed, "run one seed")->check(whole(0, seed_max));
  command->add_option("--seeds", o->seeds, "run the seeds A..B")->check(seed_range())->excludes(seed);
  command->add_flag("--swarm", o->simple.swarm, "draw the parameters themselves from each seed");
  command->add_option("--clients", o->simple.clients, "simulated clients")->check(whole(1, 10'000));
  command->add_option("--keys", o->simple.keys, "distinct keys")->check(whole(1, 1'000'000));
  command->add_option("--duration-ms", o->simple.duration_ms, "simulated time during which requests are sent (a drain follows)")
      ->check(whole_signed(1, std::int64_t{1} << 40));
  command->add_option("--trace", o->simple.trace,
                      "write the run as NDJSON (one seed; schema: sim/trace/TRACE.md; --mode cluster: its cluster trace)")
      ->check(writable_file());
  command->add_option("--history", o->simple.history,
                      "write what the clients sent and received as a history for check-history (one seed, --mode "
                      "lock or cluster; the run goes on past a violation)")
      ->check(writable_file());
  command->add_option("--timeline", o->simple.timeline,
                      "draw per-key ownership over time as SVG (one seed; --mode cluster also draws the leader per "
                      "term and the Expire commits)")
      ->check(writable_file());
  command->add_flag("--check-determinism", o->check_determinism, "run each seed twice and compare the event hashes");
  command->add_option("--inject-bug", o->simple.bug,
                      "--mode lock: an engine bug (lockstep serve --list-bugs) or a server fault; "
                      "--mode raft: a Raft bug; --mode cluster: a Raft or cluster bug")
      ->capture_default_str();
  command->add_flag("--no-model", o->simple.no_model, "do not compare with the reference model (faster; the other checkers run)");
  command->add_option("--shrink-dir", o->simple.shrink_dir, "where a failing seed's shrunk vector is written")
      ->check(writable_folder())
      ->capture_default_str();
  command->add_flag("--validate-trace", o->validate_trace,
                    "check the seed's trace with TLC against spec/TraceLockServer.tla, or spec/TraceLockCluster.tla "
                    "with --mode cluster (TLA2TOOLS_JAR names the jar)");
  command->add_option("--mode", o->mode,
                      "lock: the lock service on one server; raft: a Raft cluster of the append-only register; "
                      "cluster: the lock service on a Raft cluster")
      ->check(one_of({"lock", "raft", "cluster"}, "the modes", "lock, raft or cluster"))
      ->capture_default_str();
  command->add_flag("--skew-beyond-bound", o->raft.skew_beyond_bound,
                    "--mode cluster: clock skew beyond what the lease-safety bound assumes (violations expected)");
  command->add_option("--nodes", o->raft.nodes, "cluster size (--mode raft, cluster)")->check(whole(1, 9))->capture_default_str();
  add_shard_options(*command, *shard);
  command->callback([o, shard, command, &run] {
    if (!o->seeds.empty()) o->seed_range = parse_seed_range(o->seeds);
    check_mode_options(*command, *o);
    if (o->seed && !shard->shard.empty()) throw CLI::ValidationError("--shard", "splits a range of seeds: use --seeds A..B");
    o->shard = check_shard(*shard, o->seed_range.value_or(live::default_sim_seeds(o->mode)));
    o->summary_json = shard->summary_json;
    run = [o] { return live::run_sim(*o); };
  });
}

}  // namespace lockstep::cli
