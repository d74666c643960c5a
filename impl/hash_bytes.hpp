// A fast 64-bit hash of a short byte string, for the engine's key index and
// the explorer's state store: eight bytes at a time, each word folded in by a
// multiply, then a final mix that spreads every input bit over the result.
// A few instructions for a short key, where std::hash's murmur takes a call
// and several rounds. Not for adversarial input: keys are bounded by limits.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace lockstep {

inline std::uint64_t hash_bytes(std::string_view bytes) {
  constexpr std::uint64_t k = 0x9e3779b97f4a7c15ULL;
  // The length goes in first, so that trailing zero bytes still count.
  std::uint64_t h = bytes.size() * k;
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h = (h ^ word) * k;
    h ^= h >> 29;
  }
  std::uint64_t tail = 0;
  std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  h = (h ^ tail) * k;
  h ^= h >> 32;
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 33);
}

}  // namespace lockstep
