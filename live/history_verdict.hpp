// The verdict on a recorded history, as `fuzz` and `check-history` give it:
// the checker run within its budgets, the violations with their stories,
// the summary ending with `violations: N`, and what was asked written
// beside it (a conformance vector per key found in violation, the HTML
// report, JUnit XML). Both commands finish through here, so they print the
// same lines and exit with the same codes: 0 conforms, 1 a violation, 2
// unknown (the budget ran out, or an output could not be written).
#pragma once

#include <cstdint>
#include <string>

#include "check/history.hpp"

namespace lockstep::live {

// What the verdict writes and how far the checker may search.
struct VerdictOutputs {
  std::string history_path;  // fuzz only: the recorded history, written before it is judged
  std::string report_path, junit_path, vectors_dir;
  std::uint64_t budget_states = 20'000'000;
  std::uint64_t budget_memory_mb = 1'024;
  std::string explain_key;  // empty: none
};

// Judges `recorded`, prints the verdict and writes the outputs asked;
// `suite` names the JUnit test suite. Returns the exit code.
int judge_history(const history::History& recorded, const VerdictOutputs& outputs, const std::string& suite);

// Either fuzz mode's run, once recorded: the history written if asked, then
// judged; a run that could not be completed (`error` not empty) is
// `unknown` (exit 2), never a pass.
int finish_fuzz_run(const history::History& recorded, const std::string& error, const VerdictOutputs& outputs);

}  // namespace lockstep::live
