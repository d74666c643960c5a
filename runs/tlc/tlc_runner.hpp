// Trace validation: hands a simulator trace, as a TLA+ module
// (sim/trace/tla.hpp), to TLC with its mode's trace spec
// (spec/TraceLockServer.tla or spec/TraceLockCluster.tla) and reads TLC's
// verdict. TLC is not part of the build: TLA2TOOLS_JAR names a tla2tools.jar
// and `java` must be on PATH.
//
// A driver, kept apart from the deterministic simulator (its own library,
// lockstep_tlc): it starts a process, makes temporary folders and times TLC
// with the wall clock. Nothing in sim/ calls it; `lockstep sim
// --validate-trace` and `lockstep validate-trace` do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/trace/tla.hpp"

namespace lockstep::tlc {

struct TraceVerdict {
  enum class Kind { valid, invalid, error };
  Kind kind = Kind::error;
  std::uint64_t event = 0;  // invalid: the first step (1-based) no spec step explains
  std::string message;      // invalid or error: what went wrong, for people
  double tlc_seconds = 0;          // wall time
  double tlc_cpu_seconds = 0;      // CPU time of TLC's JVM (user + system), which load does not inflate
  std::uint64_t tlc_states = 0;  // distinct states TLC found
};

// The jar TLA2TOOLS_JAR names, or why it cannot be used.
struct JarLookup {
  std::optional<std::string> jar;
  std::string problem;
};
JarLookup find_tla2tools_jar();

// Writes the modules and the config into `work_dir` (which must exist).
void write_tla_files(const sim::TlaTrace& trace, const std::string& work_dir);

// Runs TLC on the trace in `work_dir` (written there first) and judges.
TraceVerdict validate_trace(const sim::TlaTrace& trace, const std::string& jar, const std::string& work_dir);

// `trace: valid (N events)` or `trace: invalid at event N: ...`, one line,
// followed by detail lines for an invalid trace.
std::string format_verdict(const sim::TlaTrace& trace, const TraceVerdict& verdict);

// The coverage table of one or more traces of one mode, and which actions
// or response kinds it lacks.
std::string format_coverage(sim::TraceMode mode, const sim::TraceCoverage& coverage);
std::string missing_coverage(sim::TraceMode mode, const sim::TraceCoverage& coverage);

// Reads and converts a trace file; prints why not (to stderr) on failure.
std::optional<sim::TlaTrace> read_trace_file(const std::string& path);

// `sim --validate-trace`: TLC's verdict on the trace of the seed just run,
// printed beside the simulator's own. The two judge differently (the spec
// sees each step, the checkers see the clients' side and the model), so the
// line that compares them says where each saw the first fault. Returns
// TLC's verdict (error: the trace could not be read or TLC not run).
TraceVerdict::Kind validate_run_trace(const std::string& trace_path, const std::string& jar, std::uint64_t violations,
                        std::optional<std::int64_t> first_violation_ms);

// `lockstep validate-trace`: each trace's verdict and TLC's time, the
// coverage of the valid ones per mode, and a total line; returns 0 all
// valid (and covering, with require_coverage), 1 one invalid, 2 one not
// checked.
int validate_traces(const std::vector<std::string>& traces, const std::string& jar, const std::string& keep_dir,
                    bool require_coverage);

// validate_trace in a fresh temporary directory removed afterwards, or in
// `keep_dir` when it is not empty (created if need be, kept).
TraceVerdict validate_in_fresh_dir(const sim::TlaTrace& trace, const std::string& jar, const std::string& keep_dir);

// A fresh directory under $TMPDIR (or /tmp), lockstep-trace-XXXXXX, that
// is kept: for outputs whose place the user is told (trace-to-tla without
// -o). Work that is thrown away goes into a live::TemporaryFolder instead.
std::string make_work_dir();

}  // namespace lockstep::tlc
