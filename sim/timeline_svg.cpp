// Draws a recorded timeline as SVG: one row per key, time left to right.
// In a row, the top lane holds the holder bars (label: owner and token; the
// pale tail is a lease that ended but was not yet swept or taken over), the
// lanes below the waiters, oldest on top. Marks sit on the holder lane.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "sim/timeline.hpp"

namespace lockstep::sim {

namespace {

constexpr double left_px = 70, right_px = 20, top_px = 56, chart_px = 1300;
constexpr double hold_px = 20, lane_px = 7, row_gap_px = 12;
constexpr std::size_t lanes_max = 6;

std::string escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// A round step for axis ticks: about ten ticks over the span.
std::int64_t tick_step(std::int64_t span_ms) {
  for (std::int64_t base = 1;; base *= 10) {
    for (const std::int64_t factor : {1, 2, 5}) {
      if (span_ms / (base * factor) <= 12) return base * factor;
    }
  }
}

std::uint32_t key_number(const std::string& key) {
  std::uint32_t value = 0;
  for (std::size_t i = 1; i < key.size(); ++i) value = value * 10 + static_cast<std::uint32_t>(key[i] - '0');
  return value;
}

std::string mark_shape(const std::string& kind, double x, double y) {
  const auto cls = fmt::format("mark {}", kind);
  if (kind == "grant") return fmt::format(R"(<circle class="{}" cx="{:.1f}" cy="{:.1f}" r="4"/>)", cls, x, y);
  if (kind == "handoff" || kind == "sweep-handoff") {
    return fmt::format(R"(<path class="{}" d="M{:.1f},{:.1f} l5,5 l-5,5 l-5,-5 z"/>)", cls, x, y - 5);
  }
  if (kind == "takeover") return fmt::format(R"(<path class="{}" d="M{:.1f},{:.1f} l5,9 l-10,0 z"/>)", cls, x, y - 5);
  if (kind == "timeout") {
    return fmt::format(R"(<path class="{}" d="M{:.1f},{:.1f} l6,6 m0,-6 l-6,6"/>)", cls, x - 3, y - 3);
  }
  return fmt::format(R"(<path class="{}" d="M{:.1f},{:.1f} l4,-7 l-8,0 z"/>)", cls, x, y + hold_px - 2);  // sweep
}

}  // namespace

std::string render_svg(const TimelineRecorder& recorder, const SimParams& params, TimeMs end,
                       std::size_t keys_max) {
  // The busiest keys, drawn in key order.
  std::map<std::string, std::size_t> activity;
  for (const auto& bar : recorder.bars()) ++activity[bar.key];
  std::vector<std::pair<std::size_t, std::string>> ranked;
  for (const auto& [key, count] : activity) ranked.emplace_back(count, key);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (ranked.size() > keys_max) ranked.resize(keys_max);
  std::vector<std::string> keys;
  for (const auto& entry : ranked) keys.push_back(entry.second);
  std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return key_number(a) < key_number(b); });

  // Waiter bars get lanes: the first lane free at their start.
  std::map<std::string, double> row_top;
  std::map<const TimelineBar*, std::size_t> lane_of;
  double y = top_px;
  for (const auto& key : keys) {
    std::vector<TimeMs> lane_free;
    for (const auto& bar : recorder.bars()) {
      if (bar.key != key || bar.hold) continue;
      std::size_t lane = 0;
      while (lane < lane_free.size() && lane_free[lane] > bar.start) ++lane;
      if (lane == lane_free.size() && lane < lanes_max) lane_free.push_back(bar.end);
      if (lane < lanes_max) lane_free[lane] = std::max(lane_free[lane], bar.end);
      lane_of[&bar] = std::min(lane, lanes_max - 1);
    }
    row_top[key] = y;
    y += hold_px + static_cast<double>(std::max<std::size_t>(lane_free.size(), 1)) * lane_px + row_gap_px;
  }
  const double height = y + 55;
  const double width = left_px + chart_px + right_px;
  const double span = static_cast<double>(std::max<std::int64_t>(end.value, 1));
  const auto x_of = [&](TimeMs t) { return left_px + chart_px * static_cast<double>(t.value) / span; };

  std::string svg;
  auto out = std::back_inserter(svg);
  fmt::format_to(out, R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" viewBox="0 0 {:.0f} {:.0f}" font-family="sans-serif" font-size="11">)" "\n",
                 width, height, width, height);
  svg += R"(<style>.hold{fill:#9cc3e6;stroke:#2f6b9a}.unswept{fill:#e3edf6;stroke:#9bb4c9;stroke-dasharray:3,2}.wait{fill:#f3c98b;stroke:#b07a2a}.key{font-weight:bold}.axis{stroke:#444}.sweep-instant{stroke:#c9b6e4;stroke-dasharray:2,3}.restart{stroke:#d62728;stroke-width:2}.grant{fill:#2ca02c}.handoff{fill:#1f77b4}.sweep-handoff{fill:#9467bd}.takeover{fill:#ff7f0e}.timeout{stroke:#d62728;stroke-width:2;fill:none}.sweep{fill:#6a3d9a}</style>)" "\n";
  svg += R"(<rect x="0" y="0" width="100%" height="100%" fill="white"/>)" "\n";
  fmt::format_to(out, R"(<text x="{}" y="18" font-size="13">{}</text>)" "\n", left_px,
                 escape(fmt::format("lockstep sim, seed {}: {} of {} keys, sweep every {} ms, bug {}",
                                    params.seed, keys.size(), activity.size(), params.limits.sweep_ms.value,
                                    bug_name(params.bug))));

  // Axis and sweep instants.
  const double axis_y = top_px - 10;
  fmt::format_to(out, R"(<line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"/>)" "\n", left_px, axis_y, left_px + chart_px, axis_y);
  const auto step = tick_step(end.value);
  for (std::int64_t t = 0; t <= end.value; t += step) {
    const double x = x_of(TimeMs{t});
    fmt::format_to(out, R"(<line class="axis" x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}"/><text x="{0:.1f}" y="{3}" text-anchor="middle">{4} ms</text>)" "\n",
                   x, axis_y - 4, axis_y, axis_y - 8, t);
  }
  const auto sweep = params.limits.sweep_ms.value;
  if (end.value / sweep <= 200) {
    for (std::int64_t t = sweep; t <= end.value; t += sweep) {
      fmt::format_to(out, R"(<line class="sweep-instant" x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2:.0f}"/>)" "\n", x_of(TimeMs{t}), axis_y, y);
    }
  }

  for (const auto& key : keys) {
    const double top = row_top[key];
    fmt::format_to(out, R"(<text class="key" x="8" y="{:.1f}">{}</text>)" "\n", top + 14, escape(key));
    for (const auto& bar : recorder.bars()) {
      if (bar.key != key) continue;
      const double x0 = x_of(bar.start);
      if (bar.hold) {
        const TimeMs lease_end = std::min(bar.end, bar.expiry);
        const double x1 = std::max(x_of(lease_end), x0 + 1);
        const auto tip = escape(fmt::format("{} holds {} with token {} from {} ms; lease to {} ms; ended {} at {} ms",
                                            bar.owner, key, bar.token.value, bar.start.value, bar.expiry.value, bar.ended, bar.end.value));
        fmt::format_to(out, R"(<rect class="hold" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}"><title>{}</title></rect>)" "\n",
                       x0, top, x1 - x0, hold_px, tip);
        if (bar.end > bar.expiry) {
          fmt::format_to(out, R"(<rect class="unswept" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}"><title>{}</title></rect>)" "\n",
                         x1, top + 3, std::max(x_of(bar.end) - x1, 1.0), hold_px - 6, tip);
        }
        const auto label = fmt::format("{} #{}", bar.owner, bar.token.value);
        if (x1 - x0 > 8 + 6.2 * static_cast<double>(label.size())) {
          fmt::format_to(out, R"(<text class="holder" x="{:.1f}" y="{:.1f}">{}</text>)" "\n", x0 + 6, top + 15, escape(label));
        }
      } else {
        const double lane_y = top + hold_px + 1 + static_cast<double>(lane_of[&bar]) * lane_px;
        const auto tip = escape(fmt::format("{} waits for {} from {} ms, deadline {} ms: {} at {} ms", bar.owner, key,
                                            bar.start.value, bar.expiry.value, bar.ended, bar.end.value));
        fmt::format_to(out, R"(<rect class="wait" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}"><title>{}</title></rect>)" "\n",
                       x0, lane_y, std::max(x_of(bar.end) - x0, 1.0), lane_px - 2, tip);
        // A timeout is drawn where the waiter's bar ends, in its lane.
        if (bar.ended == "timeout") svg += mark_shape("timeout", x_of(bar.end), lane_y + 2) + "\n";
      }
    }
    for (const auto& mark : recorder.marks()) {
      if (mark.key == key && mark.kind != "timeout") svg += mark_shape(mark.kind, x_of(mark.at), top + 3) + "\n";
    }
  }
  for (const auto& mark : recorder.marks()) {
    if (!mark.key.empty()) continue;
    fmt::format_to(out, R"(<line class="restart" x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2:.0f}"><title>server restart at {3} ms</title></line>)" "\n",
                   x_of(mark.at), axis_y, y, mark.at.value);
  }

  // Legend, in two rows.
  double lx = left_px;
  double ly = y + 20;
  const auto legend = [&](const std::string& shape, const std::string& text) {
    svg += shape + "\n";
    fmt::format_to(out, R"(<text x="{:.1f}" y="{:.1f}">{}</text>)" "\n", lx + 12, ly + 4, escape(text));
    lx += 30 + 6.2 * static_cast<double>(text.size());
  };
  legend(fmt::format(R"(<rect class="hold" x="{:.1f}" y="{:.1f}" width="9" height="9"/>)", lx, ly - 4), "holder: owner #token");
  legend(fmt::format(R"(<rect class="unswept" x="{:.1f}" y="{:.1f}" width="9" height="9"/>)", lx, ly - 4), "lease over, not yet swept or taken over");
  legend(fmt::format(R"(<rect class="wait" x="{:.1f}" y="{:.1f}" width="9" height="5"/>)", lx, ly - 2), "queued waiter");
  legend(fmt::format(R"(<line class="sweep-instant" x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}"/>)", lx + 4, ly - 6, ly + 6), "sweep instant");
  legend(fmt::format(R"(<line class="restart" x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}"/>)", lx + 4, ly - 6, ly + 6), "server restart");
  lx = left_px;
  ly += 20;
  legend(mark_shape("grant", lx + 4, ly), "grant (free key)");
  legend(mark_shape("handoff", lx + 4, ly), "hand-off on release");
  legend(mark_shape("sweep-handoff", lx + 4, ly), "hand-off by the sweep");
  legend(mark_shape("takeover", lx + 4, ly), "takeover of an expired key");
  legend(mark_shape("timeout", lx + 4, ly), "waiter timed out");
  legend(mark_shape("sweep", lx + 4, ly - hold_px + 6), "sweep acted");
  svg += "</svg>\n";
  return svg;
}

}  // namespace lockstep::sim
