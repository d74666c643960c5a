// A shard of a range of seeds, for runs split across machines (`sim` and
// `miss-rate` take `--shard I/N`; runs/shard_summary.hpp carries each
// shard's counts to `lockstep merge`): the range cut into N contiguous
// blocks, deterministically, so that the shards of one run cover every seed
// once whatever machine runs which.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace lockstep::live {

using SeedRange = std::pair<std::uint64_t, std::uint64_t>;  // first..last, inclusive

// Shard `index` of `count`, 1-based (GitLab's CI_NODE_INDEX/CI_NODE_TOTAL;
// a Kubernetes Indexed Job's completion index plus one).
struct Shard {
  std::uint64_t index = 1, count = 1;
  bool operator==(const Shard&) const = default;
};
inline constexpr std::uint64_t shard_count_max = 1'000'000;

// `I/N`, decimal, with 1 <= I <= N <= shard_count_max, or nothing.
std::optional<Shard> parse_shard(const std::string& text);

// The number of seeds of a range (2^63 at most: seeds are below 2^63).
inline std::uint64_t seed_count(SeedRange range) { return range.second - range.first + 1; }

// The seeds of `shard` in `range`: blocks whose sizes differ by one at
// most, the larger ones first. The range must have `shard.count` seeds or
// more (each shard runs one at least).
SeedRange shard_seeds(SeedRange range, Shard shard);

}  // namespace lockstep::live
