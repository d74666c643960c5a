// The timeline canvas (sim/core/timeline_svg.hpp): one row per key, time
// left to right. In a row, the top lane holds the holder bars (label: owner
// and token; the pale tail is a lease that ended but was not yet swept or
// taken over), the lanes below the waiters, oldest on top. Marks sit on the
// holder lane; what each mode adds (vertical instants, node rows) is the
// mode's.
#include "sim/core/timeline_svg.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "markup/markup.hpp"

namespace lockstep::sim {

namespace svg {

namespace {

constexpr std::size_t lanes_max = 6;

// What both timelines draw alike; each mode appends its own classes.
constexpr std::string_view shared_style =
    ".hold{fill:#9cc3e6;stroke:#2f6b9a}.overdue{fill:#e3edf6;stroke:#9bb4c9;stroke-dasharray:3,2}"
    ".wait{fill:#f3c98b;stroke:#b07a2a}.key{font-weight:bold}.axis{stroke:#444}"
    ".grant{fill:#2ca02c}.handoff{fill:#1f77b4}.timeout{stroke:#d62728;stroke-width:2;fill:none}";

// A round step for axis ticks: about ten ticks over the span.
std::int64_t tick_step(std::int64_t span_ms) {
  for (std::int64_t base = 1;; base *= 10) {
    for (const std::int64_t factor : {1, 2, 5}) {
      if (span_ms / (base * factor) <= 12) return base * factor;
    }
  }
}

// Keys are `k<number>` in both simulators: drawn in numeric order.
std::uint32_t key_number(const std::string& key) {
  std::uint32_t value = 0;
  for (std::size_t i = 1; i < key.size(); ++i) value = value * 10 + static_cast<std::uint32_t>(key[i] - '0');
  return value;
}

}  // namespace


std::string mark_shape(std::string_view kind, double x, double y) {
  const auto cls = fmt::format("mark {}", kind);
  if (kind == "grant") return fmt::format(R"(<circle class="{}" cx="{:.1f}" cy="{:.1f}" r="4"/>)", cls, x, y);
  if (kind == "handoff" || kind == "sweep-handoff") {
    return fmt::format(R"(<path class="{}" d="M{:.1f},{:.1f} l5,5 l-5,5 l-5,-5 z"/>)", cls, x, y - 5);
  }
  if (kind == "takeover") return fmt::format(R"(<path class="{}" d="M{:.1f},{:.1f} l5,9 l-10,0 z"/>)", cls, x, y - 5);
  if (kind == "timeout") {
    return fmt::format(R"(<path class="{}" d="M{:.1f},{:.1f} l6,6 m0,-6 l-6,6"/>)", cls, x - 3, y - 3);
  }
  // Expire's marks: a key handed on (a flag pointing on) or deleted (a square).
  if (kind == "expire-handoff") {
    return fmt::format(R"(<path class="{}" d="M{:.1f},{:.1f} l9,5 l-9,5 z"/>)", cls, x - 3, y - 5);
  }
  if (kind == "expire-delete") {
    return fmt::format(R"(<rect class="{}" x="{:.1f}" y="{:.1f}" width="9" height="9"/>)", cls, x - 4.5, y - 4.5);
  }
  return fmt::format(R"(<path class="{}" d="M{:.1f},{:.1f} l4,-7 l-8,0 z"/>)", cls, x,
                     y + TimelineCanvas::hold_px - 2);  // sweep
}

TimelineCanvas::TimelineCanvas(TimeMs end) : span_ms_(std::max<std::int64_t>(end.value, 1)) {}

double TimelineCanvas::x_of(TimeMs t) const {
  // What runs on past the end is cut at the chart's edge.
  const auto clamped = std::clamp<std::int64_t>(t.value, 0, span_ms_);
  return left_px + chart_px * static_cast<double>(clamped) / static_cast<double>(span_ms_);
}

void TimelineCanvas::title(std::string_view text) {
  fmt::format_to(std::back_inserter(body_), R"(<text x="{}" y="18" font-size="13">{}</text>)" "\n", left_px,
                 escape_markup(text));
}

void TimelineCanvas::axis() {
  auto out = std::back_inserter(body_);
  const double y = top_px - 10;
  fmt::format_to(out, R"(<line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"/>)" "\n", left_px, y, left_px + chart_px, y);
  const auto step = tick_step(span_ms_);
  for (std::int64_t t = 0; t <= span_ms_; t += step) {
    fmt::format_to(out,
                   R"(<line class="axis" x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}"/><text x="{0:.1f}" y="{3}" text-anchor="middle">{4} ms</text>)" "\n",
                   x_of(TimeMs{t}), y - 4, y, y - 8, t);
  }
}

void TimelineCanvas::instant(std::string_view css_class, TimeMs at, double y0, double y1, std::string_view tip) {
  auto out = std::back_inserter(under_);
  fmt::format_to(out, R"(<line class="{0}" x1="{1:.1f}" y1="{2:.1f}" x2="{1:.1f}" y2="{3:.1f}")", css_class, x_of(at),
                 y0, y1);
  if (tip.empty()) {
    under_ += "/>\n";
  } else {
    fmt::format_to(out, "><title>{}</title></line>\n", escape_markup(tip));
  }
}

void TimelineCanvas::row_label(double top, std::string_view text) {
  fmt::format_to(std::back_inserter(body_), R"(<text class="key" x="8" y="{:.1f}">{}</text>)" "\n", top + 14,
                 escape_markup(text));
}

void TimelineCanvas::bar(std::string_view css_class, TimeMs start, TimeMs end, double top, double height,
                         std::string_view tip, std::string_view label) {
  const double x0 = x_of(start);
  const double x1 = std::max(x_of(end), x0 + 1);
  fmt::format_to(std::back_inserter(body_),
                 R"(<rect class="{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{}"><title>{}</title></rect>)" "\n",
                 css_class, x0, top, x1 - x0, height, escape_markup(tip));
  if (!label.empty() && x1 - x0 > 8 + 6.2 * static_cast<double>(label.size())) {
    fmt::format_to(std::back_inserter(body_), R"(<text class="holder" x="{:.1f}" y="{:.1f}">{}</text>)" "\n", x0 + 6,
                   top + height - 5, escape_markup(label));
  }
}

double TimelineCanvas::key_rows(const std::vector<TimelineBar>& bars, const std::vector<TimelineMark>& marks,
                                std::size_t keys_max, double top) {
  // The busiest keys, drawn in key order.
  std::map<std::string, std::size_t> activity;
  for (const auto& bar : bars) ++activity[bar.key];
  std::vector<std::pair<std::size_t, std::string>> ranked;
  for (const auto& [key, count] : activity) ranked.emplace_back(count, key);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (ranked.size() > keys_max) ranked.resize(keys_max);
  std::vector<std::string> keys;
  for (const auto& entry : ranked) keys.push_back(entry.second);
  std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return key_number(a) < key_number(b); });
  keys_seen_ = activity.size();
  keys_drawn_ = keys.size();

  double y = top;
  for (const auto& key : keys) {
    // Waiter bars get lanes: the first lane free at their start.
    std::vector<TimeMs> lane_free;
    std::vector<std::pair<const TimelineBar*, std::size_t>> waits;
    for (const auto& bar : bars) {
      if (bar.key != key || bar.hold) continue;
      std::size_t lane = 0;
      while (lane < lane_free.size() && lane_free[lane] > bar.start) ++lane;
      if (lane == lane_free.size() && lane < lanes_max) lane_free.push_back(bar.end);
      if (lane < lanes_max) lane_free[lane] = std::max(lane_free[lane], bar.end);
      waits.emplace_back(&bar, std::min(lane, lanes_max - 1));
    }
    row_label(y, key);
    for (const auto& bar : bars) {
      if (bar.key != key || !bar.hold) continue;
      const TimeMs lease_end = std::min(bar.end, bar.expiry);
      const auto tip = fmt::format("{} holds {} with token {} from {} ms; lease to {} ms; ended {} at {} ms",
                                   bar.owner, key, bar.token.value, bar.start.value, bar.expiry.value, bar.ended,
                                   bar.end.value);
      this->bar("hold", bar.start, lease_end, y, hold_px, tip, fmt::format("{} #{}", bar.owner, bar.token.value));
      if (bar.end > bar.expiry) this->bar("overdue", lease_end, bar.end, y + 3, hold_px - 6, tip);
    }
    for (const auto& [bar, lane] : waits) {
      const double lane_y = y + hold_px + 1 + static_cast<double>(lane) * lane_px;
      const auto tip = fmt::format("{} waits for {} from {} ms, deadline {} ms: {} at {} ms", bar->owner, key,
                                   bar->start.value, bar->expiry.value, bar->ended, bar->end.value);
      this->bar("wait", bar->start, bar->end, lane_y, lane_px - 2, tip);
      // A timeout is drawn where the waiter's bar ends, in its lane.
      if (bar->ended == "timeout") body_ += mark_shape("timeout", x_of(bar->end), lane_y + 2) + "\n";
    }
    for (const auto& mark : marks) {
      if (mark.key == key && mark.kind != "timeout") body_ += mark_shape(mark.kind, x_of(mark.at), y + 3) + "\n";
    }
    y += hold_px + static_cast<double>(std::max<std::size_t>(lane_free.size(), 1)) * lane_px + row_gap_px;
  }
  extend_to(y);
  return y;
}

void TimelineCanvas::legend_row() {
  legend_x_ = left_px;
  legend_y_ = (legend_y_ == 0 ? bottom_ : legend_y_) + 20;
}

void TimelineCanvas::legend(const std::string& shape, std::string_view text) {
  body_ += shape + "\n";
  fmt::format_to(std::back_inserter(body_), R"(<text x="{:.1f}" y="{:.1f}">{}</text>)" "\n", legend_x_ + 12,
                 legend_y_ + 4, escape_markup(text));
  legend_x_ += 30 + 6.2 * static_cast<double>(text.size());
}

std::string TimelineCanvas::swatch(std::string_view css_class, double height) const {
  return fmt::format(R"(<rect class="{}" x="{:.1f}" y="{:.1f}" width="9" height="{}"/>)", css_class, legend_x_,
                     legend_y_ - height / 2, height);
}

std::string TimelineCanvas::swatch_mark(std::string_view kind) const {
  // The sweep's mark sits at the foot of a holder lane: lift it to the pen.
  const double y = kind == "sweep" ? legend_y_ - hold_px + 6 : legend_y_;
  return mark_shape(kind, legend_x_ + 4, y);
}

std::string TimelineCanvas::swatch_line(std::string_view css_class) const {
  return fmt::format(R"(<line class="{0}" x1="{1:.1f}" y1="{2:.1f}" x2="{1:.1f}" y2="{3:.1f}"/>)", css_class,
                     legend_x_ + 4, legend_y_ - 6, legend_y_ + 6);
}

std::string TimelineCanvas::finish(std::string_view extra_style) const {
  const double height = std::max(bottom_, legend_y_) + 35;
  const double width = left_px + chart_px + right_px;
  std::string svg = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0:.0f}" height="{1:.0f}" viewBox="0 0 {0:.0f} {1:.0f}" font-family="sans-serif" font-size="11">)" "\n",
      width, height);
  fmt::format_to(std::back_inserter(svg), "<style>{}{}</style>\n", shared_style, extra_style);
  svg += R"(<rect x="0" y="0" width="100%" height="100%" fill="white"/>)" "\n";
  svg += under_;
  svg += body_;
  svg += "</svg>\n";
  return svg;
}

}  // namespace svg

}  // namespace lockstep::sim
