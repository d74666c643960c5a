// `lockstep conform`: the options of the vector runner (live/conform.hpp).
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/limit_options.hpp"
#include "cli/validators.hpp"
#include "impl/bugs.hpp"
#include "live/conform.hpp"

namespace lockstep::cli {

void add_conform_command(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<live::ConformOptions>();
  auto* command = app.add_subcommand(
      "conform",
      "Replay conformance vectors (.vec files, format in docs/protocol.md, \"Conformance vectors\")\n"
      "against the engine or the reference model, or exactly against a live server with --exec;\n"
      "prints `ok FILE` or `FAIL FILE:LINE: ...` per file and exits 1 if any failed. Folders are\n"
      "searched for .vec files.");
  command->add_option("files", options->paths, "vector files or folders")->required()->check(readable_path());
  auto* against = command->add_option("--against", options->against, "the service to run the vectors against")
                      ->check(one_of({"engine", "model"}, "the in-process services", "engine or model"))
                      ->capture_default_str();
  std::vector<std::string> bugs{"none"};
  for (const auto& entry : bug_catalogue()) bugs.emplace_back(entry.name);
  auto* bug = command->add_option("--inject-bug", options->bug,
                                  "run a deliberately broken engine (a name from the engine's catalogue, listed by\n"
                                  "`lockstep serve --list-bugs`); the bugs are simple-mode ones, so mode=cluster\n"
                                  "vectors run without it")
                  ->check(one_of(bugs, "the engine's bug catalogue", "lockstep serve --list-bugs lists it"))
                  ->capture_default_str();
  command->add_option("--exec", options->exec,
                      fmt::format("replay against a live server with a test clock, one fresh server per vector, "
                                  "started by\nthis shell command (`exec` it: docs/protocol.md, \"Running under the "
                                  "tools\"); filled in: {{port}}\n(a free port) and the vector's limits\n{}\n(the "
                                  "server runs as it is: --against and --inject-bug do not apply)",
                                  limit_placeholders))
      ->excludes(against)
      ->excludes(bug);
  command->add_option("--exec-cluster", options->exec_cluster,
                      fmt::format("replay the mode=cluster vectors against a live cluster node with a test clock (a "
                                  "one-node\ncluster), one per vector, started by this command; filled in: {{port}}, "
                                  "{{etcd}} (the\nendpoints of --etcd, or of a one-member etcd started for the run), "
                                  "{{prefix}} (an etcd key\nprefix of its own for each vector) and the vector's "
                                  "limits\n{}",
                                  limit_placeholders))
      ->excludes(against)
      ->excludes(bug);
  command->add_option("--etcd", options->etcd, "etcd endpoints for {etcd} in --exec-cluster")
      ->needs(command->get_option("--exec-cluster"));
  command->add_option("--patience-ms", options->patience_ms,
                      "how long to wait for a live server's answer to a barrier")
      ->check(whole_signed(1, 3'600'000))
      ->capture_default_str();
  command->add_option("--junit", options->junit_path,
                      "also write JUnit XML here: one test case per vector file, failed or skipped as it was")
      ->check(writable_file());
  command->callback([options, &run] { run = [options] { return live::run_conform(*options); }; });
}

}  // namespace lockstep::cli
