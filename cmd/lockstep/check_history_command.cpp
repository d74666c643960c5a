// `lockstep check-history`: the options of the verdict on a recorded
// history (live/check_history.hpp).
#include <memory>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/history_output_options.hpp"
#include "cli/validators.hpp"
#include "live/check_history.hpp"

namespace lockstep::cli {

void add_check_history_command(CLI::App& app, std::function<int()>& run) {
  auto check = std::make_shared<live::CheckHistoryRequest>();
  auto* command = app.add_subcommand(
      "check-history",
      "Check a recorded history (NDJSON, schema lockstep.history/1, docs/protocol.md) against the\n"
      "protocol; its first line gives the target's limits, the tolerance and the mode (simple or\n"
      "cluster). Exit 0 conforms, 1 a violation, 2 unknown or unreadable.");
  command->add_option("file", check->file, "the history file")->required()->check(readable_file());
  command->add_option("--mode", check->mode,
                      "read the history by simple mode's rules or a cluster's (no sweep, late Expires and Timeouts, "
                      "sessions), whatever its header says")
      ->check(one_of({"simple", "cluster"}, "the modes", "simple or cluster"));
  command->add_option("--clock-allowance-ms", check->clock_allowance_ms,
                      "cluster mode: how far apart two node clocks may be (2*S): an Expire or a Timeout may come that "
                      "much before its deadline")
      ->check(whole_signed(0, 3'600'000));
  command->add_option("--max-lateness-ms", check->max_lateness_ms,
                      "cluster mode: fail when an Expire, a Timeout or a caused answer comes later than this past its "
                      "deadline and the clock allowance (without it, lateness is only reported)")
      ->check(whole_signed(0, 86'400'000));
  command->add_flag("--reference", check->reference,
                    "judge by the slow reference checker instead (a history of at most 4 connections, 2 keys, 12 "
                    "requests and 2 s; past that, exit 2)");
  add_output_options(*command, check->outputs);
  command->callback([check, &run] { run = [check] { return live::check_history_file(*check); }; });
}

}  // namespace lockstep::cli
