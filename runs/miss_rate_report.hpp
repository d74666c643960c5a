// `lockstep miss-rate`, once its options are parsed: the share of bug
// seeds the simulator catches that the black-box checker misses, on swarm
// seeds of a range (sim/history/miss_rate.hpp runs them), printed as a table per
// bug with a note for each seed missed or undecided, the rates, and the
// wall time. Exit 0 when every clean seed conforms and every bug seed the
// simulator's own clients'-side checker reports (so visible from the
// clients) is reported by the black-box checker too; each other missed
// seed is listed with the simulator's checkers that saw it. 1 otherwise.
// With a shard, only its part of the range is run, and --summary-json
// keeps the tallies for `lockstep merge` (runs/shard_summary.hpp), which
// prints the table of the whole range with the same functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runs/shard.hpp"
#include "sim/history/miss_rate.hpp"

namespace lockstep::live {

struct MissRateRequest {
  std::string mode = "simple";  // or "cluster"
  SeedRange seed_range{1, 20};
  std::vector<std::string> bugs;  // empty: every bug of the mode, and `none`
  std::uint64_t budget_states = 3'000'000;
  std::uint32_t nodes = 3;
  std::optional<Shard> shard;  // the caller checks that the range has enough seeds
  std::string summary_json;    // where to write the summary; empty: nowhere
};

int run_miss_rate(const MissRateRequest& request);

// What a miss-rate report prints: the run's options and its tallies.
struct MissRateSummary {
  std::string mode;  // "simple" or "cluster"
  std::uint32_t nodes = 3;
  SeedRange seeds;
  std::uint64_t budget_states = 0;
  std::vector<sim::BugTally> tallies;  // in the order of the bugs run, "none" first
  double wall_s = 0;
};

// The report's first line, printed before the run.
void print_miss_rate_header(const MissRateSummary& summary);
// The table, the notes and the rates; returns the exit code.
int print_miss_rate_table(const MissRateSummary& summary);

// The catalogue of a mode ("simple" or "cluster"), after the clean runs.
std::vector<sim::SimBug> miss_rate_bugs(const std::string& mode);

}  // namespace lockstep::live
