// One key's violation as an SVG timeline (violation_svg.hpp). The drawing
// is a small class whose steps each draw one layer, in the order they
// stack: the window and lanes are chosen first, then the axis and lanes,
// the vertical instants (sweeps, nemesis steps), the expected answer's
// band, and the marks with the labels that fit; the legend lists only what
// was drawn.
#include "report/violation_svg.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "markup/markup.hpp"

namespace lockstep::history {

std::vector<NemesisMark> nemesis_marks(const History& history) {
  std::vector<NemesisMark> marks;
  for (const auto& event : history.events) {
    if (event.kind == EventKind::nemesis) marks.push_back({event.t_us, event.line});
  }
  return marks;
}

std::string offset_text(std::int64_t us, std::int64_t origin_us) {
  return fmt::format("{}{:.3f} ms", us >= origin_us ? "+" : "", (us - origin_us) / 1000.0);
}

double tick_step(double span, int count) {
  const double raw = span / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= factor * power) return factor * power;
  }
  return 10 * power;
}

namespace {

class ViolationDrawing {
 public:
  ViolationDrawing(const KeyInput& input, const Finding& finding, std::int64_t origin_us)
      : input_(input), focus_(finding.focus), origin_us_(origin_us) {
    collect_marks();
    choose_window(finding.at_us);
    choose_lanes();
  }

  std::string draw(const PhaseSet* phases, const std::vector<NemesisMark>& nemesis) {
    axis_and_lanes();
    sweeps(phases);
    nemesis_steps(nemesis);
    expected_band();
    marks_and_labels();
    svg_ += "</svg>";
    return svg_ + legend() + note();
  }

 private:
  struct Mark {
    std::int64_t us;
    std::uint32_t conn;  // the history's connection number
    enum Kind { sent, received, closed } kind;
    std::string_view label;
  };
  static constexpr double width_ = 1000, left_ = 48, right_ = 12, top_ = 26, lane_height_ = 34;
  // At most this many marks: the window narrows around the focus until it holds them.
  static constexpr std::size_t marks_max_ = 160;
  static constexpr std::size_t label_chars_max_ = 40;

  void collect_marks() {
    for (const auto& request : input_.requests) {
      marks_.push_back({request.sent_us, input_.conns[request.conn].id, Mark::sent, request.line});
    }
    for (const auto& seen : input_.observations) {
      marks_.push_back({seen.received_us, input_.conns[seen.conn].id, Mark::received, seen.line});
    }
    for (const auto& conn : input_.conns) {
      if (conn.closes) marks_.push_back({conn.end_us, conn.id, Mark::closed, "closed"});
    }
    std::stable_sort(marks_.begin(), marks_.end(), [](const Mark& a, const Mark& b) { return a.us < b.us; });
  }

  // The window: the culprit, the expected answer and its cause, with room
  // before them for the events that led there.
  void choose_window(std::int64_t finding_at_us) {
    first_us_ = std::numeric_limits<std::int64_t>::max();
    last_us_ = std::numeric_limits<std::int64_t>::min();
    for (const auto us : {focus_.culprit_us, focus_.cause_us, focus_.expected_from_us, focus_.expected_by_us}) {
      if (us < 0) continue;
      first_us_ = std::min(first_us_, us);
      last_us_ = std::max(last_us_, us);
    }
    if (first_us_ > last_us_) first_us_ = last_us_ = finding_at_us;
    const std::int64_t span = std::max<std::int64_t>(last_us_ - first_us_, 20'000);
    first_us_ = std::max(first_us_ - span, origin_us_);
    last_us_ += span / 4;
    const auto count_in = [&](std::int64_t from, std::int64_t to) {
      return static_cast<std::size_t>(
          std::count_if(marks_.begin(), marks_.end(), [&](const Mark& m) { return m.us >= from && m.us <= to; }));
    };
    while (count_in(first_us_, last_us_) > marks_max_ && last_us_ - first_us_ > 2'000) {
      const auto centre = focus_.culprit_us >= 0 ? focus_.culprit_us : (first_us_ + last_us_) / 2;
      first_us_ = centre - (centre - first_us_) * 3 / 4;
      last_us_ = centre + (last_us_ - centre) * 3 / 4;
    }
    for (const auto& mark : marks_) {
      if (mark.us >= first_us_ && mark.us <= last_us_) shown_.push_back(mark);
    }
  }

  void choose_lanes() {
    std::set<std::uint32_t> lane_set;
    for (const auto& mark : shown_) lane_set.insert(mark.conn);
    if (!focus_.expected.empty()) lane_set.insert(focus_.expected_conn);
    if (focus_.culprit_us >= 0) lane_set.insert(focus_.culprit_conn);
    lanes_.assign(lane_set.begin(), lane_set.end());
    height_ = top_ + lane_height_ * static_cast<double>(lanes_.size()) + 24;
  }

  double x(std::int64_t us) const {
    return left_ + (width_ - left_ - right_) * static_cast<double>(us - first_us_) /
                       static_cast<double>(last_us_ - first_us_);
  }
  double y(std::uint32_t conn) const {
    const auto lane = static_cast<double>(std::lower_bound(lanes_.begin(), lanes_.end(), conn) - lanes_.begin());
    return top_ + lane_height_ * lane + lane_height_ / 2;
  }

  // The time axis, in ms from the incarnation's start, and a line per lane.
  void axis_and_lanes() {
    svg_ = fmt::format("<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {} {:.0f}' class='timeline' "
                       "role='img' aria-label='timeline of key {}'>",
                       width_, height_, escape_markup(input_.key));
    const double step_us = tick_step(static_cast<double>(last_us_ - first_us_), 8);
    for (double tick = std::ceil(static_cast<double>(first_us_ - origin_us_) / step_us) * step_us;
         tick + static_cast<double>(origin_us_) <= static_cast<double>(last_us_); tick += step_us) {
      const double at = x(static_cast<std::int64_t>(tick) + origin_us_);
      svg_ += fmt::format("<line x1='{0:.1f}' y1='{1:.0f}' x2='{0:.1f}' y2='{2:.0f}' class='grid'/><text x='{0:.1f}' "
                          "y='14' class='axis'>+{3:g} ms</text>",
                          at, top_ - 4, height_ - 20, tick / 1000.0);
    }
    for (const auto conn : lanes_) {
      svg_ += fmt::format("<text x='4' y='{0:.1f}' class='lane-name'>c{1}</text><line x1='{2}' y1='{0:.1f}' x2='{3}' "
                          "y2='{0:.1f}' class='lane'/>",
                          y(conn), conn, left_, width_ - right_);
    }
  }

  void sweeps(const PhaseSet* phases) {
    if (phases == nullptr || !phases->pinned()) return;
    const auto period = phases->period();
    const auto residue = phases->ranges().front().first;
    std::int64_t at_ms = first_us_ / 1000 - ((first_us_ / 1000 - residue) % period + period) % period;
    for (; at_ms * 1000 <= last_us_; at_ms += period) {
      if (at_ms * 1000 < first_us_) continue;
      svg_ += fmt::format("<line x1='{0:.1f}' y1='{1:.0f}' x2='{0:.1f}' y2='{2:.0f}' class='sweep'><title>sweep at {3}"
                          "</title></line>",
                          x(at_ms * 1000), top_ - 4, height_ - 20, offset_text(at_ms * 1000, origin_us_));
      drawn_.insert("sweep");
    }
  }

  // The nemesis's steps in the window: a fault near a violation is the
  // first thing to look at.
  void nemesis_steps(const std::vector<NemesisMark>& nemesis) {
    for (const auto& mark : nemesis) {
      if (mark.us < first_us_ || mark.us > last_us_) continue;
      svg_ += fmt::format("<line x1='{0:.1f}' y1='{1:.0f}' x2='{0:.1f}' y2='{2:.0f}' class='nemesis'><title>nemesis at "
                          "{3}: {4}</title></line><text x='{5:.1f}' y='{6:.0f}' class='nemesis-label'>{4}</text>",
                          x(mark.us), top_ - 4, height_ - 20, offset_text(mark.us, origin_us_), escape_markup(mark.what),
                          x(mark.us) + 2, height_ - 8);
      drawn_.insert("nemesis");
    }
  }

  void expected_band() {
    if (focus_.expected.empty()) return;
    const auto from = std::max(first_us_, focus_.expected_from_us), to = std::min(last_us_, focus_.expected_by_us);
    const double row = y(focus_.expected_conn);
    svg_ += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='16' class='expected'><title>expected {} "
                        "from {} to {}</title></rect><text x='{:.1f}' y='{:.1f}' class='expected-label'>expected {}</text>",
                        x(from), row - 8, std::max(2.0, x(to) - x(from)), escape_markup(focus_.expected),
                        offset_text(focus_.expected_from_us, origin_us_), offset_text(focus_.expected_by_us, origin_us_), x(from),
                        row + 15, escape_markup(focus_.expected));
    drawn_.insert("expected");
    // The expected answer's own label takes the row below its lane.
    const double label_from = x(std::max(first_us_, focus_.expected_from_us));
    taken_[{focus_.expected_conn, 1}].emplace_back(
        label_from, label_from + 5.6 * static_cast<double>(focus_.expected.size() + 9) + 6);
  }

  // Where a label of `chars` characters at x `at` lies (near the right
  // edge a label ends at its mark instead of starting there).
  std::pair<double, double> label_span(double at, std::size_t chars) const {
    const double label_width = 5.6 * static_cast<double>(std::min(chars, label_chars_max_)) + 6;
    const bool flip = at + label_width > width_ - right_;
    return flip ? std::pair{at - 3 - label_width, at - 3} : std::pair{at + 3, at + 3 + label_width};
  }

  // The row (0 above the lane, 1 below) where the label overlaps no label
  // already placed, or -1: it keeps its text as a tooltip only.
  int place_label(std::uint32_t conn, double at, std::size_t chars) {
    const auto [from, to] = label_span(at, chars);
    for (const int row : {0, 1}) {
      auto& spans = taken_[{conn, row}];
      const bool free = std::none_of(spans.begin(), spans.end(),
                                     [&](const auto& other) { return from < other.second && other.first < to; });
      if (free) {
        spans.emplace_back(from, to);
        return row;
      }
    }
    return -1;
  }

  bool is_culprit(const Mark& mark) const {
    return mark.kind == Mark::received && mark.us == focus_.culprit_us && mark.conn == focus_.culprit_conn;
  }

  // Labels where they fit, the culprit's first, so it is always drawn and
  // nothing is drawn over it.
  std::vector<int> label_rows() {
    std::vector<int> rows(shown_.size(), -1);
    for (std::size_t i = 0; i < shown_.size(); ++i) {
      if (is_culprit(shown_[i])) rows[i] = place_label(shown_[i].conn, x(shown_[i].us), shown_[i].label.size());
    }
    for (std::size_t i = 0; i < shown_.size(); ++i) {
      if (!is_culprit(shown_[i])) rows[i] = place_label(shown_[i].conn, x(shown_[i].us), shown_[i].label.size());
    }
    return rows;
  }

  void marks_and_labels() {
    const auto rows = label_rows();
    for (std::size_t i = 0; i < shown_.size(); ++i) {
      mark_shape(shown_[i]);
      if (rows[i] >= 0) mark_label(shown_[i], rows[i]);
    }
  }

  void mark_shape(const Mark& mark) {
    const double at = x(mark.us), row = y(mark.conn);
    const bool culprit = is_culprit(mark);
    const auto title = escape_markup(fmt::format(
        "{} c{} {} {}", offset_text(mark.us, origin_us_), mark.conn,
        mark.kind == Mark::sent ? "sent" : mark.kind == Mark::received ? "read" : "", mark.label));
    switch (mark.kind) {
      case Mark::sent:
        svg_ += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='2' height='12' class='sent'><title>{}</title></rect>",
                            at - 1, row - 6, title);
        drawn_.insert("sent");
        break;
      case Mark::received:
        svg_ += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='{}' class='{}'><title>{}</title></circle>", at, row,
                            culprit ? 6 : 3.5, culprit ? "culprit" : "received", title);
        drawn_.insert(culprit ? "culprit" : "received");
        break;
      case Mark::closed:
        svg_ += fmt::format("<path d='M{0:.1f} {1:.1f}l8 8m0 -8l-8 8' class='closed'><title>{2}</title></path>", at - 4,
                            row - 4, title);
        drawn_.insert("closed");
        break;
    }
  }

  void mark_label(const Mark& mark, int label_row) {
    const double at = x(mark.us), row = y(mark.conn);
    const auto text = mark.label.size() > label_chars_max_
                          ? std::string(mark.label.substr(0, label_chars_max_ - 1)) + "…"
                          : std::string(mark.label);
    const bool flip = label_span(at, mark.label.size()).first < at;
    svg_ += fmt::format("<text x='{:.1f}' y='{:.1f}' class='{}'{}>{}</text>", flip ? at - 3 : at + 3,
                        row + (label_row == 0 ? -8 : 15), is_culprit(mark) ? "label culprit-label" : "label",
                        flip ? " text-anchor='end'" : "", escape_markup(text));
  }

  std::string legend() const {
    std::string legend = "<p class='legend'>";
    const std::pair<const char*, const char*> items[] = {
        {"sent", "<span class='key-sent'></span> request sent"},
        {"received", "<span class='key-received'></span> response read"},
        {"culprit", "<span class='key-culprit'></span> the culprit"},
        {"expected", "<span class='key-expected'></span> when the expected answer was due"},
        {"closed", "<span class='key-closed'>×</span> connection closed"},
        {"sweep", "<span class='key-sweep'></span> sweep instant"},
        {"nemesis", "<span class='key-nemesis'></span> nemesis (kill, pause, restart ...)"}};
    for (const auto& [name, text] : items) {
      if (drawn_.contains(name)) legend += std::string(text) + " ";
    }
    return legend + "</p>";
  }

  // What the window holds, and how much it leaves out.
  std::string note() const {
    const auto outside = marks_.size() - shown_.size();
    std::string note = fmt::format("<p class='note'>Key <code>{}</code> from {} to {}: {} of its {} events drawn",
                                   escape_markup(input_.key), offset_text(first_us_, origin_us_),
                                   offset_text(last_us_, origin_us_), shown_.size(), marks_.size());
    note += outside > 0
                ? fmt::format("; the {} others lie outside this window (the text below lists the story).</p>", outside)
                : ".</p>";
    return note;
  }

  const KeyInput& input_;
  const Focus& focus_;
  std::int64_t origin_us_;
  std::vector<Mark> marks_, shown_;
  std::int64_t first_us_ = 0, last_us_ = 0;
  std::vector<std::uint32_t> lanes_;
  double height_ = 0;
  std::string svg_;
  std::set<std::string> drawn_;
  // The label spans taken in each (connection, row above or below).
  std::map<std::pair<std::uint32_t, int>, std::vector<std::pair<double, double>>> taken_;
};

}  // namespace

std::string violation_svg(const KeyInput& input, const Finding& finding, const PhaseSet* phases, std::int64_t origin_us,
                          const std::vector<NemesisMark>& nemesis) {
  return ViolationDrawing(input, finding, origin_us).draw(phases, nemesis);
}

}  // namespace lockstep::history
