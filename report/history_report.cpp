#include "report/history_report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "check/build.hpp"

namespace lockstep::history {

namespace {

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

std::string story_text(const Finding& finding) {
  std::string text = finding.summary + "\n";
  for (const auto& line : finding.story) text += line + "\n";
  return text;
}

// Escaped text in which each `quoted` part becomes <code>quoted</code>: the
// report shows no literal backticks.
std::string rich(std::string_view text) {
  std::string out;
  bool open = false;
  std::size_t from = 0;
  for (std::size_t at = 0; at <= text.size(); ++at) {
    if (at < text.size() && text[at] != '`') continue;
    out += escape_markup(text.substr(from, at - from));
    if (at < text.size()) out += open ? "</code>" : "<code>";
    open = !open;
    from = at + 1;
  }
  if (!open) out += "</code>";  // an odd backtick: close what it opened
  return out;
}

std::string at_text(std::int64_t us, std::int64_t origin_us) {
  return fmt::format("{}{:.3f} ms", us >= origin_us ? "+" : "", (us - origin_us) / 1000.0);
}

// A step of 1, 2 or 5 times a power of ten, so that about `count` ticks
// cover `span`.
double tick_step(double span, int count) {
  const double raw = span / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double factor : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= factor * power) return factor * power;
  }
  return 10 * power;
}

// One key's violation drawn around its culprit: a time axis, one lane per
// connection that has events of the key in the window, a tick per request
// sent, a dot per response read, the culprit ringed, the expected answer as
// a band from its cause to the latest instant it could arrive, closes, and
// the sweep instants when the phase is known. Only what is drawn is in the
// legend; what the window leaves out is counted, never dropped silently.
// What a tester did to the target (`nemesis` events), in the history's order.
struct NemesisMark {
  std::int64_t us;
  std::string what;
};

std::vector<NemesisMark> nemesis_marks(const History& history) {
  std::vector<NemesisMark> marks;
  for (const auto& event : history.events) {
    if (event.kind == EventKind::nemesis) marks.push_back({event.t_us, event.line});
  }
  return marks;
}

std::string violation_svg(const KeyInput& input, const Finding& finding, const PhaseSet* phases, std::int64_t origin_us,
                          const std::vector<NemesisMark>& nemesis) {
  struct Mark {
    std::int64_t us;
    std::uint32_t conn;  // the history's connection number
    enum Kind { sent, received, closed } kind;
    std::string_view label;
  };
  std::vector<Mark> marks;
  for (const auto& request : input.requests) marks.push_back({request.sent_us, input.conns[request.conn].id, Mark::sent, request.line});
  for (const auto& seen : input.observations) marks.push_back({seen.received_us, input.conns[seen.conn].id, Mark::received, seen.line});
  for (const auto& conn : input.conns) {
    if (conn.closes) marks.push_back({conn.end_us, conn.id, Mark::closed, "closed"});
  }
  std::stable_sort(marks.begin(), marks.end(), [](const Mark& a, const Mark& b) { return a.us < b.us; });
  const auto& focus = finding.focus;
  // The window: the culprit, the expected answer and its cause, with room
  // before them for the events that led there.
  std::int64_t first_us = std::numeric_limits<std::int64_t>::max(), last_us = std::numeric_limits<std::int64_t>::min();
  for (const auto us : {focus.culprit_us, focus.cause_us, focus.expected_from_us, focus.expected_by_us}) {
    if (us < 0) continue;
    first_us = std::min(first_us, us);
    last_us = std::max(last_us, us);
  }
  if (first_us > last_us) first_us = last_us = finding.at_us;
  const std::int64_t span = std::max<std::int64_t>(last_us - first_us, 20'000);
  first_us = std::max(first_us - span, origin_us);
  last_us += span / 4;
  // At most this many marks: the window narrows around the focus until it holds them.
  constexpr std::size_t marks_max = 160;
  const auto count_in = [&](std::int64_t from, std::int64_t to) {
    return static_cast<std::size_t>(std::count_if(marks.begin(), marks.end(), [&](const Mark& m) { return m.us >= from && m.us <= to; }));
  };
  while (count_in(first_us, last_us) > marks_max && last_us - first_us > 2'000) {
    const auto centre = focus.culprit_us >= 0 ? focus.culprit_us : (first_us + last_us) / 2;
    first_us = centre - (centre - first_us) * 3 / 4;
    last_us = centre + (last_us - centre) * 3 / 4;
  }
  std::vector<Mark> shown;
  for (const auto& mark : marks) {
    if (mark.us >= first_us && mark.us <= last_us) shown.push_back(mark);
  }
  std::set<std::uint32_t> lane_set;
  for (const auto& mark : shown) lane_set.insert(mark.conn);
  if (!focus.expected.empty()) lane_set.insert(focus.expected_conn);
  if (focus.culprit_us >= 0) lane_set.insert(focus.culprit_conn);
  const std::vector<std::uint32_t> lanes(lane_set.begin(), lane_set.end());
  const auto lane_of = [&](std::uint32_t conn) {
    return static_cast<double>(std::lower_bound(lanes.begin(), lanes.end(), conn) - lanes.begin());
  };
  const double width = 1000, left = 48, right = 12, top = 26, lane_height = 34;
  const double height = top + lane_height * static_cast<double>(lanes.size()) + 24;
  const auto x = [&](std::int64_t us) {
    return left + (width - left - right) * static_cast<double>(us - first_us) / static_cast<double>(last_us - first_us);
  };
  const auto y = [&](std::uint32_t conn) { return top + lane_height * lane_of(conn) + lane_height / 2; };
  std::string svg = fmt::format("<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {} {:.0f}' class='timeline' "
                                "role='img' aria-label='timeline of key {}'>",
                                width, height, escape_markup(input.key));
  // The time axis, in ms from the incarnation's start.
  const double step_us = tick_step(static_cast<double>(last_us - first_us), 8);
  for (double tick = std::ceil(static_cast<double>(first_us - origin_us) / step_us) * step_us;
       tick + static_cast<double>(origin_us) <= static_cast<double>(last_us); tick += step_us) {
    const double at = x(static_cast<std::int64_t>(tick) + origin_us);
    svg += fmt::format("<line x1='{0:.1f}' y1='{1:.0f}' x2='{0:.1f}' y2='{2:.0f}' class='grid'/><text x='{0:.1f}' "
                       "y='14' class='axis'>+{3:g} ms</text>",
                       at, top - 4, height - 20, tick / 1000.0);
  }
  for (const auto conn : lanes) {
    svg += fmt::format("<text x='4' y='{0:.1f}' class='lane-name'>c{1}</text><line x1='{2}' y1='{0:.1f}' x2='{3}' "
                       "y2='{0:.1f}' class='lane'/>",
                       y(conn), conn, left, width - right);
  }
  std::set<std::string> drawn;
  if (phases != nullptr && phases->pinned()) {
    const auto period = phases->period();
    const auto residue = phases->ranges().front().first;
    std::int64_t at_ms = first_us / 1000 - ((first_us / 1000 - residue) % period + period) % period;
    for (; at_ms * 1000 <= last_us; at_ms += period) {
      if (at_ms * 1000 < first_us) continue;
      svg += fmt::format("<line x1='{0:.1f}' y1='{1:.0f}' x2='{0:.1f}' y2='{2:.0f}' class='sweep'><title>sweep at {3}"
                         "</title></line>",
                         x(at_ms * 1000), top - 4, height - 20, at_text(at_ms * 1000, origin_us));
      drawn.insert("sweep");
    }
  }
  // The nemesis's steps in the window: a fault near a violation is the
  // first thing to look at.
  for (const auto& mark : nemesis) {
    if (mark.us < first_us || mark.us > last_us) continue;
    svg += fmt::format("<line x1='{0:.1f}' y1='{1:.0f}' x2='{0:.1f}' y2='{2:.0f}' class='nemesis'><title>nemesis at {3}: "
                       "{4}</title></line><text x='{5:.1f}' y='{6:.0f}' class='nemesis-label'>{4}</text>",
                       x(mark.us), top - 4, height - 20, at_text(mark.us, origin_us), escape_markup(mark.what),
                       x(mark.us) + 2, height - 8);
    drawn.insert("nemesis");
  }
  if (!focus.expected.empty()) {
    const auto from = std::max(first_us, focus.expected_from_us), to = std::min(last_us, focus.expected_by_us);
    const double row = y(focus.expected_conn);
    svg += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='{:.1f}' height='16' class='expected'><title>expected {} "
                       "from {} to {}</title></rect><text x='{:.1f}' y='{:.1f}' class='expected-label'>expected {}</text>",
                       x(from), row - 8, std::max(2.0, x(to) - x(from)), escape_markup(focus.expected),
                       at_text(focus.expected_from_us, origin_us), at_text(focus.expected_by_us, origin_us), x(from),
                       row + 15, escape_markup(focus.expected));
    drawn.insert("expected");
  }
  // Labels where they fit: two rows per lane (above and below), each label
  // placed only where it overlaps no label already in its row (near the
  // right edge a label ends at its mark instead of starting there); the
  // others keep their text as a tooltip. The culprit's label is placed
  // first, so it is always drawn and nothing is drawn over it.
  constexpr std::size_t label_chars_max = 40;
  const auto label_text = [&](std::string_view label) {
    return label.size() > label_chars_max ? std::string(label.substr(0, label_chars_max - 1)) + "…" : std::string(label);
  };
  const auto label_span = [&](double at, std::size_t chars) {
    const double label_width = 5.6 * static_cast<double>(std::min(chars, label_chars_max)) + 6;
    const bool flip = at + label_width > width - right;
    return flip ? std::pair{at - 3 - label_width, at - 3} : std::pair{at + 3, at + 3 + label_width};
  };
  std::map<std::pair<std::uint32_t, int>, std::vector<std::pair<double, double>>> taken;
  const auto place_label = [&](std::uint32_t conn, double at, std::size_t chars) -> int {
    const auto [from, to] = label_span(at, chars);
    for (const int row : {0, 1}) {
      auto& spans = taken[{conn, row}];
      const bool free = std::none_of(spans.begin(), spans.end(),
                                     [&](const auto& other) { return from < other.second && other.first < to; });
      if (free) {
        spans.emplace_back(from, to);
        return row;
      }
    }
    return -1;
  };
  if (!focus.expected.empty()) {
    // The expected answer's own label takes the row below its lane.
    const double from = x(std::max(first_us, focus.expected_from_us));
    taken[{focus.expected_conn, 1}].emplace_back(from, from + 5.6 * static_cast<double>(focus.expected.size() + 9) + 6);
  }
  const auto is_culprit = [&](const Mark& mark) {
    return mark.kind == Mark::received && mark.us == focus.culprit_us && mark.conn == focus.culprit_conn;
  };
  std::vector<int> label_rows(shown.size(), -1);
  for (std::size_t i = 0; i < shown.size(); ++i) {
    if (!is_culprit(shown[i])) continue;
    label_rows[i] = place_label(shown[i].conn, x(shown[i].us), shown[i].label.size());
  }
  for (std::size_t i = 0; i < shown.size(); ++i) {
    if (!is_culprit(shown[i])) label_rows[i] = place_label(shown[i].conn, x(shown[i].us), shown[i].label.size());
  }
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const auto& mark = shown[i];
    const double at = x(mark.us), row = y(mark.conn);
    const bool culprit = is_culprit(mark);
    const auto title = escape_markup(fmt::format("{} c{} {} {}", at_text(mark.us, origin_us), mark.conn,
                                                 mark.kind == Mark::sent ? "sent" : mark.kind == Mark::received ? "read" : "",
                                                 mark.label));
    switch (mark.kind) {
      case Mark::sent:
        svg += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='2' height='12' class='sent'><title>{}</title></rect>",
                           at - 1, row - 6, title);
        drawn.insert("sent");
        break;
      case Mark::received:
        svg += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='{}' class='{}'><title>{}</title></circle>", at, row,
                           culprit ? 6 : 3.5, culprit ? "culprit" : "received", title);
        drawn.insert(culprit ? "culprit" : "received");
        break;
      case Mark::closed:
        svg += fmt::format("<path d='M{0:.1f} {1:.1f}l8 8m0 -8l-8 8' class='closed'><title>{2}</title></path>", at - 4,
                           row - 4, title);
        drawn.insert("closed");
        break;
    }
    if (label_rows[i] >= 0) {
      const auto text = label_text(mark.label);
      const bool flip = label_span(at, mark.label.size()).first < at;
      svg += fmt::format("<text x='{:.1f}' y='{:.1f}' class='{}'{}>{}</text>", flip ? at - 3 : at + 3,
                         row + (label_rows[i] == 0 ? -8 : 15), culprit ? "label culprit-label" : "label",
                         flip ? " text-anchor='end'" : "", escape_markup(text));
    }
  }
  svg += "</svg>";
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
    if (drawn.contains(name)) legend += std::string(text) + " ";
  }
  legend += "</p>";
  const auto outside = marks.size() - shown.size();
  std::string note = fmt::format("<p class='note'>Key <code>{}</code> from {} to {}: {} of its {} events drawn",
                                 escape_markup(input.key), at_text(first_us, origin_us), at_text(last_us, origin_us),
                                 shown.size(), marks.size());
  note += outside > 0 ? fmt::format("; the {} others lie outside this window (the text below lists the story).</p>", outside)
                      : ".</p>";
  return svg + legend + note;
}

// The whole run on one axis with every nemesis step, and the steps listed.
std::string nemesis_section(const History& history, const std::vector<NemesisMark>& nemesis) {
  const std::int64_t first_us = history.events.empty() ? 0 : history.events.front().t_us;
  const std::int64_t last_us = std::max(first_us + 1, history.events.empty() ? 1 : history.events.back().t_us);
  const double width = 1000, left = 12, right = 12, height = 56;
  const auto x = [&](std::int64_t us) {
    return left + (width - left - right) * static_cast<double>(us - first_us) / static_cast<double>(last_us - first_us);
  };
  std::string svg = fmt::format("<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {} {}' class='run' role='img' "
                                "aria-label='the run with the nemesis steps' id='nemesis-timeline'>"
                                "<line x1='{}' y1='40' x2='{}' y2='40' class='lane'/>",
                                width, height, left, width - right);
  const double step_us = tick_step(static_cast<double>(last_us - first_us), 8);
  for (double tick = 0; tick + static_cast<double>(first_us) <= static_cast<double>(last_us); tick += step_us) {
    svg += fmt::format("<text x='{:.1f}' y='54' class='axis'>+{:g} s</text>", x(first_us + static_cast<std::int64_t>(tick)),
                       tick / 1e6);
  }
  std::string list;
  for (std::size_t i = 0; i < nemesis.size(); ++i) {
    const auto& mark = nemesis[i];
    svg += fmt::format("<line x1='{0:.1f}' y1='6' x2='{0:.1f}' y2='44' class='nemesis'><title>{1}: {2}</title></line>"
                       "<text x='{3:.1f}' y='{4}' class='nemesis-label'>{2}</text>",
                       x(mark.us), at_text(mark.us, first_us), escape_markup(mark.what), x(mark.us) + 2,
                       i % 2 == 0 ? 14 : 28);
    list += fmt::format("<li>{}: <code>{}</code></li>", at_text(mark.us, first_us), escape_markup(mark.what));
  }
  svg += "</svg>";
  return fmt::format("<h2>Nemesis</h2><p class='note'>What the tester did to the target, {} steps, on the history's "
                     "clock from its first event (each violation's timeline marks the steps in its window).</p>{}"
                     "<details><summary>the steps as text</summary><ul id='nemesis-steps'>{}</ul></details>",
                     nemesis.size(), svg, list);
}

constexpr const char* style = R"(
* { box-sizing: border-box; }
body { font-family: sans-serif; margin: 1em auto; padding: 0 1em; max-width: 1100px; color: #222; overflow-wrap: anywhere; }
h1 { font-size: 1.35em; } h2 { font-size: 1.15em; margin-top: 1.4em; } h3 { font-size: 1em; }
pre { background: #f6f6f6; padding: .6em; font-size: .82em; white-space: pre-wrap; overflow-wrap: anywhere; }
code { background: #f0f0f0; padding: 0 .2em; }
.violation { border-left: 5px solid #c00; padding-left: .8em; margin-bottom: 1.5em; }
.expected-text { font-size: 1.05em; }
.ok { color: #060; } .bad { color: #c00; } .unknown { color: #a60; }
svg.timeline { width: 100%; height: auto; border: 1px solid #ddd; background: #fff; display: block; }
.grid { stroke: #eee; } .axis { font-size: 11px; fill: #666; text-anchor: middle; }
.lane { stroke: #ccc; } .lane-name { font-size: 12px; fill: #444; }
.sent { fill: #36c; } .received { fill: #393; } .culprit { fill: #c00; stroke: #600; stroke-width: 2; }
.closed { stroke: #555; stroke-width: 1.5; } .sweep { stroke: #a6a; stroke-dasharray: 4 3; }
.expected { fill: #fc6; fill-opacity: .45; stroke: #c80; stroke-dasharray: 3 2; }
.expected-label { font-size: 11px; fill: #a60; } .label { font-size: 10px; fill: #333; } .culprit-label { fill: #c00; font-weight: bold; }
.legend span { display: inline-block; width: .9em; height: .9em; vertical-align: middle; margin-right: .2em; }
.key-sent { background: #36c; width: .25em !important; } .key-received { background: #393; border-radius: 50%; }
.key-culprit { background: #c00; border-radius: 50%; } .key-expected { background: #fc6; border: 1px dashed #c80; }
.key-sweep { border-left: 2px dashed #a6a; } .key-closed { color: #555; }
.nemesis { stroke: #d40; stroke-width: 1.5; stroke-dasharray: 6 3; } .nemesis-label { font-size: 10px; fill: #d40; }
.key-nemesis { border-left: 2px dashed #d40; }
svg.run { width: 100%; height: auto; border: 1px solid #ddd; background: #fff; display: block; }
.legend, .note { font-size: .85em; color: #555; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; font-size: .85em; }
td, th { border-bottom: 1px solid #eee; padding: .2em .4em; text-align: left; }
)";

}  // namespace

std::string html_report(const History& history, const CheckResult& result) {
  const Built built = build_inputs(history);
  std::string page = "<!DOCTYPE html><html><head><meta charset='utf-8'><meta name='viewport' "
                     "content='width=device-width'><title>lockstep history check</title><style>";
  page += style;
  page += "</style></head><body>";
  const char* verdict_class = result.verdict == Verdict::conforms ? "ok" : result.verdict == Verdict::violation ? "bad" : "unknown";
  page += fmt::format("<h1>lockstep: history check — <span class='{}' id='verdict'>{}</span></h1>", verdict_class,
                      result.verdict == Verdict::conforms ? "conforms"
                      : result.verdict == Verdict::violation ? "violation"
                                                              : "unknown");
  const auto& l = history.header.limits;
  page += fmt::format("<p class='note'>target <code>{}</code>, seed {}, tolerance {} ms; limits assumed: max_keys {}, "
                      "max_waiters_per_key {}, max_waiters {}, sweep_ms {}, max_lease_ms {}, max_wait_ms {}, "
                      "max_line_bytes {}</p>",
                      escape_markup(history.header.target), history.header.seed, history.header.tolerance_ms, l.max_keys,
                      l.max_waiters_per_key, l.max_waiters, l.sweep_ms.value, l.max_lease_ms.value, l.max_wait_ms.value,
                      l.max_line_bytes);
  const auto nemesis = nemesis_marks(history);
  // The violations first: each with the culprit, the expected answer and a
  // timeline around them; the first few drawn, every one listed.
  constexpr std::size_t drawn_max = 8;
  std::set<std::pair<std::uint32_t, std::string>> violating;
  for (std::size_t i = 0; i < result.violations.size(); ++i) {
    const auto& finding = result.violations[i];
    if (!finding.key.empty()) violating.insert({finding.incarnation, finding.key});
    page += fmt::format("<section class='violation' id='violation-{}'><h2>Violation {} of {} [{}]</h2>"
                        "<p class='expected-text'>{}</p>",
                        i + 1, i + 1, result.violations.size(), escape_markup(finding.check), rich(finding.summary));
    const auto origin = finding.incarnation < result.incarnation_start_us.size()
                            ? result.incarnation_start_us[finding.incarnation] : 0;
    const auto found = built.keys.find({finding.incarnation, finding.key});
    if (finding.check == "key" && found != built.keys.end() && i < drawn_max) {
      const auto* phases = finding.incarnation < result.phases.size() ? &result.phases[finding.incarnation] : nullptr;
      page += violation_svg(found->second, finding, phases, origin, nemesis);
    } else if (finding.check == "key" && found != built.keys.end()) {
      page += fmt::format("<p class='note'>Not drawn: only the first {} violations are.</p>", drawn_max);
    }
    // The sentences of the story (the furthest explanation's state, a hint
    // at the limits) as text; its timeline lines behind a summary.
    std::string lines;
    for (const auto& line : finding.story) {
      if (line.starts_with("  ")) {
        lines += rich(line) + "\n";
      } else {
        page += "<p>" + rich(line) + "</p>";
      }
    }
    if (!lines.empty()) page += "<details><summary>the events of the key as text</summary><pre>" + lines + "</pre></details>";
    page += "</section>";
  }
  if (result.violations.empty()) {
    page += result.verdict == Verdict::conforms ? "<p class='ok'>No violation: every response has an explanation.</p>"
                                                : "<p class='unknown'>No violation found, and no verdict either:</p>";
  }
  for (const auto& why : result.unknown) page += fmt::format("<p class='unknown'>unknown: {}</p>", rich(why));
  page += "<h2>Summary</h2><pre id='summary'>";
  for (const auto& line : summary_lines(result)) page += rich(line) + "\n";
  page += "</pre>";
  if (!nemesis.empty()) page += nemesis_section(history, nemesis);
  page += "<h2>Sweep instants</h2><ul>";
  for (std::size_t at = 0; at < result.phases.size(); ++at) {
    const auto& phases = result.phases[at];
    if (phases.empty()) {
      page += fmt::format("<li>incarnation {}: no phase explains every key</li>", at + 1);
    } else if (phases.size() == phases.period()) {
      page += fmt::format("<li>incarnation {}: not constrained (no sweep was observable)</li>", at + 1);
    } else {
      std::string list;
      for (std::size_t r = 0; r < phases.ranges().size() && r < 8; ++r) {
        list += fmt::format(" {}..{}", phases.ranges()[r].first, phases.ranges()[r].second);
      }
      if (phases.ranges().size() > 8) list += fmt::format(" and {} more ranges", phases.ranges().size() - 8);
      page += fmt::format("<li>incarnation {}: sweeps at <i>phase</i> + k × {} ms on the history's clock, with the "
                          "phase (ms) in{}</li>",
                          at + 1, phases.period(), list);
    }
  }
  page += "</ul>";
  // Every key in one table; the whole-run detail of a key is one command
  // away rather than in this page (check-history --explain KEY).
  page += "<h2>Keys</h2><p class='note'>For the whole run of one key, <code>lockstep check-history FILE --explain KEY"
          "</code> prints the instant of each step of an explanation.</p><table><tr><th>key</th><th>incarnation</th>"
          "<th>requests</th><th>responses</th><th>verdict</th></tr>";
  constexpr std::size_t rows_max = 1000;
  std::size_t rows = 0;
  for (const auto& [where, input] : built.keys) {
    if (++rows > rows_max) break;
    page += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        escape_markup(input.key), where.first + 1, input.requests.size(), input.observations.size(),
                        violating.contains(where) ? "<span class='bad'>violation</span>" : "");
  }
  page += "</table>";
  if (built.keys.size() > rows_max) {
    page += fmt::format("<p class='note'>{} more keys are not listed (the summary counts them all).</p>",
                        built.keys.size() - rows_max);
  }
  page += "<script>document.body.setAttribute('data-rendered', String(document.querySelectorAll('svg.timeline').length));"
          "document.body.setAttribute('data-fits', document.documentElement.scrollWidth <= "
          "document.documentElement.clientWidth ? '1' : '0');"
          "document.title += ': ' + document.getElementById('verdict').textContent;</script>";
  page += "</body></html>\n";
  return page;
}

bool write_html_report(const History& history, const CheckResult& result, const std::string& path) {
  return write_file(path, html_report(history, result));
}

std::string junit_xml(const History& history, const CheckResult& result, const std::string& suite) {
  const Built built = build_inputs(history);
  struct Case {
    std::string name;
    std::string failure;  // empty: passed
    bool error = false;
  };
  std::vector<Case> cases;
  std::map<std::string, std::string> failed_checks;
  std::map<std::pair<std::uint32_t, std::string>, std::string> failed_keys;
  for (const auto& finding : result.violations) {
    if (finding.check == "key") {
      failed_keys[{finding.incarnation, finding.key}] += story_text(finding);
    } else {
      failed_checks[finding.check] += story_text(finding);
    }
  }
  for (const char* check : {"tokens", "errors", "responses", "phase"}) {
    cases.push_back(Case{fmt::format("check {}", check), failed_checks[check], false});
  }
  for (const auto& [where, input] : built.keys) {
    cases.push_back(Case{fmt::format("key {} (incarnation {})", input.key, where.first + 1), failed_keys[where], false});
  }
  for (const auto& why : result.unknown) cases.push_back(Case{"search budget", why, true});
  std::size_t failures = 0, errors = 0;
  for (const auto& c : cases) {
    if (c.failure.empty()) continue;
    (c.error ? errors : failures) += 1;
  }
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format("<testsuites><testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
                     escape_markup(suite), cases.size(), failures, errors);
  for (const auto& c : cases) {
    xml += fmt::format("  <testcase classname=\"{}\" name=\"{}\"", escape_markup(suite), escape_markup(c.name));
    if (c.failure.empty()) {
      xml += "/>\n";
      continue;
    }
    const auto first_line = c.failure.substr(0, c.failure.find('\n'));
    xml += fmt::format(">\n    <{0} message=\"{1}\">{2}</{0}>\n  </testcase>\n", c.error ? "error" : "failure",
                       escape_markup(first_line), escape_markup(c.failure));
  }
  xml += "</testsuite></testsuites>\n";
  return xml;
}

bool write_junit(const History& history, const CheckResult& result, const std::string& suite, const std::string& path) {
  return write_file(path, junit_xml(history, result, suite));
}

}  // namespace lockstep::history
