// A simulator trace (sim/trace/TRACE.md) as a TLA+ module for TLC: the run's
// steps as the sequence `Trace` of the trace spec, and a config that gives
// the spec's constants the run's own values (its keys, owners, connections,
// nodes, clients and limits), so that TLC checks that the spec has a
// behaviour taking exactly these steps. A trace of simple mode is checked
// against spec/TraceLockServer.tla (LockServer), one of cluster mode
// (`lockstep sim --mode cluster --trace`) against spec/TraceLockCluster.tla
// (LockCluster, sim/trace/cluster_tla.cpp); the header's schema tells them
// apart.
//
// Simple mode keeps only server steps (Acquire, Release, Close, Tick,
// Restart); the world's events (Send, Receive, Drop, ...) are what the
// clients saw and are not steps of the server. Each kept step is numbered
// from 1 in the order of the trace: TLC's verdict names an event by that
// number, and `steps` maps it back to the trace's line.
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep::sim {

class TraceFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One kept step, for reports.
struct TraceStep {
  std::uint64_t line = 0;  // 1-based line of the NDJSON trace
  std::int64_t t = 0;      // global simulated time, ms
  std::string kind;        // simple mode: Acquire, Release, Close, Tick, Restart; cluster: see TraceLockCluster
  std::string summary;     // the step and what it sent, in wire syntax
};

// Which spec a trace is checked against.
enum class TraceMode { simple, cluster };
std::string_view trace_mode_name(TraceMode mode);

// What the steps of one or more traces of one mode exercised: each action
// by the branch its records show, and each response kind.
struct TraceCoverage {
  std::map<std::string, std::uint64_t> actions;
  std::map<std::string, std::uint64_t> responses;

  void merge(const TraceCoverage& other);
};

// The actions and response kinds a sample of a mode must cover, in report
// order.
const std::vector<std::string>& coverage_actions(TraceMode mode);
const std::vector<std::string>& coverage_responses(TraceMode mode);

struct TlaTrace {
  TraceMode mode = TraceMode::simple;
  std::string module_name;
  std::string module_text;  // the trace spec as MODULE module_name, with the trace in it
  std::string config_text;
  std::vector<TraceStep> steps;
  TraceCoverage coverage;
  std::uint64_t seed = 0;
  std::string bug;
};

// The config of the locating pass: config_text with NEXT TraceLocateNext.
std::string locate_config(const TlaTrace& trace);

// The texts of the two trace specs.
struct TraceSpecs {
  std::string_view server;   // spec/TraceLockServer.tla
  std::string_view cluster;  // spec/TraceLockCluster.tla
};

// Reads a whole trace and writes it into its mode's trace spec, as the
// module `module_name`. Throws TraceFormatError (naming the line) on a line
// that is not JSON, a missing field, a step the spec has no action for, or a
// trace without its Run header.
TlaTrace trace_to_tla(std::istream& ndjson, const std::string& module_name, const TraceSpecs& specs);

// The same for a cluster trace whose header (line 1) was read already
// (sim/trace/cluster_tla.cpp), and the actions its coverage counts.
TlaTrace cluster_trace_to_tla(const nlohmann::json& header, std::istream& rest, const std::string& module_name,
                              std::string_view trace_spec);
const std::vector<std::string>& cluster_coverage_actions();

}  // namespace lockstep::sim
