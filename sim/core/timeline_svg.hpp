// The drawing shared by the SVG timelines of simple mode (sim/simple/timeline.hpp)
// and cluster mode (sim/cluster/timeline.hpp): a canvas with one time axis,
// labelled rows of bars, the per-key rows (the holder lane on top, waiter
// lanes below, marks where the contract acted) and a legend. Each mode adds
// its own title, rows and vertical instants; the canvas writes the
// self-contained SVG.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "impl/units.hpp"

namespace lockstep::sim {

// What a key row shows, recorded by each mode's timeline recorder.
struct TimelineBar {
  std::string key;
  bool hold = true;  // else a waiter
  TimeMs start;
  TimeMs end;
  std::string owner;
  Token token;        // holds
  std::string ended;  // released, expired, restart, served, timeout, dropped, end
  TimeMs expiry;      // holds: when the lease ended (the bar may run on, unswept)
};

struct TimelineMark {
  std::string key;  // empty: the whole server (a restart)
  TimeMs at;
  std::string kind;  // grant, handoff, sweep-handoff, takeover, timeout, sweep, restart
};

}  // namespace lockstep::sim

namespace lockstep::sim::svg {


// The shape of a mark of `kind` (grant, handoff, sweep-handoff, takeover,
// timeout, sweep, expire-handoff, expire-delete) at (x, y): the top of a
// holder lane, or a waiter lane for a timeout. Its class is `mark <kind>`.
std::string mark_shape(std::string_view kind, double x, double y);

class TimelineCanvas {
 public:
  static constexpr double left_px = 70, right_px = 20, chart_px = 1300;
  static constexpr double hold_px = 20, lane_px = 7, row_gap_px = 12;
  // Where the first row starts: below the title and the axis.
  static constexpr double top_px = 56;

  // Time runs from 0 to `end` across the chart; bars running on past it
  // are cut at its edge.
  explicit TimelineCanvas(TimeMs end);

  double x_of(TimeMs t) const;
  void title(std::string_view text);
  // The axis with round ticks, just above the first row.
  void axis();
  // A vertical line at `at` from y0 down to y1 (sweep instants, restarts),
  // drawn beneath the bars.
  void instant(std::string_view css_class, TimeMs at, double y0, double y1, std::string_view tip = {});
  void row_label(double top, std::string_view text);
  // A bar from `start` to `end` (at least 1 px), with a tooltip and, when it
  // fits, `label` inside it.
  void bar(std::string_view css_class, TimeMs start, TimeMs end, double top, double height, std::string_view tip,
           std::string_view label = {});
  // The rows of the busiest `keys_max` keys (in key order) from `top`: holds
  // with owner #token (the pale tail: held on past its lease), waiters in
  // lanes (a timeout marked where the bar ends), and the marks of each key.
  // Returns the y below the last row.
  double key_rows(const std::vector<TimelineBar>& bars, const std::vector<TimelineMark>& marks,
                  std::size_t keys_max, double top);
  std::size_t keys_drawn() const { return keys_drawn_; }
  std::size_t keys_seen() const { return keys_seen_; }
  // The legend under everything drawn so far: entries left to right, rows
  // started by legend_row().
  void legend_row();
  void legend(const std::string& shape, std::string_view text);
  // A legend swatch of a bar class, or a mark's shape, at the legend's pen.
  std::string swatch(std::string_view css_class, double height = 9) const;
  std::string swatch_mark(std::string_view kind) const;
  std::string swatch_line(std::string_view css_class) const;

  // The whole SVG: the shared style, then `extra_style` (the mode's own
  // classes), then what was drawn.
  std::string finish(std::string_view extra_style) const;

  double bottom() const { return bottom_; }
  void extend_to(double y) { bottom_ = std::max(bottom_, y); }

 private:
  std::int64_t span_ms_;
  std::string under_;  // beneath the bars: vertical instants
  std::string body_;
  double bottom_ = top_px;
  double legend_x_ = left_px, legend_y_ = 0;
  std::size_t keys_drawn_ = 0, keys_seen_ = 0;
};

}  // namespace lockstep::sim::svg
