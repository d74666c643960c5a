// `lockstep conform`: replays conformance vectors against the engine or the
// reference model and prints one line per file, then a summary.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cmd/lockstep/commands.hpp"
#include "impl/bugs.hpp"
#include "live/live_runner.hpp"
#include "model/runner.hpp"

namespace lockstep::cli {

namespace {

struct ConformOptions {
  std::vector<std::string> paths;
  std::string against = "engine";
  std::string bug = "none";
  std::string exec;
  std::int64_t patience_ms = 5'000;
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

int run_conform(const ConformOptions& options) {
  const auto kind = options.against == "model" ? ServiceKind::model : ServiceKind::engine;
  const auto bug = bug_from_name(options.bug);
  if (!bug) {
    fmt::print(stderr, "conform: unknown bug '{}' (see `lockstep bench --help`)\n", options.bug);
    return 2;
  }
  const auto files = expand(options.paths);
  if (files.empty()) {
    fmt::print(stderr, "conform: no vector files found\n");
    return 2;
  }
  int passed = 0, failed = 0, skipped = 0;
  for (const auto& file : files) {
    const auto verdict = options.exec.empty()
                             ? run_vector_file(file, kind, *bug)
                             : live::run_live_vector_file(
                                   file, live::LiveOptions{options.exec, "127.0.0.1", std::chrono::milliseconds{10'000},
                                                           std::chrono::milliseconds{options.patience_ms}});
    fmt::print("{}\n", verdict_line(file, verdict));
    switch (verdict.status) {
      case VectorVerdict::Status::ok: ++passed; break;
      case VectorVerdict::Status::fail: ++failed; break;
      case VectorVerdict::Status::skip: ++skipped; break;
    }
  }
  fmt::print("conform against {}: {} passed, {} failed, {} skipped\n",
             options.exec.empty() ? options.against : "'" + options.exec + "'", passed,
             failed, skipped);
  return failed == 0 ? 0 : 1;
}

}  // namespace

void add_conform_command(CLI::App& app, std::function<int()>& run) {
  auto options = std::make_shared<ConformOptions>();
  auto* command = app.add_subcommand(
      "conform",
      "Replay conformance vectors (.vec files, see VECTORS.md) against the engine or the\n"
      "reference model; prints `ok FILE` or `FAIL FILE:LINE: ...` per file and exits 1 if any\n"
      "failed. Folders are searched for .vec files.");
  command->add_option("files", options->paths, "vector files or folders")->required();
  command->add_option("--against", options->against, "the service to run the vectors against")
      ->check(CLI::IsMember({"engine", "model"}))
      ->capture_default_str();
  command->add_option("--inject-bug", options->bug,
                      "run a deliberately broken engine (a name from the bug catalogue)")
      ->capture_default_str();
  command->add_option("--exec", options->exec,
                      "replay against a live server with a test clock, one fresh server per vector, started by\n"
                      "this shell command; {port} (a free port), {max_keys}, {max_waiters_per_key},\n"
                      "{max_waiters}, {sweep_ms}, {max_lease_ms}, {max_wait_ms} are filled from the vector");
  command->add_option("--patience-ms", options->patience_ms,
                      "how long to wait for a live server's answer to a barrier")
      ->capture_default_str();
  command->callback([options, &run] { run = [options] { return run_conform(*options); }; });
}

}  // namespace lockstep::cli
