// A simulator trace (sim/TRACE.md) as a TLA+ module for TLC: the run's
// server steps as the sequence `Trace` of spec/TraceLockServer.tla, and a
// config that gives LockServer's constants the run's own values (its keys,
// owners, connections and limits), so that TLC checks that LockServer has a
// behaviour taking exactly these steps.
//
// Only server steps are kept (Acquire, Release, Close, Tick, Restart); the
// world's events (Send, Receive, Drop, ...) are what the clients saw and are
// not steps of the server. Each kept step is numbered from 1 in the order of
// the trace: TLC's verdict names an event by that number, and `events` maps
// it back to the trace's line.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace lockstep::sim {

class TraceFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One kept server step, for reports.
struct TraceStep {
  std::uint64_t line = 0;  // 1-based line of the NDJSON trace
  std::int64_t t = 0;
  std::string kind;        // Acquire, Release, Close, Tick, Restart
  std::string summary;     // the step and what it sent, in wire syntax
};

// What the steps of one or more traces exercised: each action by the branch
// its responses show, and each response kind.
struct TraceCoverage {
  std::map<std::string, std::uint64_t> actions;
  std::map<std::string, std::uint64_t> responses;

  void merge(const TraceCoverage& other);
};

// The actions and response kinds a sample must cover, in report order.
const std::vector<std::string>& coverage_actions();
const std::vector<std::string>& coverage_responses();

struct TlaTrace {
  std::string module_name;
  std::string module_text;  // TraceLockServer as MODULE module_name, with the trace in it
  std::string config_text;
  std::vector<TraceStep> steps;
  TraceCoverage coverage;
  std::uint64_t seed = 0;
  std::string bug;
};

// The config of the locating pass: config_text with NEXT TraceLocateNext.
std::string locate_config(const TlaTrace& trace);

// Reads a whole trace and writes it into `trace_spec`, the text of
// spec/TraceLockServer.tla, as the module `module_name`. Throws TraceFormatError (naming the line) on a line
// that is not JSON, a missing field, a step the spec has no action for, or a
// trace without its Run header.
TlaTrace trace_to_tla(std::istream& ndjson, const std::string& module_name, const std::string& trace_spec);

}  // namespace lockstep::sim
