// `lockstep conform`: conformance vectors replayed against the engine or
// the reference model in process, or exactly against live servers started
// from command templates (live_runner.hpp); one line per file, a summary,
// and optionally JUnit XML, one test case per vector file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::live {

struct ConformOptions {
  std::vector<std::string> paths;  // vector files, or folders searched for .vec files
  std::string against = "engine";  // engine or model, in process
  std::string bug = "none";        // a name of the engine's catalogue, in process
  std::string exec;                // simple-mode vectors against this server template
  std::string exec_cluster;        // mode=cluster vectors against this node template
  std::string etcd;                // endpoints for {etcd}; empty: a one-member etcd started for the run
  std::int64_t patience_ms = 5'000;
  std::string junit_path;
};

// Prints each verdict and the summary; returns 0 all passed or skipped, 1
// one failed, 2 nothing to run or an output that could not be written.
int run_conform(const ConformOptions& options);

}  // namespace lockstep::live
