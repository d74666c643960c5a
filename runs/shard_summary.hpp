// Runs split across machines: `sim` and `miss-rate` take `--shard I/N`, a
// deterministic split of their seed range into N contiguous blocks, and
// `--summary-json FILE` writes what the run counted (schema
// `lockstep.summary/1`: the run it is a shard of, its seeds, the counts,
// the violations, the failing seeds with their reproduce lines). `lockstep
// merge FILE...` adds the shards of one run up and prints what a single run
// over the whole range would have printed: for `sim` the failure reports in
// seed order and the summary table, for `miss-rate` its table and notes.
// What the merge cannot reproduce: the wall time (the shards' added up:
// the machine time the run took, from which events/s and speed follow) and
// the vector `sim` shrinks after a shard's first failure (each shard shrank
// its own). docs/ci-fuzzing.md shows shards run by CI systems.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runs/miss_rate_report.hpp"
#include "runs/shard.hpp"
#include "sim/core/swarm.hpp"

namespace lockstep::live {

// What identifies a shard's run: every shard of one run has the same.
struct ShardOf {
  std::string command;  // "sim" or "miss-rate"
  std::string run;      // the command line of the whole run, canonical: the shards must agree
  SeedRange seeds;      // the whole run's range
  Shard shard;
};

// Writes a shard's summary; the reason it could not, or nothing.
std::optional<std::string> write_sim_summary(const std::string& path, const ShardOf& of, const std::string& title,
                                             bool check_determinism, const sim::SwarmTotals& totals);
std::optional<std::string> write_miss_rate_summary(const std::string& path, const ShardOf& of,
                                                   const MissRateSummary& summary);

// `lockstep merge FILE...`: prints what one run would have; exits as it
// would have (0 or 1), or 2 with one line naming the file when the files
// are not the shards of one run, each once and none missing.
int run_merge(const std::vector<std::string>& files);

}  // namespace lockstep::live
