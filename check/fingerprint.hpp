// A 128-bit fingerprint of a configuration, for finding equal ones among
// many: two independent 64-bit mixes of the same words.
#pragma once

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <vector>

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

// A set of fingerprints in one flat table (open addressing, linear probing,
// at most half full): a search inserts about a million of them, a few per
// instant, and clears the set at every instant; a node-based set allocated
// and freed one node per insert. Fingerprints are already uniform, so a
// slot is taken from their high bits. The all-zero fingerprint marks an
// empty slot and is kept apart.
class FingerprintSet {
 public:
  // Whether `print` was not in the set (it is now).
  bool insert(const Fingerprint& print) {
    if (print == Fingerprint{}) {
      const bool added = !has_zero_;
      has_zero_ = true;
      size_ += added ? 1 : 0;
      return added;
    }
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = slot_of(print, mask);; i = (i + 1) & mask) {
      if (slots_[i] == print) return false;
      if (slots_[i] == Fingerprint{}) {
        slots_[i] = print;
        ++size_;
        return true;
      }
    }
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Empties the set; a table a busy instant once grew past `keep_slots` is
  // given back rather than cleared slot by slot at every later instant.
  void clear(std::size_t keep_slots = 512) {
    if (slots_.size() > keep_slots) {
      slots_ = {};
    } else if (size_ > 0) {
      std::fill(slots_.begin(), slots_.end(), Fingerprint{});
    }
    size_ = 0;
    has_zero_ = false;
  }

 private:
  static std::size_t slot_of(const Fingerprint& print, std::size_t mask) {
    return static_cast<std::size_t>(print.high >> 17) & mask;
  }
  void grow() {
    std::vector<Fingerprint> old(slots_.empty() ? 16 : slots_.size() * 2);
    old.swap(slots_);
    const std::size_t mask = slots_.size() - 1;
    for (const auto& print : old) {
      if (print == Fingerprint{}) continue;
      std::size_t i = slot_of(print, mask);
      while (!(slots_[i] == Fingerprint{})) i = (i + 1) & mask;
      slots_[i] = print;
    }
  }

  std::vector<Fingerprint> slots_;  // a power of two of them, or none
  std::size_t size_ = 0;
  bool has_zero_ = false;
};

}  // namespace lockstep::history
