// A 128-bit fingerprint of a configuration, for finding equal ones among
// many: two independent 64-bit mixes of the same words.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lockstep::history {

struct Fingerprint {
  std::uint64_t high = 0;
  std::uint64_t low = 0;
  friend bool operator==(const Fingerprint&, const Fingerprint&) = default;
};

struct FingerprintHash {
  std::size_t operator()(const Fingerprint& print) const noexcept { return print.high ^ (print.low * 31); }
};

// Two independent 64-bit mixes of the same words; a collision of both
// (which could hide a state, and so an explanation) is about 2^-128 per pair.
class FingerprintBuilder {
 public:
  void add(std::uint64_t word) {
    high_ = mix(high_ ^ word, 0x9e3779b97f4a7c15ULL);
    low_ = mix(low_ + word, 0xc2b2ae3d27d4eb4fULL);
  }
  Fingerprint finish() const { return Fingerprint{high_, low_}; }

 private:
  static std::uint64_t mix(std::uint64_t x, std::uint64_t salt) {
    x = (x ^ (x >> 31)) * (0xbf58476d1ce4e5b9ULL ^ salt);
    x = (x ^ (x >> 29)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 32);
  }
  std::uint64_t high_ = 0x243f6a8885a308d3ULL;
  std::uint64_t low_ = 0x13198a2e03707344ULL;
};

}  // namespace lockstep::history
