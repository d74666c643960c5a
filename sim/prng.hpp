// The simulator's only source of randomness: a seeded xoshiro256** stream.
// One seed drives a whole run (TigerBeetle's VOPR habit): the workload, the
// network's delays, the faults and, with --swarm, the parameters themselves
// come from generators derived from that seed, so a seed is a complete
// reproduction recipe. Nothing here reads a clock or global state.
#pragma once

#include <cstdint>

namespace lockstep::sim {

// splitmix64: expands one 64-bit seed into well-mixed state words.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Prng {
 public:
  explicit Prng(std::uint64_t seed) {
    std::uint64_t state = seed;
    for (auto& word : words_) word = splitmix64(state);
  }

  std::uint64_t next() {
    const std::uint64_t result = rotate(words_[1] * 5, 7) * 9;
    const std::uint64_t t = words_[1] << 17;
    words_[2] ^= words_[0];
    words_[3] ^= words_[1];
    words_[1] ^= words_[2];
    words_[0] ^= words_[3];
    words_[2] ^= t;
    words_[3] = rotate(words_[3], 45);
    return result;
  }

  // Uniform in [0, bound); bound > 0. The modulo bias is below 2^-40 for the
  // bounds the simulator uses, and keeps the stream simple to reproduce.
  std::uint64_t below(std::uint64_t bound) { return next() % bound; }
  // Uniform in [low, high], inclusive.
  std::int64_t between(std::int64_t low, std::int64_t high) {
    return low + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(high - low) + 1));
  }
  // Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool chance(double probability) { return unit() < probability; }

  // An independent stream for one purpose (workload, network, faults), so
  // that drawing more numbers for one purpose does not shift the others.
  Prng fork(std::uint64_t purpose) { return Prng(next() ^ (purpose * 0xd1b54a32d192ed03ULL)); }

 private:
  static std::uint64_t rotate(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t words_[4];
};

}  // namespace lockstep::sim
