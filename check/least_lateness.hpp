// Cluster mode: the worst lateness a conforming history is reported with,
// made the least --max-lateness-ms under which it conforms (DESIGN.md, "The
// least lateness"), so that a user can pass the figure back and pass.
//
// The lateness the search counts along an explanation is not that figure:
// it may apply an Expire only at the next instant the key is visited,
// seconds past an on-time one, and a search under a maximum visits other
// instants, where it may need more. Nor is the most any one key needs: under
// a maximum each key's explanations are fewer, and the instants they allow
// each grant narrower, so the order of tokens across keys may then have no
// explanation. So the figure is found in two steps:
//   1. each key, worst counted first, is searched again under the figure so
//      far; one that fails raises the figure to the least maximum it is
//      explained under (bisected);
//   2. the order of tokens is checked against the keys' explanations under
//      the maxima they were verified under (if it holds there it holds under
//      the larger figure, whose explanations include them); if it does not,
//      every key is searched under the figure and the tokens checked again,
//      and the figure is raised, the whole history bisected, until both hold.
// Each search spends the checker's budget; when it runs out, or a search is
// undecided, the figure is what was verified so far and says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "check/build.hpp"
#include "check/checker.hpp"
#include "check/frontier.hpp"
#include "check/phase_set.hpp"
#include "check/tokens.hpp"

namespace lockstep::history {

// What the searches need from the checker, which owns it all.
struct LatenessSearch {
  const History& history;
  const Built& built;
  const Oracles& oracles;
  const std::vector<PhaseSet>& phases;  // per incarnation
  std::uint64_t memory_max_bytes = 0;
  std::uint64_t& budget;  // configurations left to step; spent here
};

// `verdicts`: every key explained, with the lateness counted along its
// explanation. Sets result.lateness_ms, lateness_text and
// lateness_unverified, and adds to result.states_expanded.
void settle_least_lateness(const LatenessSearch& search, const KeyVerdicts& verdicts, CheckResult& result);

// What the worst lateness of a key was, in words.
std::string lateness_text(const KeyInput& input, const KeyVerdict& verdict, std::int64_t origin_us);

}  // namespace lockstep::history
