#include "cmd/lockstep/shard_options.hpp"

#include <fmt/format.h>

#include "cli/validators.hpp"

namespace lockstep::cli {

void add_shard_options(CLI::App& command, ShardOptions& options) {
  command
      .add_option("--shard", options.shard,
                  "run shard I of N of the seeds: the range cut into N contiguous blocks (sizes differing by one at "
                  "most); `lockstep merge` adds the shards' --summary-json up")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            if (live::parse_shard(text)) return {};
            return fmt::format("'{}' is not I/N with 1 <= I <= N <= {}", text, live::shard_count_max);
          },
          "I/N", "shard"));
  command
      .add_option("--summary-json", options.summary_json,
                  "write the summary (counts, violations, failing seeds with their reproduce lines) as JSON, for "
                  "`lockstep merge`")
      ->check(writable_file());
}

std::optional<live::Shard> check_shard(const ShardOptions& options, live::SeedRange seeds) {
  if (options.shard.empty()) return std::nullopt;
  const auto shard = *live::parse_shard(options.shard);  // checked when parsed
  if (live::seed_count(seeds) < shard.count) {
    throw CLI::ValidationError("--shard", fmt::format("{} shards of the {} seeds {}..{} would leave some without a seed",
                                                      shard.count, live::seed_count(seeds), seeds.first, seeds.second));
  }
  return shard;
}

}  // namespace lockstep::cli
