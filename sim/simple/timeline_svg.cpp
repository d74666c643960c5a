// Simple mode's timeline on the canvas (sim/core/timeline_svg.hpp): the key
// rows, then the sweep instants and server restarts as vertical lines, and
// the legend. Apart from the recorder (sim/simple/timeline.cpp) so that the
// playground page, which records its own bars, compiles only the drawing.
#include <fmt/format.h>

#include "sim/simple/timeline.hpp"

namespace lockstep::sim {

std::string render_svg(const TimelineRecorder& recorder, const SimParams& params, TimeMs end, std::size_t keys_max) {
  return render_key_timeline(recorder.bars(), recorder.marks(), params.limits.sweep_ms, end, keys_max,
                             [&](std::size_t drawn, std::size_t seen) {
                               return fmt::format("lockstep sim, seed {}: {} of {} keys, sweep every {} ms, bug {}",
                                                  params.seed, drawn, seen, params.limits.sweep_ms.value,
                                                  bug_name(params.bug));
                             });
}

std::string render_key_timeline(const std::vector<TimelineBar>& bars, const std::vector<TimelineMark>& marks,
                                DurationMs sweep_ms, TimeMs end, std::size_t keys_max,
                                const std::function<std::string(std::size_t drawn, std::size_t seen)>& title) {
  svg::TimelineCanvas canvas(end);
  canvas.axis();
  const double rows_end = canvas.key_rows(bars, marks, keys_max, svg::TimelineCanvas::top_px);
  canvas.title(title(canvas.keys_drawn(), canvas.keys_seen()));
  const double axis_y = svg::TimelineCanvas::top_px - 10;
  const auto sweep = sweep_ms.value;
  if (end.value / sweep <= 200) {
    for (std::int64_t t = sweep; t <= end.value; t += sweep) canvas.instant("sweep-instant", TimeMs{t}, axis_y, rows_end);
  }
  for (const auto& mark : marks) {
    if (!mark.key.empty()) continue;
    canvas.instant("restart", mark.at, axis_y, rows_end, fmt::format("server restart at {} ms", mark.at.value));
  }

  canvas.legend_row();
  canvas.legend(canvas.swatch("hold"), "holder: owner #token");
  canvas.legend(canvas.swatch("overdue"), "lease over, not yet swept or taken over");
  canvas.legend(canvas.swatch("wait", 5), "queued waiter");
  canvas.legend(canvas.swatch_line("sweep-instant"), "sweep instant");
  canvas.legend(canvas.swatch_line("restart"), "server restart");
  canvas.legend_row();
  canvas.legend(canvas.swatch_mark("grant"), "grant (free key)");
  canvas.legend(canvas.swatch_mark("handoff"), "hand-off on release");
  canvas.legend(canvas.swatch_mark("sweep-handoff"), "hand-off by the sweep");
  canvas.legend(canvas.swatch_mark("takeover"), "takeover of an expired key");
  canvas.legend(canvas.swatch_mark("timeout"), "waiter timed out");
  canvas.legend(canvas.swatch_mark("sweep"), "sweep acted");
  return canvas.finish(
      ".sweep-instant{stroke:#c9b6e4;stroke-dasharray:2,3}.restart{stroke:#d62728;stroke-width:2}"
      ".sweep-handoff{fill:#9467bd}.takeover{fill:#ff7f0e}.sweep{fill:#6a3d9a}");
}

}  // namespace lockstep::sim
