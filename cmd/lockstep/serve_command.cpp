// `lockstep serve`: the engine behind a TCP server (impl/server).
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/limit_options.hpp"
#include "cmd/lockstep/validators.hpp"
#include "impl/protocol.hpp"
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
  options.config.bug = bug_from_name(options.bug).value_or(InjectedBug::none);
  return run_server(options.config);
}

// The state file is read at start and rewritten as the token mark grows:
// it must be a file, readable if it exists, in a folder that can be written.
CLI::Validator state_file_check() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        auto why = why_not_writable_file(path);
        if (why.empty() && std::filesystem::exists(path)) why = why_not_readable_file(path);
        return why;
      },
      "a file that can be read and written", "state file");
}

std::vector<std::string> engine_bug_names() {
  std::vector<std::string> names{"none"};
  for (const auto& entry : bug_catalogue()) names.emplace_back(entry.name);
  return names;
}

}  // namespace

void add_serve_command(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<ServeOptions>();
  auto& c = options->config;
  auto* command = app.add_subcommand(
      "serve",
      "Serve the lock protocol (docs/protocol.md) over TCP: one thread, one event loop, every\n"
      "resource bounded. Logs one line at start and one at stop; SIGTERM or SIGINT stops it\n"
      "(exit 0). A configuration it cannot run with is refused at start (exit 2).");
  command->add_option("--host", c.host, "IPv4 address to listen on")->check(CLI::ValidIPV4)->capture_default_str();
  command->add_option("--port", c.port, "TCP port (0: any free port, printed at start)")
      ->check(whole(0, 65535))
      ->capture_default_str();
  add_limit_options(*command, c.limits);
  command->add_option("--max-connections", c.max_connections,
                      "connections at most; past it a new one is answered E and closed")
      ->check(whole(1, 1'000'000))
      ->capture_default_str();
  command->add_option("--max-output-bytes", c.max_output_bytes,
                      "responses held for a client that does not read before it is closed (at least the "
                      "longest response line)")
      ->check(whole(response_line_bytes_max, std::uint64_t{1} << 30))
      ->capture_default_str();
  command->add_option("--lines-per-turn", c.lines_per_turn, "lines of one connection handled per loop turn")
      ->check(whole(1, 1'000'000))
      ->capture_default_str();
  command->add_flag("--test-clock", c.test_clock,
                    "a clock that starts at 0 and moves only on `C <now_ms>`; `X` ends a connection "
                    "(docs/protocol.md, \"Exact, with a test clock\")");
  command->add_option("--state-file", c.state_file,
                      "file that keeps the token mark, so tokens stay increasing across restarts")
      ->check(state_file_check());
  command->add_option("--inject-bug", options->bug, "serve a deliberately broken engine (see --list-bugs)")
      ->check(one_of(engine_bug_names(), "the engine's bug catalogue", "lockstep serve --list-bugs lists it"))
      ->capture_default_str();
  command->add_flag("--list-bugs", options->list_bugs, "list the catalogue of injectable bugs and exit");
  command->add_flag("--quiet", c.quiet, "no start and stop lines");
  command->callback([options, &run] { run = [options] { return run_serve(*options); }; });
}

}  // namespace lockstep::cli
