#include "live/history_verdict.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "check/checker.hpp"
#include "check/counterexample.hpp"
#include "report/history_report.hpp"

namespace lockstep::live {

namespace {

// A file name for a key's vector: the key's bytes that are safe in a path.
std::string vector_file_name(std::size_t index, const history::Finding& finding) {
  std::string safe;
  for (const char c : finding.key) safe += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return fmt::format("counterexample-{}-{}.vec", index + 1, safe.substr(0, 60));
}

// Writes the vectors of the key findings; false if a file cannot be written.
// A key's vector runs up to the response nothing explains (or, for an
// answer that never came, to where the shrunk prefix ends).
bool write_vectors(const history::History& recorded, const history::CheckResult& result, const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  for (std::size_t i = 0; i < result.violations.size(); ++i) {
    const auto& finding = result.violations[i];
    if (finding.check != "key") continue;
    const auto vector = history::counterexample_vector(recorded, finding.incarnation, finding.key, finding.at_us + 1);
    if (!vector.written) {
      fmt::print("vector: none for key `{}`: {}\n", finding.key, vector.why_not);
      continue;
    }
    const auto path = (std::filesystem::path(dir) / vector_file_name(i, finding)).string();
    std::ofstream out(path, std::ios::binary);
    out << vector.text;
    if (!out) {
      fmt::print(stderr, "cannot write {}\n", path);
      return false;
    }
    fmt::print("vector: {}\n", path);
  }
  return true;
}

// Whether a request of the history names `key` (the second field of `A`
// and `R` lines).
bool history_names_key(const history::History& recorded, const std::string& key) {
  for (const auto& event : recorded.events) {
    if (event.kind != history::EventKind::send || event.line.size() < 2 || event.line[1] != ' ') continue;
    if (event.line.compare(2, key.size(), key) == 0 &&
        (event.line.size() == 2 + key.size() || event.line[2 + key.size()] == ' ')) {
      return true;
    }
  }
  return false;
}

// Writes one output file through `write`, and says where it went; false
// (one line on stderr) if it could not be written.
template <class Write>
bool write_output(const std::string& label, const std::string& path, Write write) {
  if (path.empty()) return true;
  if (!write()) {
    fmt::print(stderr, "cannot write {}\n", path);
    return false;
  }
  fmt::print("{}: {}\n", label, path);
  return true;
}

}  // namespace

int judge_history(const history::History& recorded, const VerdictOutputs& outputs, const std::string& suite) {
  if (!outputs.explain_key.empty() && !history_names_key(recorded, outputs.explain_key)) {
    fmt::print("explain: no request of the history names key `{}`: nothing to explain (the verdict follows)\n",
               outputs.explain_key);
  }
  history::CheckOptions options;
  options.budget_states = outputs.budget_states;
  options.memory_max_bytes = outputs.budget_memory_mb << 20;
  options.explain_key = outputs.explain_key;
  const auto result = history::check_history(recorded, options);
  for (const auto& line : result.explain_lines) fmt::print("{}\n", line);
  for (const auto& finding : result.violations) {
    fmt::print("\n{}\n", finding.summary);
    for (const auto& line : finding.story) fmt::print("{}\n", line);
  }
  if (!result.violations.empty()) fmt::print("\n");
  for (const auto& line : history::summary_lines(result)) fmt::print("{}\n", line);
  if (!outputs.vectors_dir.empty() && !write_vectors(recorded, result, outputs.vectors_dir)) return 2;
  if (!write_output("report", outputs.report_path,
                    [&] { return history::write_html_report(recorded, result, outputs.report_path); }) ||
      !write_output("junit", outputs.junit_path,
                    [&] { return history::write_junit(recorded, result, suite, outputs.junit_path); })) {
    return 2;
  }
  return history::exit_code(result);
}

int finish_fuzz_run(const history::History& recorded, const std::string& error, const VerdictOutputs& outputs) {
  const bool written = write_output("history", outputs.history_path, [&] {
    std::ofstream out(outputs.history_path);
    history::write_history(out, recorded);
    return static_cast<bool>(out);
  });
  if (!written) return 2;
  if (!error.empty()) {
    fmt::print(stderr, "lockstep fuzz: the run could not be completed: {}\n", error);
    fmt::print("violations: unknown\n");
    return 2;
  }
  return judge_history(recorded, outputs, "lockstep.fuzz");
}

}  // namespace lockstep::live
