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
#include "model/judge.hpp"
#include "model/runner.hpp"
#include "report/conform_junit.hpp"

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

// Every file read and parsed before anything runs: a vector that cannot be
// read, or is not a vector, is bad input (one line, exit 2), not a failing
// service. Empty when one was refused.
std::vector<Vector> read_all(const std::vector<std::string>& files) {
  std::vector<Vector> vectors;
  for (const auto& file : files) {
    auto parsed = read_vector_file(file);
    if (const auto* error = std::get_if<VectorError>(&parsed)) {
      if (error->line == 0) {
        fmt::print(stderr, "conform: cannot read {}: {}\n", file, error->message);
      } else {
        fmt::print(stderr, "conform: {}:{}: {}\n", file, error->line, error->message);
      }
      return {};
    }
    auto& vector = std::get<Vector>(parsed);
    if (const auto problem = vector_problem(vector)) {
      fmt::print(stderr, "conform: {}:{}: bad vector: {}\n", file, problem->line, problem->message);
      return {};
    }
    vectors.push_back(std::move(vector));
  }
  return vectors;
}

}  // namespace

int run_conform(const ConformOptions& options) {
  const auto kind = options.against == "model" ? ServiceKind::model : ServiceKind::engine;
  const auto bug = bug_from_name(options.bug);  // a catalogue name: checked when parsed
  const auto files = expand(options.paths);
  if (files.empty()) {
    fmt::print(stderr, "lockstep conform: no vector files found\n");
    return 2;
  }
  const auto vectors = read_all(files);
  if (vectors.empty()) return 2;
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
      fmt::print(stderr, "lockstep conform: cannot start etcd for the cluster vectors: {}\n", error);
      return 2;
    }
    live_options.etcd_endpoints = etcd->endpoints();
  }
  int passed = 0, failed = 0, skipped = 0;
  std::vector<VectorFileResult> results;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& file = files[i];
    const auto started = std::chrono::steady_clock::now();
    VectorVerdict verdict;
    if (live) {
      auto result = run_live_vector(vectors[i], live_options);
      if (!result.cannot_run.empty()) {
        // No vector can be judged against a server that does not run.
        fmt::print(stderr, "conform: {}: {}\n", file, result.cannot_run);
        if (!result.server_output.empty()) fmt::print("the server's output:\n{}\n", result.server_output);
        return 2;
      }
      verdict = std::move(result.verdict);
    } else {
      verdict = run_vector(vectors[i], kind, *bug);
    }
    results.push_back(VectorFileResult{file, verdict,
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
      fmt::print(stderr, "lockstep conform: cannot write {}\n", options.junit_path);
      return 2;
    }
    fmt::print("junit: {}\n", options.junit_path);
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace lockstep::live
