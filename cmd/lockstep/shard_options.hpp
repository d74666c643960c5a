// `--shard I/N` and `--summary-json FILE`, the options of `sim` and
// `miss-rate` for runs split across machines (runs/shard.hpp), and their
// checks once the seed range is known.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "runs/shard.hpp"

namespace lockstep::cli {

struct ShardOptions {
  std::string shard;  // as given; read by check_shard
  std::string summary_json;
};

void add_shard_options(CLI::App& command, ShardOptions& options);

// The shard of `seeds` the command runs, or nothing without --shard;
// throws CLI::ValidationError (exit 2) when the range has fewer seeds than
// shards.
std::optional<live::Shard> check_shard(const ShardOptions& options, live::SeedRange seeds);

}  // namespace lockstep::cli
