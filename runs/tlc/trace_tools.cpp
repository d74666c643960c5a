#include "runs/tlc/trace_tools.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "runs/tlc/tlc_runner.hpp"

namespace lockstep::tlc {

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
    fmt::print(stderr, "lockstep trace-to-tla: {}\n", e.what());
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

int run_validate_traces(const ValidateTracesOptions& o) {
  const auto jar = find_tla2tools_jar();
  if (!jar.jar) {
    fmt::print(stderr, "lockstep validate-trace: {}\n", jar.problem);
    return 2;
  }
  try {
    return tlc::validate_traces(o.traces, *jar.jar, o.keep_dir, o.require_coverage);
  } catch (const std::exception& e) {
    fmt::print(stderr, "lockstep validate-trace: {}\n", e.what());
    return 2;
  }
}

}  // namespace lockstep::tlc
