// Each subcommand registers its options on the CLI11 app and runs when chosen.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace lockstep::cli {

// Adds a subcommand; `run` is set to the function that runs it and returns
// the process's exit code.
void add_conform_command(CLI::App& app, std::function<int()>& run);
void add_bench_command(CLI::App& app, std::function<int()>& run);
void add_check_command(CLI::App& app, std::function<int()>& run);
void add_serve_command(CLI::App& app, std::function<int()>& run);
void add_sim_command(CLI::App& app, std::function<int()>& run);
void add_trace_commands(CLI::App& app, std::function<int()>& run);
void add_fuzz_command(CLI::App& app, std::function<int()>& run);
void add_check_history_command(CLI::App& app, std::function<int()>& run);
void add_miss_rate_command(CLI::App& app, std::function<int()>& run);
void add_playground_command(CLI::App& app, std::function<int()>& run);
void add_cluster_command(CLI::App& app, std::function<int()>& run);
void add_merge_command(CLI::App& app, std::function<int()>& run);

}  // namespace lockstep::cli
