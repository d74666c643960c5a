// `lockstep trace-to-tla` and `lockstep validate-trace`: simulator traces
// checked by TLC against spec/TraceLockServer.tla, cluster traces against
// spec/TraceLockCluster.tla (spec/README.md, "Trace validation").
// `lockstep sim --validate-trace` uses the same code on the trace of the seed
// it has just run.
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/validators.hpp"
#include "live/tlc/tlc_runner.hpp"

namespace lockstep::cli {

using tlc::find_tla2tools_jar;
using tlc::format_coverage;
using tlc::make_work_dir;
using tlc::read_trace_file;
using tlc::write_tla_files;

namespace {

struct TraceToTlaOptions {
  std::string trace;
  std::string out_dir;  // empty: a new temporary folder, never the current one
};

int run_trace_to_tla(TraceToTlaOptions o) {
  const auto trace = read_trace_file(o.trace);
  if (!trace) return 2;
  try {
    // Without -o the files go to a folder made for them: written into the
    // current folder they could replace the spec's own modules.
    if (o.out_dir.empty()) {
      o.out_dir = make_work_dir();
      fmt::print("no -o given: writing into the new folder {}\n", o.out_dir);
    }
    std::filesystem::create_directories(o.out_dir);
    write_tla_files(*trace, o.out_dir);
  } catch (const std::exception& e) {
    fmt::print(stderr, "trace-to-tla: {}\n", e.what());
    return 2;
  }
  const bool cluster = trace->mode == sim::TraceMode::cluster;
  fmt::print("wrote {0}/{1}.tla, {0}/{1}.cfg and {0}/{1}Locate.cfg ({2} events), with {3}.tla and Trace{3}.tla\n",
             o.out_dir, trace->module_name, trace->steps.size(), cluster ? "LockCluster" : "LockServer");
  fmt::print("check with: cd {} && java -cp $TLA2TOOLS_JAR tlc2.TLC -workers 1 -deadlock -config {}.cfg {}.tla\n",
             o.out_dir, trace->module_name, trace->module_name);
  fmt::print("valid when TLC prints trace-done; otherwise -config {}Locate.cfg prints {}\n", trace->module_name,
             cluster ? "each event it explains: the one after the last is invalid"
                     : "trace-stuck and the event");
  fmt::print("{}", format_coverage(trace->mode, trace->coverage));
  return 0;
}

struct ValidateOptions {
  std::vector<std::string> traces;
  std::string keep_dir;
  bool require_coverage = false;
};

int run_validate(const ValidateOptions& o) {
  const auto jar = find_tla2tools_jar();
  if (!jar.jar) {
    fmt::print(stderr, "validate-trace: {}\n", jar.problem);
    return 2;
  }
  try {
    return tlc::validate_traces(o.traces, *jar.jar, o.keep_dir, o.require_coverage);
  } catch (const std::exception& e) {
    fmt::print(stderr, "validate-trace: {}\n", e.what());
    return 2;
  }
}

}  // namespace

void add_trace_commands(CLI::App& app, std::function<int()>& run) {
  auto to_tla = std::make_shared<TraceToTlaOptions>();
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
  convert->callback([to_tla, &run] { run = [to_tla] { return run_trace_to_tla(*to_tla); }; });

  auto validate = std::make_shared<ValidateOptions>();
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
  check->callback([validate, &run] { run = [validate] { return run_validate(*validate); }; });
}

}  // namespace lockstep::cli
