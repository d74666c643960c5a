// `lockstep check`: the reference model explored exhaustively
// (model/explorer.hpp) under the bounds of a TLC config (spec/MC*.cfg),
// with the same figures TLC prints (distinct states, states generated,
// depth) and the rate, and on a violation the shortest counter-example as
// a trace and as a .vec. With an emit folder it writes the shortest
// behaviour to every distinct state as a .vec file. This driver owns the
// files and the clock that times the search; the explorer itself reads
// neither.
#pragma once

#include <optional>
#include <string>

namespace lockstep::live {

struct SpecCheckOptions {
  std::string config_path;
  std::optional<int> steps_max;  // empty: every behaviour
  std::string emit_directory;    // empty: no vectors
  std::string bug;               // a bug the model injects, or empty
  std::string counterexample_path;
};

// Prints the figures; returns 0 (no property violated), 1 (a violation) or
// 2 (a config that cannot be read or is the cluster spec's, a file that
// cannot be written).
int run_spec_check(const SpecCheckOptions& options);

}  // namespace lockstep::live
