// `lockstep serve`: the engine behind a TCP server (impl/server).
#include <memory>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/limit_options.hpp"
#include "impl/server/server.hpp"

namespace lockstep::cli {

namespace {

struct ServeOptions {
  ServerConfig config;
  std::string bug = "none";
  bool list_bugs = false;
};

int run_serve(ServeOptions& options) {
  if (options.list_bugs) {
    for (const auto& entry : bug_catalogue()) fmt::print("{:<26} {}\n", entry.name, entry.story);
    return 0;
  }
  const auto bug = bug_from_name(options.bug);
  if (!bug) {
    fmt::print(stderr, "serve: unknown bug '{}' (see --list-bugs)\n", options.bug);
    return 2;
  }
  options.config.bug = *bug;
  return run_server(options.config);
}

}  // namespace

void add_serve_command(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<ServeOptions>();
  auto& c = options->config;
  auto* command = app.add_subcommand(
      "serve",
      "Serve the lock protocol over TCP: one thread, one event loop, every resource bounded.\n"
      "Logs one line at start and one at stop; SIGTERM or SIGINT stops it (exit 0).");
  command->add_option("--host", c.host, "IPv4 address to listen on")->capture_default_str();
  command->add_option("--port", c.port, "TCP port (0: any free port, printed at start)")->capture_default_str();
  add_limit_options(*command, c.limits);
  command->add_option("--max-connections", c.max_connections,
                      "connections at most; past it a new one is answered E and closed")
      ->capture_default_str();
  command->add_option("--max-output-bytes", c.max_output_bytes,
                      "responses held for a client that does not read before it is closed")
      ->capture_default_str();
  command->add_option("--lines-per-turn", c.lines_per_turn, "lines of one connection handled per loop turn")
      ->capture_default_str();
  command->add_flag("--test-clock", c.test_clock,
                    "a clock that starts at 0 and moves only on `C <now_ms>`; `X` ends a connection "
                    "(CONTRACT.md, \"Live targets\")");
  command->add_option("--state-file", c.state_file,
                      "file that keeps the token mark, so tokens stay increasing across restarts");
  command->add_option("--inject-bug", options->bug, "serve a deliberately broken engine")->capture_default_str();
  command->add_flag("--list-bugs", options->list_bugs, "list the catalogue of injectable bugs and exit");
  command->add_flag("--quiet", c.quiet, "no start and stop lines");
  command->callback([options, &run] { run = [options] { return run_serve(*options); }; });
}

}  // namespace lockstep::cli
