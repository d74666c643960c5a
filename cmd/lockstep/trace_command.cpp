// `lockstep trace-to-tla` and `lockstep validate-trace`: the options of
// simulator traces written as TLA+ or checked by TLC (runs/tlc/trace_tools.hpp).
// `lockstep sim --validate-trace` uses the same runner on the trace of the
// seed it has just run.
#include <memory>

#include "cmd/lockstep/commands.hpp"
#include "cli/validators.hpp"
#include "runs/tlc/trace_tools.hpp"

namespace lockstep::cli {

void add_trace_commands(CLI::App& app, std::function<int()>& run) {
  auto to_tla = std::make_shared<tlc::TraceToTlaOptions>();
  auto* convert = app.add_subcommand(
      "trace-to-tla",
      "Write a simulator trace as a TLA+ module and config for TLC (spec/TraceLockServer.tla, or\n"
      "spec/TraceLockCluster.tla for a --mode cluster trace), with the spec modules it extends.\n"
      "Without -o, into a new temporary folder it names.");
  convert->add_option("trace", to_tla->trace, "the NDJSON trace (lockstep sim [--mode cluster] --trace)")
      ->required()
      ->check(readable_file());
  convert->add_option("-o,--out-dir", to_tla->out_dir,
                      "where to write TraceRun.tla, TraceRun.cfg and the spec (files of those names there are "
                      "replaced)")
      ->check(writable_folder());
  convert->callback([to_tla, &run] { run = [to_tla] { return tlc::run_trace_to_tla(*to_tla); }; });

  auto validate = std::make_shared<tlc::ValidateTracesOptions>();
  auto* check = app.add_subcommand(
      "validate-trace",
      "Check simulator traces with TLC against spec/TraceLockServer.tla, or spec/TraceLockCluster.tla for\n"
      "--mode cluster traces (TLA2TOOLS_JAR names the jar): each is valid when the spec has a behaviour\n"
      "that takes exactly its steps.\n"
      "Exit 0 all valid, 1 one is invalid (or --require-coverage fails), 2 one could not be checked.");
  check->add_option("traces", validate->traces, "NDJSON traces (lockstep sim [--mode cluster] --trace)")
      ->required()
      ->check(readable_file());
  check->add_option("--keep-dir", validate->keep_dir, "write TLC's files here and keep them")->check(writable_folder());
  check->add_flag("--require-coverage", validate->require_coverage,
                  "fail unless the valid traces together cover every action branch and response kind");
  check->callback([validate, &run] { run = [validate] { return tlc::run_validate_traces(*validate); }; });
}

}  // namespace lockstep::cli
