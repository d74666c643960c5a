#include "runs/spec_check.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "impl/bugs.hpp"
#include "model/explorer.hpp"

namespace lockstep::live {

namespace {

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

bool write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  file << text;
  return static_cast<bool>(file);
}

int emit_vectors(const Explorer& explorer, const SpecCheckOptions& options, const std::string& stem) {
  std::error_code error;
  std::filesystem::create_directories(options.emit_directory, error);
  if (error) {
    fmt::print(stderr, "lockstep check: cannot create {}: {}\n", options.emit_directory, error.message());
    return 2;
  }
  const auto count = explorer.state_count();
  for (std::uint32_t state = 1; state < count; ++state) {
    const auto comment = fmt::format(
        "{}: the first behaviour found reaching distinct state {} (written by lockstep check; "
        "the expected responses are the reference model's)",
        stem, state);
    const auto path = std::filesystem::path(options.emit_directory) /
                      fmt::format("{}-{:06}.vec", stem, state);
    if (!write_file(path, explorer.vector_text(explorer.behaviour_to(state), comment))) {
      fmt::print(stderr, "lockstep check: cannot write {}\n", path.string());
      return 2;
    }
  }
  fmt::print("vectors written: {} in {}\n", count - 1, options.emit_directory);
  return 0;
}

// A config of spec/LockCluster.tla: it names the cluster's nodes, or its
// module extends the cluster spec.
bool is_cluster_config(const std::string& config_text, const std::string& module_text) {
  const auto names_nodes = [](const std::string& text) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      const auto start = line.find_first_not_of(" \t");
      if (start != std::string::npos && line.compare(start, 5, "Nodes") == 0 &&
          line.find_first_of("=<", start) != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  return names_nodes(config_text) || module_text.find("EXTENDS LockCluster") != std::string::npos;
}

}  // namespace

int run_spec_check(const SpecCheckOptions& options) {
  const std::filesystem::path config_path(options.config_path);
  const auto config_text = read_file(config_path);
  if (!config_text) {
    fmt::print(stderr, "lockstep check: cannot read {}\n", options.config_path);
    return 2;
  }
  // The MC module beside the config, for `Name <- Definition` constants.
  auto module_path = config_path;
  module_path.replace_extension(".tla");
  const auto module_text = read_file(module_path).value_or("");
  if (is_cluster_config(*config_text, module_text)) {
    fmt::print(stderr,
               "lockstep check: {} is a config of the cluster spec (LockCluster.tla): the explorer covers simple mode "
               "only (LockServer.tla: MCsweep, MCcapacity, MCliveness, Bug*.cfg); the cluster configs "
               "(ClusterMC*.cfg, ClusterBug*.cfg) are checked by TLC, see spec/README.md\n",
               options.config_path);
    return 2;
  }
  auto parsed = parse_spec_config(*config_text, module_text);
  if (auto* error = std::get_if<std::string>(&parsed)) {
    fmt::print(stderr, "lockstep check: {}: {}\n", options.config_path, *error);
    return 2;
  }
  const auto& config = std::get<SpecConfig>(parsed);

  std::optional<InjectedBug> bug;
  if (!options.bug.empty()) bug = bug_from_name(options.bug);  // one the model injects: checked when parsed
  Explorer explorer(config.bounds, bug);
  const auto& b = explorer.bounds();
  fmt::print("check {} ({}): {} keys, {} owners, {} connections, MaxTime {}, MaxToken {}, bug {}\n",
             options.config_path, config.specification, b.keys.size(), b.owners.size(),
             b.conns.size(), b.max_time_ms, b.max_token, bug_name(bug.value_or(b.bug())));

  const auto started = std::chrono::steady_clock::now();
  const auto result = explorer.run(options.steps_max);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - started;
  const double seconds = std::max(elapsed.count(), 1e-9);

  fmt::print("distinct states: {}\n", result.distinct_states);
  fmt::print("states generated: {}\n", result.states_generated);
  fmt::print("depth: {}\n", result.depth);
  fmt::print("seconds: {:.3f}\n", seconds);
  fmt::print("distinct states/s: {:.0f}\n", static_cast<double>(result.distinct_states) / seconds);
  fmt::print("steps seen: {}\n", describe(result.coverage));

  if (result.failure) {
    const auto stem = config_path.stem().string();
    fmt::print("VIOLATION of {}: {}\n", result.failure->property, result.failure->detail);
    fmt::print("shortest counter-example, {} steps:\n{}", result.counterexample.size(),
               explorer.trace_text(result.counterexample));
    const auto vec = explorer.vector_text(
        result.counterexample,
        fmt::format("{}: counter-example to {} found by lockstep check; the expected responses are "
                    "what the checked model sent",
                    stem, result.failure->property));
    fmt::print("as a vector:\n{}", vec);
    if (!options.counterexample_path.empty() && !write_file(options.counterexample_path, vec)) {
      fmt::print(stderr, "lockstep check: cannot write {}\n", options.counterexample_path);
      return 2;
    }
    return 1;
  }
  fmt::print("no property violated{}\n", result.complete ? "" : " (search bounded by --depth)");
  if (!options.emit_directory.empty()) return emit_vectors(explorer, options, config_path.stem().string());
  return 0;
}

}  // namespace lockstep::live
