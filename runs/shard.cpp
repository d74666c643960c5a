#include "runs/shard.hpp"

#include <algorithm>
#include <charconv>

#include "impl/assert.hpp"

namespace lockstep::live {

namespace {

std::optional<std::uint64_t> decimal(std::string_view text) {
  if (text.empty() || text.size() > 7 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;  // 7 digits hold shard_count_max
  }
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

}  // namespace

std::optional<Shard> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos) return std::nullopt;
  const auto index = decimal(std::string_view(text).substr(0, slash));
  const auto count = decimal(std::string_view(text).substr(slash + 1));
  if (!index || !count || *index < 1 || *index > *count || *count > shard_count_max) return std::nullopt;
  return Shard{*index, *count};
}

SeedRange shard_seeds(SeedRange range, Shard shard) {
  LOCKSTEP_ASSERT(range.first <= range.second && shard.index >= 1 && shard.index <= shard.count &&
                  seed_count(range) >= shard.count);
  const std::uint64_t size = seed_count(range) / shard.count;
  const std::uint64_t larger = seed_count(range) % shard.count;  // the first `larger` shards hold one more
  const std::uint64_t before = shard.index - 1;
  const std::uint64_t first = range.first + before * size + std::min(before, larger);
  return {first, first + size + (before < larger ? 1 : 0) - 1};
}

}  // namespace lockstep::live
