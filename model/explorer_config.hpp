// The bounds of one exhaustive exploration, read from a TLC model-checking
// configuration (spec/MC*.cfg), so that TLC and the C++ explorer check the
// same instance of spec/LockServer.tla. Only the subset of the TLC config
// language that our configs use is read: the CONSTANTS section (`Name =
// value`, or `Name <- Definition` with the definition taken from the MC
// module beside the config), SPECIFICATION, INVARIANTS and PROPERTIES.
// Values are integers, strings, TRUE/FALSE, bare identifiers (model values,
// read as names) and sets of these; `a..b` is accepted in definitions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "impl/bugs.hpp"
#include "impl/limits.hpp"

namespace lockstep {

// The constants of spec/LockServer.tla, with the spec's names in comments.
struct SpecBounds {
  std::vector<std::string> keys;    // Keys, ascending
  std::vector<std::string> owners;  // Owners, ascending
  std::vector<std::string> conns;   // Conns, ascending
  std::vector<std::int64_t> leases_ms;  // Leases, ascending
  std::vector<std::int64_t> waits_ms;   // Waits, ascending
  std::int64_t sweep_ms = 1;            // SweepMs
  std::uint64_t max_keys = 1;           // MaxKeys
  std::uint64_t max_waiters_per_key = 0;  // MaxWaitersPerKey
  std::uint64_t max_waiters = 0;          // MaxWaiters
  std::int64_t max_time_ms = 0;           // MaxTime
  std::uint64_t max_token = 0;            // MaxToken
  bool lifo_handoff = false;              // LifoHandoff
  bool sweep_first = false;               // SweepFirst

  // The model's limits for these bounds (lease and wait maxima from the sets).
  Limits limits() const;
  // The bug the model runs with: none, lifo_handoff or sweep_before_timeouts.
  InjectedBug bug() const;
  // The spec's TokenBound: no token reaches it (requests stop at MaxToken,
  // each instant's sweep issues at most one token per key).
  std::uint64_t token_bound() const;
};

struct SpecConfig {
  SpecBounds bounds;
  std::string specification;  // SPECIFICATION (Spec, or FairSpec for liveness)
  std::vector<std::string> invariants;
  std::vector<std::string> properties;
};

// Reads a config's text; `module_text` is the MC module beside it (may be
// empty), consulted for `Name <- Definition`. Returns why it cannot, or the
// config, whose bounds are checked for what the explorer can represent.
std::variant<SpecConfig, std::string> parse_spec_config(std::string_view config_text,
                                                        std::string_view module_text);

}  // namespace lockstep
