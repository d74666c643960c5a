#include "live/conform.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "impl/bugs.hpp"
#include "live/etcd_cluster.hpp"
#include "live/live_runner.hpp"
#include "model/markup.hpp"
#include "model/runner.hpp"

namespace lockstep::live {

namespace {

// Files as given; folders are searched for `.vec` files, in name order.
std::vector<std::string> expand(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& path : paths) {
    if (!std::filesystem::is_directory(path)) {
      files.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(path)) {
      if (entry.is_regular_file() && entry.path().extension() == ".vec") {
        found.push_back(entry.path().string());
      }
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

struct FileResult {
  std::string file;
  VectorVerdict verdict;
  double seconds = 0;
};

// A live server's answer is quoted verbatim in a failure message and may be
// any bytes; XML must be UTF-8, so each byte that is not part of a
// well-formed sequence (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF) becomes '?'.
std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto byte = [&](std::size_t at) { return at < text.size() ? static_cast<unsigned char>(text[at]) : 0u; };
  for (std::size_t i = 0; i < text.size();) {
    const unsigned lead = byte(i);
    std::size_t length = 0;
    unsigned low = 0x80, high = 0xbf;  // the range of the second byte
    if (lead < 0x80) {
      length = 1;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      if (lead == 0xe0) low = 0xa0;
      if (lead == 0xed) high = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      if (lead == 0xf0) low = 0x90;
      if (lead == 0xf4) high = 0x8f;
    }
    bool valid = length > 0 && i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k) {
      const unsigned next = byte(i + k);
      valid = k == 1 ? next >= low && next <= high : (next & 0xc0) == 0x80;
    }
    if (!valid) {
      out += '?';
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

std::string xml_text(std::string_view text) { return escape_markup(valid_utf8(text)); }

// JUnit XML as CI systems read it (Jenkins, GitLab, GitHub reporters): one
// test case per vector file, classname lockstep.conform and the path as its
// name; a failure carries the verdict line as its message and the whole
// verdict (with a live server's view of the model) as its text.
std::string conform_junit(const std::vector<FileResult>& results, const std::string& against, const std::string& bug) {
  std::size_t failures = 0, skipped = 0;
  double total = 0;
  for (const auto& result : results) {
    failures += result.verdict.status == VectorVerdict::Status::fail ? 1 : 0;
    skipped += result.verdict.status == VectorVerdict::Status::skip ? 1 : 0;
    total += result.seconds;
  }
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format("<testsuites tests=\"{0}\" failures=\"{1}\" errors=\"0\" skipped=\"{2}\" time=\"{3:.3f}\">\n"
                     "<testsuite name=\"lockstep.conform\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" "
                     "skipped=\"{2}\" time=\"{3:.3f}\">\n",
                     results.size(), failures, skipped, total);
  xml += fmt::format("  <properties><property name=\"against\" value=\"{}\"/>", xml_text(against));
  if (bug != "none") xml += fmt::format("<property name=\"inject-bug\" value=\"{}\"/>", xml_text(bug));
  xml += "</properties>\n";
  for (const auto& result : results) {
    xml += fmt::format("  <testcase classname=\"lockstep.conform\" name=\"{}\" time=\"{:.3f}\"", xml_text(result.file),
                       result.seconds);
    const auto line = verdict_line(result.file, result.verdict);
    switch (result.verdict.status) {
      case VectorVerdict::Status::ok:
        xml += "/>\n";
        break;
      case VectorVerdict::Status::skip:
        xml += fmt::format(">\n    <skipped message=\"{}\"/>\n  </testcase>\n", xml_text(result.verdict.message));
        break;
      case VectorVerdict::Status::fail:
        xml += fmt::format(">\n    <failure message=\"{}\">{}</failure>\n  </testcase>\n",
                           xml_text(line.substr(0, line.find('\n'))), xml_text(line));
        break;
    }
  }
  xml += "</testsuite>\n</testsuites>\n";
  return xml;
}

}  // namespace

int run_conform(const ConformOptions& options) {
  const auto kind = options.against == "model" ? ServiceKind::model : ServiceKind::engine;
  const auto bug = bug_from_name(options.bug);  // a catalogue name: checked when parsed
  const auto files = expand(options.paths);
  if (files.empty()) {
    fmt::print(stderr, "conform: no vector files found\n");
    return 2;
  }
  const bool live = !options.exec.empty() || !options.exec_cluster.empty();
  LiveOptions live_options;
  live_options.command_template = options.exec;
  live_options.cluster_command_template = options.exec_cluster;
  live_options.etcd_endpoints = options.etcd;
  live_options.answer_patience = std::chrono::milliseconds{options.patience_ms};
  // A cluster template that names {etcd} without --etcd: a one-member etcd
  // on loopback for this run, stopped (and its data removed) at the end.
  std::unique_ptr<EtcdCluster> etcd;
  if (options.etcd.empty() && options.exec_cluster.find("{etcd}") != std::string::npos) {
    std::string error;
    etcd = EtcdCluster::start(1, error);
    if (!etcd) {
      fmt::print(stderr, "conform: cannot start etcd for the cluster vectors: {}\n", error);
      return 2;
    }
    live_options.etcd_endpoints = etcd->endpoints();
  }
  int passed = 0, failed = 0, skipped = 0;
  std::vector<FileResult> results;
  for (const auto& file : files) {
    const auto started = std::chrono::steady_clock::now();
    const auto verdict = live ? run_live_vector_file(file, live_options) : run_vector_file(file, kind, *bug);
    results.push_back(FileResult{file, verdict,
                                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()});
    fmt::print("{}\n", verdict_line(file, verdict));
    switch (verdict.status) {
      case VectorVerdict::Status::ok: ++passed; break;
      case VectorVerdict::Status::fail: ++failed; break;
      case VectorVerdict::Status::skip: ++skipped; break;
    }
  }
  const auto live_against = options.exec.empty() ? options.exec_cluster : options.exec;
  // Both templates given: the summary names both, each vector having run on
  // its mode's.
  const auto against = !live                     ? options.against
                       : options.exec.empty() || options.exec_cluster.empty()
                           ? "'" + live_against + "'"
                           : "'" + options.exec + "' and '" + options.exec_cluster + "'";
  fmt::print("conform against {}: {} passed, {} failed, {} skipped\n", against, passed, failed, skipped);
  if (!options.junit_path.empty()) {
    std::ofstream out(options.junit_path);
    out << conform_junit(results, live ? live_against : options.against, live ? "none" : options.bug);
    if (!out) {
      fmt::print(stderr, "conform: cannot write {}\n", options.junit_path);
      return 2;
    }
    fmt::print("junit: {}\n", options.junit_path);
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace lockstep::live
