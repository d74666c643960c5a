// lockstep: the reference lock service, its oracle and its test tools.
#include <cstdio>

#include "cmd/lockstep/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "lockstep: a reference implementation of a lease-based lock service, and the tools to\n"
      "check any implementation against it (conformance vectors, benchmarks)."};
  app.require_subcommand(1);
  std::function<int()> run;
  lockstep::cli::add_conform_command(app, run);
  lockstep::cli::add_bench_command(app, run);
  lockstep::cli::add_check_command(app, run);
  lockstep::cli::add_serve_command(app, run);
  lockstep::cli::add_sim_command(app, run);
  lockstep::cli::add_trace_commands(app, run);
  lockstep::cli::add_fuzz_commands(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  return run();
}
