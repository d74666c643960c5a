#include "report/history_report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "check/build.hpp"
#include "report/violation_svg.hpp"

namespace lockstep::history {

namespace {

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

// What the checker built from the history, or built now for a result
// made without it.
std::shared_ptr<const Built> built_of(const History& history, const CheckResult& result) {
  return result.built ? result.built : std::make_shared<const Built>(build_inputs(history));
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
                       x(mark.us), offset_text(mark.us, first_us), escape_markup(mark.what), x(mark.us) + 2,
                       i % 2 == 0 ? 14 : 28);
    list += fmt::format("<li>{}: <code>{}</code></li>", offset_text(mark.us, first_us), escape_markup(mark.what));
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

namespace {

// The page's head, title with the verdict, and what was assumed.
std::string page_head(const History& history, const CheckResult& result) {
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
  return page;
}

// The violations first: each with the culprit, the expected answer and a
// timeline around them; the first few drawn, every one listed. Adds the
// keys that failed to `violating`.
std::string violations_section(const CheckResult& result, const Built& built, const std::vector<NemesisMark>& nemesis,
                               std::set<std::pair<std::uint32_t, std::string>>& violating) {
  constexpr std::size_t drawn_max = 8;
  std::string page;
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
  return page;
}

std::string sweeps_section(const CheckResult& result) {
  std::string page = "<h2>Sweep instants</h2><ul>";
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
  return page + "</ul>";
}

// Every key in one table; the whole-run detail of a key is one command
// away rather than in this page (check-history --explain KEY).
std::string keys_section(const Built& built, const std::set<std::pair<std::uint32_t, std::string>>& violating) {
  std::string page = "<h2>Keys</h2><p class='note'>For the whole run of one key, <code>lockstep check-history FILE --explain KEY"
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
  return page;
}

}  // namespace

std::string html_report(const History& history, const CheckResult& result) {
  const auto built_ptr = built_of(history, result);
  const Built& built = *built_ptr;
  std::string page = page_head(history, result);
  const auto nemesis = nemesis_marks(history);
  std::set<std::pair<std::uint32_t, std::string>> violating;
  page += violations_section(result, built, nemesis, violating);
  if (result.violations.empty()) {
    page += result.verdict == Verdict::conforms ? "<p class='ok'>No violation: every response has an explanation.</p>"
                                                : "<p class='unknown'>No violation found, and no verdict either:</p>";
  }
  for (const auto& why : result.unknown) page += fmt::format("<p class='unknown'>unknown: {}</p>", rich(why));
  page += "<h2>Summary</h2><pre id='summary'>";
  for (const auto& line : summary_lines(result)) page += rich(line) + "\n";
  page += "</pre>";
  if (!nemesis.empty()) page += nemesis_section(history, nemesis);
  page += sweeps_section(result);
  page += keys_section(built, violating);
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
  const auto built_ptr = built_of(history, result);
  const Built& built = *built_ptr;
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
