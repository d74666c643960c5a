// What differs between the two modes around the search of one key, behind
// one interface, so that check_history (checker.cpp) runs one pipeline for
// both: the history built once, split by key, each key judged, the keys
// coupled by their tokens, the verdict. It asks the mode's rules only here.
// - Simple mode: one sweep phase per incarnation is shared by all its keys.
//   Each key is searched within the phases the keys before it allow, which
//   its explanation narrows; a key unexplained within them is searched
//   again with every phase, to tell a disagreement between keys from a
//   violation of its own.
// - Cluster mode: no sweep. The keys share nothing but the order of tokens;
//   once every key is explained, the least maximum lateness over all of
//   them is settled.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "check/build.hpp"
#include "check/checker.hpp"
#include "check/frontier.hpp"
#include "check/tokens.hpp"

namespace lockstep::history {

class ModeRules {
 public:
  virtual ~ModeRules() = default;
  // The history's mode's rules; `built` outlives them.
  static std::unique_ptr<ModeRules> of(const History& history, const Built& built);

  // The key's search under the mode's rules, within what the keys judged
  // before it allow.
  virtual KeyVerdict search(const KeyInput& input, const KeyOracles& oracles, std::uint32_t incarnation,
                            const KeyCheckOptions& options) const = 0;
  // A key that search left unexplained, searched again without what the
  // keys before it narrowed (simple mode: every sweep phase); nothing when
  // they narrowed nothing (always, in cluster mode).
  virtual std::optional<KeyVerdict> search_unnarrowed(const KeyInput& input, const KeyOracles& oracles,
                                                      std::uint32_t incarnation,
                                                      const KeyCheckOptions& options) const = 0;
  // A key explained: what it tells the keys after it, and the result.
  virtual void explained(std::uint32_t incarnation, const KeyInput& input, const KeyVerdict& verdict,
                         CheckResult& result) = 0;
  // Once every key is judged and the order of tokens checked. `budget`:
  // configurations left to step, spent here.
  virtual void finish(const Oracles& oracles, std::uint64_t memory_max_bytes, std::uint64_t& budget,
                      const KeyVerdicts& verdicts, CheckResult& result) = 0;
};

}  // namespace lockstep::history
