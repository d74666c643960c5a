// The options of a history's verdict (live/history_verdict.hpp) that
// `fuzz` and `check-history` share: the outputs written beside it and the
// checker's budgets.
#pragma once

#include <CLI/CLI.hpp>

#include "live/history_verdict.hpp"

namespace lockstep::cli {

void add_output_options(CLI::App& command, live::VerdictOutputs& outputs);

}  // namespace lockstep::cli
