// The timeline of a playground session, drawn as it grows: simple mode's
// reference model is observed after each input it handled and each instant
// it fired, and what changed on its keys becomes the bars and marks of the
// simulator's SVG timeline (sim/simple/timeline.hpp), with the same canvas, colours
// and marks: holders with owner and token (a pale tail while a lease is over
// but the key not yet swept), waiters in lanes, grants, hand-offs on release
// and by the sweep, takeovers, timeouts, sweeps.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "impl/bugs.hpp"
#include "impl/limits.hpp"
#include "impl/protocol.hpp"
#include "impl/units.hpp"
#include "model/model.hpp"
#include "sim/simple/key_tracks.hpp"
#include "sim/simple/timeline.hpp"

namespace lockstep::web {

class SessionTimeline {
 public:
  // What the model just did: handled a request (an acquire, or a release
  // carrying `release_token`), a close, or fired instant `at`.
  using Cause = sim::KeyTracks::Cause;

  // Compares every key of `model` with what was drawn so far; `out` is what
  // that step sent (it tells a timeout from a dropped waiter).
  void observe(Cause cause, TimeMs at, const Model& model, const Outputs& out,
               std::optional<Token> release_token = std::nullopt);
  // The SVG up to `now`: what is still held or waiting is drawn up to it.
  std::string svg(TimeMs now, const Limits& limits, InjectedBug bug) const;

  const std::vector<sim::TimelineBar>& bars() const { return tracks_.bars(); }
  const std::vector<sim::TimelineMark>& marks() const { return tracks_.marks(); }

 private:
  sim::KeyTracks tracks_;
};

}  // namespace lockstep::web
