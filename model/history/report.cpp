#include "model/history/report.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "model/history/build.hpp"

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

// One key's timeline as SVG: a row per connection, a tick per request sent,
// a dot per response (red when it is the one with no explanation), a line
// from each request to the instant the explanation handled it, and the
// sweep instants the phase allows (when it is pinned).
std::string key_svg(const KeyInput& input, const KeyExplanation* explanation, const PhaseSet* phases,
                    std::int64_t origin_us, std::int64_t focus_us) {
  struct Mark {
    std::int64_t us;
    std::uint32_t row;
    int kind;  // 0 sent, 1 received, 2 received unexplained
    std::string_view label;
  };
  std::vector<Mark> marks;
  for (const auto& request : input.requests) marks.push_back({request.sent_us, request.conn, 0, request.line});
  for (const auto& seen : input.observations) {
    const bool bad = focus_us >= 0 && seen.received_us == focus_us;
    marks.push_back({seen.received_us, seen.conn, bad ? 2 : 1, seen.line});
  }
  std::stable_sort(marks.begin(), marks.end(), [](const Mark& a, const Mark& b) { return a.us < b.us; });
  // At most 300 events, around the focus (or the first ones).
  constexpr std::size_t shown_max = 300;
  std::size_t begin = 0;
  if (marks.size() > shown_max) {
    std::size_t centre = 0;
    if (focus_us >= 0) {
      while (centre < marks.size() && marks[centre].us < focus_us) ++centre;
    }
    begin = centre > shown_max / 2 ? std::min(centre - shown_max / 2, marks.size() - shown_max) : 0;
  }
  const std::size_t end = std::min(marks.size(), begin + shown_max);
  if (begin >= end) return "<p>no events</p>";
  const std::int64_t from_us = marks[begin].us, to_us = std::max(marks[end - 1].us, from_us + 1000);
  const double width = 1100, row_height = 18, left = 60;
  const double height = row_height * static_cast<double>(input.conns.size()) + 30;
  const auto x = [&](std::int64_t us) {
    return left + (width - left - 10) * static_cast<double>(us - from_us) / static_cast<double>(to_us - from_us);
  };
  std::string svg = fmt::format("<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' class='timeline'>", width,
                                height);
  for (std::size_t row = 0; row < input.conns.size(); ++row) {
    const double y = 20 + row_height * static_cast<double>(row);
    svg += fmt::format("<text x='2' y='{:.1f}' class='row'>c{}</text><line x1='{}' y1='{:.1f}' x2='{}' y2='{:.1f}' "
                       "class='lane'/>",
                       y + 4, input.conns[row].id, left, y, width - 10, y);
  }
  if (phases != nullptr && phases->pinned()) {
    const auto period = phases->period();
    const auto residue = phases->ranges().front().first;
    std::int64_t first_ms = from_us / 1000 - ((from_us / 1000 - residue) % period + period) % period;
    for (std::int64_t at = first_ms; at * 1000 <= to_us; at += period) {
      if (at * 1000 < from_us) continue;
      svg += fmt::format("<line x1='{0:.1f}' y1='8' x2='{0:.1f}' y2='{1:.1f}' class='sweep'><title>sweep at {2}</title>"
                         "</line>",
                         x(at * 1000), height - 4, fmt::format("+{:.3f} ms", (at * 1000 - origin_us) / 1000.0));
    }
  }
  if (explanation != nullptr) {
    for (const auto& step : explanation->steps) {
      if (step.what != 'h' || step.request < 0) continue;
      const auto& request = input.requests[static_cast<std::size_t>(step.request)];
      if (request.sent_us < from_us || request.sent_us > to_us) continue;
      const double y = 20 + row_height * request.conn;
      svg += fmt::format("<line x1='{:.1f}' y1='{:.1f}' x2='{:.1f}' y2='{:.1f}' class='handled'/>", x(request.sent_us),
                         y - 5, x(std::max(step.instant_ms * 1000, request.sent_us)), y - 5);
    }
  }
  for (std::size_t i = begin; i < end; ++i) {
    const auto& mark = marks[i];
    const double y = 20 + row_height * mark.row;
    const auto title = escape_markup(fmt::format("+{:.3f} ms {} {}", (mark.us - origin_us) / 1000.0,
                                                 mark.kind == 0 ? "sent" : "received", mark.label));
    if (mark.kind == 0) {
      svg += fmt::format("<rect x='{:.1f}' y='{:.1f}' width='2' height='10' class='sent'><title>{}</title></rect>",
                         x(mark.us) - 1, y - 5, title);
    } else {
      svg += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='{}' class='{}'><title>{}</title></circle>", x(mark.us), y,
                         mark.kind == 2 ? 6 : 3, mark.kind == 2 ? "unexplained" : "received", title);
    }
  }
  svg += "</svg>";
  return svg;
}

constexpr const char* style = R"(
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; font-size: .85em; }
.violation { border-left: 5px solid #c00; padding-left: .8em; }
.ok { color: #060; } .bad { color: #c00; } .unknown { color: #a60; }
svg.timeline { border: 1px solid #ddd; background: #fff; }
.lane { stroke: #eee; } .row { font-size: 10px; fill: #666; }
.sent { fill: #36c; } .received { fill: #393; } .unexplained { fill: #c00; stroke: #600; }
.handled { stroke: #36c; stroke-width: 1; opacity: .5; } .sweep { stroke: #a6a; stroke-dasharray: 3 3; }
)";

}  // namespace

std::string html_report(const History& history, const CheckResult& result) {
  const Built built = build_inputs(history);
  std::string page = "<!DOCTYPE html><html><head><meta charset='utf-8'><title>lockstep history check</title><style>";
  page += style;
  page += "</style></head><body>";
  const char* verdict_class = result.verdict == Verdict::conforms ? "ok" : result.verdict == Verdict::violation ? "bad" : "unknown";
  page += fmt::format("<h1>lockstep: history check — <span class='{}' id='verdict'>{}</span></h1>", verdict_class,
                      result.verdict == Verdict::conforms ? "conforms"
                      : result.verdict == Verdict::violation ? "violation"
                                                              : "unknown");
  page += fmt::format("<p>target: <code>{}</code>, seed {}, tolerance {} ms, sweep every {} ms</p>",
                      escape_markup(history.header.target), history.header.seed, history.header.tolerance_ms,
                      history.header.limits.sweep_ms.value);
  page += "<pre id='summary'>";
  for (const auto& line : summary_lines(result)) page += escape_markup(line) + "\n";
  page += "</pre>";
  // Inferred sweep instants, per incarnation.
  page += "<h2>Sweep instants</h2><ul>";
  for (std::size_t at = 0; at < result.phases.size(); ++at) {
    const auto& phases = result.phases[at];
    const auto origin = at < result.incarnation_start_us.size() ? result.incarnation_start_us[at] : 0;
    if (phases.empty()) {
      page += fmt::format("<li>incarnation {}: no phase explains every key</li>", at + 1);
    } else if (phases.size() == phases.period()) {
      page += fmt::format("<li>incarnation {}: not constrained (no sweep was observable)</li>", at + 1);
    } else {
      std::string list;
      for (const auto& [low, high] : phases.ranges()) list += fmt::format(" {}..{}", low, high);
      page += fmt::format("<li>incarnation {}: sweeps at <i>phase</i> + k × {} ms on the history's clock, with phase "
                          "(ms) in{}; the first at about +{:.0f} ms after the incarnation began</li>",
                          at + 1, phases.period(), list,
                          static_cast<double>(((phases.ranges().front().first - origin / 1000) % phases.period() +
                                               phases.period()) %
                                              phases.period()));
    }
  }
  page += "</ul>";
  page += fmt::format("<h2>Violations ({})</h2>", result.violations.size());
  std::set<std::pair<std::uint32_t, std::string>> violating;
  std::map<std::pair<std::uint32_t, std::string>, std::int64_t> focus;
  for (std::size_t i = 0; i < result.violations.size(); ++i) {
    const auto& finding = result.violations[i];
    page += fmt::format("<div class='violation' id='violation-{}'><h3>[{}] {}</h3><pre>{}</pre></div>", i + 1,
                        escape_markup(finding.check), escape_markup(finding.summary), escape_markup(story_text(finding)));
    if (!finding.key.empty()) {
      violating.insert({finding.incarnation, finding.key});
      focus[{finding.incarnation, finding.key}] = finding.at_us;
    }
  }
  if (result.violations.empty()) page += "<p class='ok'>none: every response has an explanation.</p>";
  for (const auto& why : result.unknown) page += fmt::format("<p class='unknown'>unknown: {}</p>", escape_markup(why));
  // Timelines: violating keys first, then the others, at most 24.
  page += "<h2>Key timelines</h2><p>Ticks: requests sent; dots: responses received (red: no explanation); blue "
          "lines: from a request to the instant the explanation handled it; dashed: sweep instants.</p>";
  std::vector<std::pair<std::uint32_t, std::string>> order(violating.begin(), violating.end());
  for (const auto& [where, input] : built.keys) {
    if (!violating.contains(where)) order.push_back(where);
  }
  std::map<std::pair<std::uint32_t, std::string>, const KeyExplanation*> explanations;
  for (const auto& explanation : result.explanations) explanations[{explanation.incarnation, explanation.key}] = &explanation;
  std::size_t shown = 0;
  for (const auto& where : order) {
    if (++shown > 24) break;
    const auto& input = built.keys.at(where);
    const auto origin = where.first < result.incarnation_start_us.size() ? result.incarnation_start_us[where.first] : 0;
    const auto* explanation = explanations.contains(where) ? explanations[where] : nullptr;
    const auto* phases = where.first < result.phases.size() ? &result.phases[where.first] : nullptr;
    page += fmt::format("<h3 id='key-{}-{}'>key <code>{}</code> (incarnation {}): {} requests, {} responses{}</h3>",
                        where.first + 1, escape_markup(input.key), escape_markup(input.key), where.first + 1,
                        input.requests.size(), input.observations.size(),
                        violating.contains(where) ? " — <span class='bad'>violation</span>" : "");
    page += key_svg(input, explanation, phases, origin, focus.contains(where) ? focus[where] : -1);
  }
  page += "<script>document.body.setAttribute('data-rendered', String(document.querySelectorAll('svg.timeline').length));"
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
