// The command line every adapter shares (adapters/*/main.cpp): the options
// of its line server (line_adapter.hpp), --version, and one line with exit 2
// for a command line the parser refuses. An adapter adds its service's own
// options to the same app.
#pragma once

#include <optional>
#include <string_view>

#include <CLI/CLI.hpp>

#include "adapters/common/line_adapter.hpp"

namespace lockstep::adapters {

// Adds --host, --port, the request limits, the waiter bounds, the session
// table, the connection and output bounds, --quiet and --version.
void add_line_adapter_options(CLI::App& app, std::string_view program, LineAdapterConfig& config);

// Parses; the exit code when the process should end now (--help,
// --version: 0; a refusal: 2, one line), or nothing to go on.
std::optional<int> parse_command_line(CLI::App& app, std::string_view program, int argc, char** argv);

}  // namespace lockstep::adapters
