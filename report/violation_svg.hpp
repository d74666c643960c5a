// The SVG timelines of the HTML report (history_report.cpp): one key's
// violation drawn around its culprit, and the helpers both it and the run's
// nemesis timeline use (the time scale, the nemesis steps). A file of its
// own because the drawing is most of the report's code and none of its
// wording.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "check/checker.hpp"
#include "check/history.hpp"
#include "check/key_input.hpp"
#include "check/phase_set.hpp"

namespace lockstep::history {

// What a tester did to the target (`nemesis` events), in the history's order.
struct NemesisMark {
  std::int64_t us;
  std::string what;
};

std::vector<NemesisMark> nemesis_marks(const History& history);

// `us` as "+12.345 ms" from `origin_us` ("-..." before it: a window may
// start before the incarnation).
std::string offset_text(std::int64_t us, std::int64_t origin_us);

// A step of 1, 2 or 5 times a power of ten, so that about `count` ticks
// cover `span`.
double tick_step(double span, int count);

// One key's violation drawn around its culprit: a time axis, one lane per
// connection that has events of the key in the window, a tick per request
// sent, a dot per response read, the culprit ringed, the expected answer as
// a band from its cause to the latest instant it could arrive, closes, and
// the sweep instants when the phase is known. Only what is drawn is in the
// legend; what the window leaves out is counted, never dropped silently.
// Returns the SVG, its legend and a note of what the window holds.
std::string violation_svg(const KeyInput& input, const Finding& finding, const PhaseSet* phases, std::int64_t origin_us,
                          const std::vector<NemesisMark>& nemesis);

}  // namespace lockstep::history
