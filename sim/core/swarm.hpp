// The one loop over a range of seeds, for every simulator mode (simple,
// raft, cluster): each seed run once (twice with the determinism check),
// a progress bar, a failure report per failing seed with the command that
// reproduces it, and the summary table ending with the machine-readable
// lines `violations: N` and `speed: X` (simulated seconds per wall second).
// A mode gives the runner a SwarmMode: how to run a seed and what it counted.
// The runner reads no clock and picks no terminal of its own: the driver
// passes its wall clock, its output stream and whether to draw progress.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "impl/units.hpp"
#include "sim/core/violations.hpp"

namespace lockstep::sim {

// A summary row: its label and value; a mode's rows keep one order, so the
// runner sums them over seeds position by position.
using SummaryRow = std::pair<std::string_view, std::uint64_t>;

// What one seed's run gives the runner.
struct SeedOutcome {
  std::uint64_t events = 0;
  std::uint64_t event_hash = 0;  // of every event in order: the determinism check compares it
  TimeMs simulated_until{0};
  std::uint64_t violation_count = 0;
  std::vector<Violation> violations;  // the first few, for the failure report
  std::string params;                 // the seed's parameters in one line, for the failure report
  std::vector<SummaryRow> counters;   // the mode's figures, in the mode's order
};

struct SwarmMode {
  std::string summary_title;  // e.g. "lockstep sim summary"
  // Runs one seed; `progress` (never empty) takes the share of the seed done, 0 to 1.
  std::function<SeedOutcome(std::uint64_t seed, const std::function<void(double)>& progress)> run;
  // The command line that runs the seed again alone.
  std::function<std::string(std::uint64_t seed)> reproduce;
  // Optional: after a failing seed's report (e.g. shrinking the first one).
  std::function<void(std::uint64_t seed, const SeedOutcome& outcome, bool first_failure)> after_failure;
};

struct SwarmConfig {
  std::uint64_t first_seed = 1, last_seed = 1;  // inclusive; last may be the largest seed
  bool check_determinism = false;               // run each seed twice and compare event hashes
  std::FILE* out = stdout;
  bool progress = false;                  // draw a progress bar on `out` (a terminal)
  std::function<double()> wall_seconds;   // the driver's clock, for the speed figure
};

// A failing seed as its report shows it: kept in the totals, so that the
// summary of a shard (runs/shard_summary.hpp) can carry it to a merge.
struct FailedSeed {
  std::uint64_t seed = 0;
  std::uint64_t violation_count = 0;
  std::string params;
  std::vector<Violation> violations;  // the first few, as the report prints them
  std::string reproduce;
};

struct SwarmTotals {
  std::uint64_t seeds = 0, failed_seeds = 0, violations = 0, events = 0, simulated_ms = 0;
  std::vector<SummaryRow> counters;  // summed over seeds
  double wall_s = 0;
  // The failing seeds in seed order, the first failures_kept_max of them;
  // the others are only counted.
  static constexpr std::size_t failures_kept_max = 10'000;
  std::vector<FailedSeed> failures;
  std::uint64_t failures_not_kept = 0;
};

// What a mode's swarm ends with, for the command's exit code and for trace
// validation of a one-seed run.
struct SwarmOutcome {
  int exit_code = 0;  // 0 no violation, 1 violations, 2 an output could not be written
  std::uint64_t violations = 0;
  std::optional<std::int64_t> last_seed_first_violation_ms;
  SwarmTotals totals;
  std::string summary_title;
};

// Runs the seeds, printing each failure as it comes, then the summary.
SwarmTotals run_swarm(const SwarmConfig& config, const SwarmMode& mode);

// What run_swarm prints of a failing seed (without what the mode adds after
// it), and its summary table: also how `lockstep merge` prints the
// failures and the totals of several shards as one run would have.
void print_failure(std::FILE* out, const FailedSeed& failure);
void print_summary(std::FILE* out, std::string_view title, bool check_determinism, const SwarmTotals& totals);

}  // namespace lockstep::sim
