// `lockstep trace-to-tla` and `lockstep validate-trace`, once their options
// are parsed: a simulator trace written as TLA+ for TLC to check by hand,
// or traces checked by TLC here (runs/tlc/tlc_runner.hpp) against
// spec/TraceLockServer.tla, cluster traces against spec/TraceLockCluster.tla
// (spec/README.md, "Trace validation").
#pragma once

#include <string>
#include <vector>

namespace lockstep::tlc {

struct TraceToTlaOptions {
  std::string trace;
  std::string out_dir;  // empty: a new temporary folder, never the current one
};

// Writes the module and its configs, and says how to check them; 0, or 2
// for a trace that cannot be read or a folder that cannot be written.
int run_trace_to_tla(TraceToTlaOptions o);

struct ValidateTracesOptions {
  std::vector<std::string> traces;
  std::string keep_dir;
  bool require_coverage = false;
};

// 0 all valid, 1 one is invalid (or the coverage asked is missing), 2 one
// could not be checked (TLC missing included).
int run_validate_traces(const ValidateTracesOptions& o);

}  // namespace lockstep::tlc
