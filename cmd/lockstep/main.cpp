// lockstep: the reference lock service, its oracle and its test tools.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <unistd.h>

#include "cmd/lockstep/commands.hpp"

namespace {

// A history of a minute holds a few hundred MB of small objects; with 4 KiB
// pages, the first touch of each page costs a fault, and on a virtual
// machine those faults were a quarter of check-history's time. glibc reads
// its tunables only when a process starts, so the history commands start
// themselves once more with huge-page-backed malloc (where the kernel
// offers transparent huge pages; elsewhere the tunable does nothing).
void restart_with_huge_pages(int argc, char** argv) {
  if (argc < 2 || std::getenv("GLIBC_TUNABLES") != nullptr) return;
  const std::string_view command = argv[1];
  if (command != "check-history" && command != "fuzz" && command != "miss-rate") return;
  if (::setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  ::unsetenv("GLIBC_TUNABLES");  // could not restart: go on as we are
}

}  // namespace

int main(int argc, char** argv) {
  restart_with_huge_pages(argc, argv);
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
  lockstep::cli::add_miss_rate_command(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  return run();
}
