// `lockstep conform`: replays conformance vectors against the engine or the
// reference model and prints one line per file, then a summary; with
// --junit it also writes JUnit XML, one test case per vector file.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "cmd/lockstep/validators.hpp"
#include "impl/bugs.hpp"
#include "live/etcd_cluster.hpp"
#include "live/live_runner.hpp"
#include "model/history/report.hpp"
#include "model/runner.hpp"

namespace lockstep::cli {

namespace {

struct ConformOptions {
  std::vector<std::string> paths;
  std::string against = "engine";
  std::string bug = "none";
  std::string exec;
  std::string exec_cluster;
  std::string etcd;
  std::int64_t patience_ms = 5'000;
  std::string junit_path;
};

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

int run_conform(const ConformOptions& options) {
  const auto kind = options.against == "model" ? ServiceKind::model : ServiceKind::engine;
  const auto bug = bug_from_name(options.bug);  // a catalogue name: checked when parsed
  const auto files = expand(options.paths);
  if (files.empty()) {
    fmt::print(stderr, "conform: no vector files found\n");
    return 2;
  }
  const bool live = !options.exec.empty() || !options.exec_cluster.empty();
  live::LiveOptions live_options;
  live_options.command_template = options.exec;
  live_options.cluster_command_template = options.exec_cluster;
  live_options.etcd_endpoints = options.etcd;
  live_options.answer_patience = std::chrono::milliseconds{options.patience_ms};
  // A cluster template that names {etcd} without --etcd: a one-member etcd
  // on loopback for this run, stopped (and its data removed) at the end.
  std::unique_ptr<live::EtcdCluster> etcd;
  if (options.etcd.empty() && options.exec_cluster.find("{etcd}") != std::string::npos) {
    std::string error;
    etcd = live::EtcdCluster::start(1, error);
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
    const auto verdict = live ? live::run_live_vector_file(file, live_options) : run_vector_file(file, kind, *bug);
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

}  // namespace

void add_conform_command(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<ConformOptions>();
  auto* command = app.add_subcommand(
      "conform",
      "Replay conformance vectors (.vec files, format in docs/protocol.md, \"Conformance vectors\")\n"
      "against the engine or the reference model, or exactly against a live server with --exec;\n"
      "prints `ok FILE` or `FAIL FILE:LINE: ...` per file and exits 1 if any failed. Folders are\n"
      "searched for .vec files.");
  command->add_option("files", options->paths, "vector files or folders")->required()->check(readable_path());
  auto* against = command->add_option("--against", options->against, "the service to run the vectors against")
                      ->check(one_of({"engine", "model"}, "the in-process services", "engine or model"))
                      ->capture_default_str();
  std::vector<std::string> bugs{"none"};
  for (const auto& entry : bug_catalogue()) bugs.emplace_back(entry.name);
  auto* bug = command->add_option("--inject-bug", options->bug,
                                  "run a deliberately broken engine (a name from the engine's catalogue, listed by\n"
                                  "`lockstep serve --list-bugs`); the bugs are simple-mode ones, so mode=cluster\n"
                                  "vectors run without it")
                  ->check(one_of(bugs, "the engine's bug catalogue", "lockstep serve --list-bugs lists it"))
                  ->capture_default_str();
  command->add_option("--exec", options->exec,
                      "replay against a live server with a test clock, one fresh server per vector, started by\n"
                      "this shell command; {port} (a free port), {max_keys}, {max_waiters_per_key},\n"
                      "{max_waiters}, {sweep_ms}, {max_lease_ms}, {max_wait_ms} are filled from the vector\n"
                      "(the server runs as it is: --against and --inject-bug do not apply)")
      ->excludes(against)
      ->excludes(bug);
  command->add_option("--exec-cluster", options->exec_cluster,
                      "replay the mode=cluster vectors against a live cluster node with a test clock (a one-node\n"
                      "cluster), one per vector, started by this command; as --exec, plus {etcd} (the\n"
                      "endpoints of --etcd, or of a one-member etcd started for the run) and {prefix} (an etcd\n"
                      "key prefix of its own for each vector)")
      ->excludes(against)
      ->excludes(bug);
  command->add_option("--etcd", options->etcd, "etcd endpoints for {etcd} in --exec-cluster")
      ->needs(command->get_option("--exec-cluster"));
  command->add_option("--patience-ms", options->patience_ms,
                      "how long to wait for a live server's answer to a barrier")
      ->check(whole_signed(1, 3'600'000))
      ->capture_default_str();
  command->add_option("--junit", options->junit_path,
                      "also write JUnit XML here: one test case per vector file, failed or skipped as it was")
      ->check(writable_file());
  command->callback([options, &run] { run = [options] { return run_conform(*options); }; });
}

}  // namespace lockstep::cli
