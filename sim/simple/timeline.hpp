// The timeline of a run, for teaching and design review: per key, who held
// it when (owner and token), who waited in its queue, and marks where the
// contract acted: grants, release hand-offs, sweep hand-offs, takeovers of
// expired keys, timeouts, sweeps, server restarts. The recorder is an
// observer that reads the engine's key views after each step; render_svg
// (sim/simple/timeline_svg.cpp) draws what it recorded as a self-contained
// SVG on the shared canvas.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/core/timeline_svg.hpp"
#include "sim/simple/key_tracks.hpp"
#include "sim/simple/observer.hpp"
#include "sim/simple/params.hpp"

namespace lockstep::sim {

class TimelineRecorder final : public Observer {
 public:
  explicit TimelineRecorder(const SimParams& params) : params_(params) {}

  void server_step(const ServerStep& step, const SimpleServerNode& server) override;
  void world(TimeMs, WorldEvent, std::uint32_t, ConnectionId, std::string_view) override {}
  // Closes what is still open at the end of the run.
  void finish(TimeMs at);

  const std::vector<TimelineBar>& bars() const { return tracks_.bars(); }
  const std::vector<TimelineMark>& marks() const { return tracks_.marks(); }

 private:
  void update_key(const std::string& key, const ServerStep& step, const SimpleServerNode& server);

  SimParams params_;
  KeyTracks tracks_;
};

// At most `keys_max` keys are drawn: the busiest, in key order.
std::string render_svg(const TimelineRecorder& recorder, const SimParams& params, TimeMs end,
                       std::size_t keys_max = 12);

// What render_svg draws, from bars and marks recorded by any driver of simple
// mode (the playground page records its own): the key rows, the sweep
// instants and the legend. `title` is given how many keys were drawn and how
// many were seen.
std::string render_key_timeline(const std::vector<TimelineBar>& bars, const std::vector<TimelineMark>& marks,
                                DurationMs sweep_ms, TimeMs end, std::size_t keys_max,
                                const std::function<std::string(std::size_t drawn, std::size_t seen)>& title);

}  // namespace lockstep::sim
