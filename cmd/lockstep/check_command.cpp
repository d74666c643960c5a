// `lockstep check`: the options of the exhaustive explorer of the
// reference model under a TLC config (runs/spec_check.hpp).
#include <limits>
#include <memory>

#include "cmd/lockstep/commands.hpp"
#include "cli/validators.hpp"
#include "runs/spec_check.hpp"

namespace lockstep::cli {

void add_check_command(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<live::SpecCheckOptions>();
  auto* command = app.add_subcommand(
      "check",
      "Explore the reference model exhaustively (breadth-first) under the bounds of a TLC config\n"
      "of spec/LockServer.tla, checking the spec's invariants and step properties. Prints the\n"
      "distinct-state count, which must equal TLC's on the same config. Exits 1 on a violation,\n"
      "after printing the shortest counter-example as a trace and as a .vec.");
  command->add_option("--cfg", options->config_path,
                      "a TLC config of the simple-mode spec, e.g. spec/MCsweep.cfg (the cluster configs are "
                      "TLC's only)")
      ->required()
      ->check(readable_file());
  command->add_option("--depth", options->steps_max,
                      "explore behaviours of at most this many steps (default: all)")
      ->check(whole(0, std::numeric_limits<int>::max()));
  command->add_option("--emit-vectors", options->emit_directory,
                      "write the first behaviour found to every distinct state as a .vec here")
      ->check(writable_folder());
  command->add_option("--inject-bug", options->bug,
                      "explore a broken model instead of the config's: none, lifo-handoff or "
                      "sweep-before-timeouts")
      ->check(one_of({"none", "lifo-handoff", "sweep-before-timeouts"}, "the bugs the model injects",
                     "none, lifo-handoff, sweep-before-timeouts"));
  command->add_option("--counterexample", options->counterexample_path,
                      "also write the counter-example's .vec to this file")
      ->check(writable_file());
  command->callback([options, &run] { run = [options] { return live::run_spec_check(*options); }; });
}

}  // namespace lockstep::cli
