// The project's only pseudo-random generators, for everything that draws
// numbers from a seed: the simulators, the Raft election timeout, the
// fuzzers' workloads and the benchmarks. One seed is a complete recipe
// (TigerBeetle's VOPR habit): nothing here reads a clock or global state,
// so the same seed gives the same stream on every machine.
//
// Two streams, both fixed forever (changing either would change what every
// recorded seed reproduces):
// - SplitMix64, one word of state: cheap, for a driver that needs a few
//   numbers (election timeouts, load generators).
// - Prng, xoshiro256** seeded through SplitMix64: the simulators' stream,
//   with fork() for independent purposes.
// Both offer the same draws (below, between, unit, chance) through Draws.
#pragma once

#include <cstdint>

namespace lockstep {

// One step of splitmix64 over `state`: the mixing that seeds every stream.
inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The draws every generator offers, written once over its next().
template <class Generator>
class Draws {
 public:
  // Uniform in [0, bound); bound > 0. The modulo bias is below 2^-40 for the
  // bounds used here, and keeps the stream simple to reproduce.
  std::uint64_t below(std::uint64_t bound) { return self().next() % bound; }
  // Uniform in [low, high], inclusive; `low` when the range is empty. A
  // range of one value still draws, as the recorded seeds were made with.
  std::int64_t between(std::int64_t low, std::int64_t high) {
    if (high < low) return low;
    return low + static_cast<std::int64_t>(below(static_cast<std::uint64_t>(high - low) + 1));
  }
  // Uniform in [0, 1).
  double unit() { return static_cast<double>(self().next() >> 11) * 0x1.0p-53; }
  bool chance(double probability) { return unit() < probability; }

 private:
  Generator& self() { return static_cast<Generator&>(*this); }
};

class SplitMix64 : public Draws<SplitMix64> {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return splitmix64(state_); }

 private:
  std::uint64_t state_;
};

class Prng : public Draws<Prng> {
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

  // An independent stream for one purpose (workload, network, faults), so
  // that drawing more numbers for one purpose does not shift the others.
  Prng fork(std::uint64_t purpose) { return Prng(next() ^ (purpose * 0xd1b54a32d192ed03ULL)); }

 private:
  static std::uint64_t rotate(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t words_[4];
};

}  // namespace lockstep
