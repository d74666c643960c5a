// Reports of a checked history for people and for CI systems: one
// self-contained HTML page (no network access needed) with per-key
// timelines, the inferred sweep instants and the violations with the
// model's explanation; and JUnit XML with one test case per key and per
// check, the counter-example as the failure text (as h2spec does).
#pragma once

#include <string>

#include "check/checker.hpp"
#include "markup/markup.hpp"
#include "check/history.hpp"

namespace lockstep::history {

bool write_html_report(const History& history, const CheckResult& result, const std::string& path);
std::string html_report(const History& history, const CheckResult& result);

bool write_junit(const History& history, const CheckResult& result, const std::string& suite, const std::string& path);
std::string junit_xml(const History& history, const CheckResult& result, const std::string& suite);


}  // namespace lockstep::history
