// The black-box checker: does a recorded history have an explanation under
// the contract (docs/protocol.md, "Black box, in real time")? The history is
// split by incarnation of the target (a restart wipes its state) and by key;
// each key is a forward sweep over server instants (frontier.hpp); what couples keys is checked
// apart and soundly: one sweep phase per incarnation shared by all keys,
// token order and uniqueness over the whole history, and the global limits
// as causes that may or may not hold (DESIGN.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "check/history.hpp"
#include "check/key_input.hpp"
#include "check/phase_set.hpp"

namespace lockstep::history {

struct CheckOptions {
  std::uint64_t budget_states = 200'000'000;  // configurations stepped over the whole check
  std::uint64_t memory_max_bytes = 1ull << 30;  // configurations held at once, estimated
  bool record_steps = false;  // keep every key's explanation, for the HTML report
  bool shrink = true;
  std::string explain_key;  // print the explanation found (or the furthest one) for this key
};

// Where a key's violation shows, for drawing it: the culprit response and
// the answer the contract expected instead (times on the history's clock).
struct Focus {
  std::int64_t culprit_us = -1;  // when the response at fault was read, or -1
  std::uint32_t culprit_conn = 0;
  std::string expected;          // the answer the contract gives there, or empty
  std::uint32_t expected_conn = 0;
  std::int64_t expected_from_us = -1, expected_by_us = -1;  // when it could have arrived
  std::int64_t cause_us = -1;    // its cause (a release, a sweep, a deadline, its request)
};

// One thing with no explanation, told for a reader.
struct Finding {
  std::string check;  // "key", "tokens", "errors", "responses", "phase"
  std::string key;    // the key, when the finding is about one
  std::uint32_t incarnation = 0;
  std::string summary;             // one line
  std::vector<std::string> story;  // the shrunk sub-history as a timeline, and what the model allowed
  std::int64_t at_us = 0;          // where it shows, on the history's clock
  Focus focus;                     // key findings: the culprit and the expected answer
};

// The explanation found for one key, for reports: instants of each step.
struct KeyExplanation {
  std::string key;
  std::uint32_t incarnation = 0;
  std::vector<Step> steps;
};

enum class Verdict { conforms, violation, unknown };

struct Built;  // check/build.hpp

struct CheckResult {
  Verdict verdict = Verdict::conforms;
  std::vector<Finding> violations;
  std::vector<std::string> unknown;  // what the budget left undecided, and why
  std::vector<PhaseSet> phases;      // per incarnation: the sweep phases that explain it
  std::vector<std::int64_t> incarnation_start_us;
  std::vector<KeyExplanation> explanations;
  std::vector<std::string> explain_lines;  // for CheckOptions::explain_key
  Limits limits;  // assumed: the history's header
  std::int64_t tolerance_ms = 0;
  // The rules the history was read by (the header's, or the command line's).
  Mode mode = Mode::simple;
  std::int64_t clock_allowance_ms = 0, max_lateness_ms = -1;  // cluster mode
  // Cluster mode, when nothing failed: the worst lateness, the least
  // maximum lateness under which every key is explained (what
  // --max-lateness-ms may be given and pass), and what was that late;
  // `lateness_unverified` when the budget or an undecided search cut the
  // verification short, so that the figure is what was verified so far
  // (DESIGN.md, "The least lateness").
  std::int64_t lateness_ms = 0;
  std::string lateness_text;
  std::string lateness_key;  // the key lateness_text names; empty for the order of tokens across keys
  bool lateness_unverified = false;
  // Figures for the summary.
  std::uint64_t requests = 0, responses = 0, malformed = 0, keys = 0, connections = 0;
  // Opened while the target was down (after a `down`, before its `up`):
  // accepted by no incarnation the tester knows of, so not judged.
  std::uint64_t limbo_connections = 0;
  std::uint64_t states_expanded = 0;  // configurations stepped
  std::size_t frontier_peak = 0;
  std::uint64_t memory_peak_bytes = 0;  // estimated, of the configurations held at once
  // What was built from the history (connections, each key's input): the
  // report reads it rather than building it again. Its lines are views
  // into the history, so it is valid while the history is.
  std::shared_ptr<const Built> built;
};

CheckResult check_history(const History& history, const CheckOptions& options = {});

// The summary lines that `check-history` and `fuzz` print, ending with
// `violations: N`.
std::vector<std::string> summary_lines(const CheckResult& result);

// 0 conforms, 1 a violation, 2 unknown (Maelstrom's convention).
int exit_code(const CheckResult& result);

}  // namespace lockstep::history
