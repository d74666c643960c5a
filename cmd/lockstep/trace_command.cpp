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
#include "cmd/lockstep/embedded_spec.hpp"
#include "cmd/lockstep/validate_trace.hpp"
#include "cmd/lockstep/validators.hpp"

namespace lockstep::cli {

std::optional<sim::TlaTrace> read_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fmt::print(stderr, "cannot read {}\n", path);
    return std::nullopt;
  }
  try {
    return sim::trace_to_tla(in, "TraceRun", sim::TraceSpecs{trace_lock_server_tla, trace_lock_cluster_tla});
  } catch (const sim::TraceFormatError& e) {
    fmt::print(stderr, "{}: {}\n", path, e.what());
    return std::nullopt;
  } catch (const std::exception& e) {  // a field of an unexpected JSON type
    fmt::print(stderr, "{}: not a trace this version reads: {}\n", path, e.what());
    return std::nullopt;
  }
}

TraceVerdict validate_in_fresh_dir(const sim::TlaTrace& trace, const std::string& jar, const std::string& keep_dir) {
  std::string dir = keep_dir;
  if (dir.empty()) {
    dir = make_work_dir();
  } else {
    std::filesystem::create_directories(dir);
  }
  auto verdict = validate_trace(trace, jar, dir);
  if (keep_dir.empty()) remove_work_dir(dir);
  return verdict;
}

TraceVerdict::Kind validate_run_trace(const std::string& trace_path, const std::string& jar, std::uint64_t violations,
                                      std::optional<std::int64_t> first_violation_ms) {
  const auto trace = read_trace_file(trace_path);
  if (!trace) return TraceVerdict::Kind::error;
  const auto verdict = validate_in_fresh_dir(*trace, jar, "");
  fmt::print("{}", format_verdict(*trace, verdict));
  const bool sim_failed = violations > 0;
  const std::string sim_side = first_violation_ms
                                   ? fmt::format("the simulator's first violation is at {} ms", *first_violation_ms)
                                   : std::string("the simulator saw no violation");
  switch (verdict.kind) {
    case TraceVerdict::Kind::valid:
      fmt::print("verdicts: {}; {}\n", sim_failed ? "differ" : "agree", sim_side);
      break;
    case TraceVerdict::Kind::invalid: {
      const auto t = verdict.event >= 1 && verdict.event <= trace->steps.size() ? trace->steps[verdict.event - 1].t : -1;
      fmt::print("verdicts: {}; the spec first fails at {} ms, {}\n", sim_failed ? "agree" : "differ", t, sim_side);
      break;
    }
    case TraceVerdict::Kind::error:
      break;
  }
  return verdict.kind;
}

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

int validate_each(const ValidateOptions& o, const std::string& jar);

int run_validate(const ValidateOptions& o) {
  const auto jar = find_tla2tools_jar();
  if (!jar.jar) {
    fmt::print(stderr, "validate-trace: {}\n", jar.problem);
    return 2;
  }
  try {
    return validate_each(o, *jar.jar);
  } catch (const std::exception& e) {
    fmt::print(stderr, "validate-trace: {}\n", e.what());
    return 2;
  }
}

int validate_each(const ValidateOptions& o, const std::string& jar) {
  std::map<sim::TraceMode, sim::TraceCoverage> coverage;  // of the valid traces, per mode
  std::uint64_t valid = 0, invalid = 0, errors = 0;
  double seconds_max = 0, cpu_seconds_max = 0;
  for (const auto& path : o.traces) {
    const auto trace = read_trace_file(path);
    if (!trace) {
      ++errors;
      continue;
    }
    const auto verdict = validate_in_fresh_dir(*trace, jar, o.keep_dir);
    fmt::print("{}: {}", path, format_verdict(*trace, verdict));
    seconds_max = std::max(seconds_max, verdict.tlc_seconds);
    cpu_seconds_max = std::max(cpu_seconds_max, verdict.tlc_cpu_seconds);
    if (verdict.kind == TraceVerdict::Kind::valid) {
      ++valid;
      coverage[trace->mode].merge(trace->coverage);
    } else if (verdict.kind == TraceVerdict::Kind::invalid) {
      ++invalid;
    } else {
      ++errors;
    }
  }
  std::string missing;
  for (const auto& [mode, covered] : coverage) {
    fmt::print("{}", format_coverage(mode, covered));
    const auto lacking = missing_coverage(mode, covered);
    if (!lacking.empty()) {
      fmt::print("not covered by the valid {} traces: {}\n", sim::trace_mode_name(mode), lacking);
      missing += lacking;
    }
  }
  if (coverage.empty()) missing = "no valid trace";
  fmt::print("traces: {} valid, {} invalid, {} not validated; slowest TLC run {:.1f} s (CPU {:.1f} s)\n", valid,
             invalid, errors, seconds_max, cpu_seconds_max);
  if (errors > 0) return 2;
  if (invalid > 0) return 1;
  if (o.require_coverage && !missing.empty()) return 1;
  return 0;
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
