// The sweep phases still possible: a set of residues modulo the sweep
// period, kept as sorted disjoint inclusive ranges. The sweeps of a black-box
// server run at phase + k * sweep_ms for one unknown phase (docs/protocol.md,
// "Black box, in real time"); each observation that needs or forbids a
// sweep at some instants narrows the set.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "check/small_vector.hpp"

namespace lockstep::history {

// An inclusive range of residues (`first`..`second`, as std::pair names
// them), trivially copyable so that a set of them lives inside the set.
struct PhaseRange {
  std::int64_t first = 0, second = 0;
  friend auto operator<=>(const PhaseRange&, const PhaseRange&) = default;
  friend bool operator==(const PhaseRange&, const PhaseRange&) = default;
  friend bool operator==(const PhaseRange& range, const std::pair<std::int64_t, std::int64_t>& pair) {
    return range.first == pair.first && range.second == pair.second;
  }
};

class PhaseSet {
 public:
  // Most sets are one range, some two: held inside the set, not on the heap.
  using Ranges = SmallVector<PhaseRange, 2>;

  PhaseSet() = default;
  // Every phase of a period.
  explicit PhaseSet(std::int64_t period_ms) : period_(period_ms), ranges_{{0, period_ms - 1}} {}

  std::int64_t period() const { return period_; }
  bool empty() const { return ranges_.empty(); }
  bool pinned() const { return ranges_.size() == 1 && ranges_[0].first == ranges_[0].second; }
  const Ranges& ranges() const { return ranges_; }
  std::int64_t size() const {
    std::int64_t total = 0;
    for (const auto& [low, high] : ranges_) total += high - low + 1;
    return total;
  }

  bool contains_instant(std::int64_t instant_ms) const {
    const auto phase = residue(instant_ms);
    for (const auto& [low, high] : ranges_) {
      if (phase >= low && phase <= high) return true;
    }
    return false;
  }

  // No sweep at any instant of [first, last].
  void forbid_instants(std::int64_t first_ms, std::int64_t last_ms) {
    if (first_ms > last_ms) return;
    if (last_ms - first_ms + 1 >= period_) {
      ranges_.clear();
      return;
    }
    for (const auto& [low, high] : residue_ranges(first_ms, last_ms)) subtract(low, high);
  }

  // A sweep at one of the instants of [first, last].
  void require_one_of(std::int64_t first_ms, std::int64_t last_ms) {
    if (first_ms > last_ms) {
      ranges_.clear();
      return;
    }
    if (last_ms - first_ms + 1 >= period_) return;
    keep_only(residue_ranges(first_ms, last_ms));
  }

  void intersect(const PhaseSet& other) { keep_only(other.ranges_); }

  // Every phase of either set: two explanations that differ only in their
  // phase are one explanation with the phases of both.
  void unite(const PhaseSet& other) {
    Ranges all = ranges_;
    all.insert(all.end(), other.ranges_.begin(), other.ranges_.end());
    set_normalized(std::move(all));
  }

  // The first instant at or after `from_ms` at which a sweep may run, or
  // `none` when the set is empty.
  std::int64_t next_instant(std::int64_t from_ms, std::int64_t none) const {
    if (ranges_.empty()) return none;
    const auto phase = residue(from_ms);
    for (const auto& [low, high] : ranges_) {
      if (phase <= high) return from_ms + std::max<std::int64_t>(0, low - phase);
    }
    return from_ms + (period_ - phase) + ranges_.front().first;
  }

  // Every phase of this set that `other` does not hold.
  void subtract_set(const PhaseSet& other) {
    for (const auto& [low, high] : other.ranges_) subtract(low, high);
  }

  std::int64_t residue(std::int64_t instant_ms) const { return ((instant_ms % period_) + period_) % period_; }

  friend bool operator==(const PhaseSet&, const PhaseSet&) = default;

 private:
  Ranges residue_ranges(std::int64_t first_ms, std::int64_t last_ms) const {
    const auto a = residue(first_ms), b = residue(last_ms);
    if (a <= b) return {{a, b}};
    return {{0, b}, {a, period_ - 1}};
  }

  void keep_only(const Ranges& wanted) {
    Ranges kept;
    for (const auto& [low, high] : wanted) {
      for (const auto& [own_low, own_high] : ranges_) {
        const auto a = std::max(low, own_low), b = std::min(high, own_high);
        if (a <= b) kept.emplace_back(a, b);
      }
    }
    set_normalized(std::move(kept));
  }

  // Sorted, and overlapping or touching ranges joined, so that one set has
  // one representation (sets are compared and fingerprinted).
  void set_normalized(Ranges ranges) {
    std::sort(ranges.begin(), ranges.end());
    ranges_.clear();
    for (const auto& [low, high] : ranges) {
      if (!ranges_.empty() && low <= ranges_.back().second + 1) {
        ranges_.back().second = std::max(ranges_.back().second, high);
      } else {
        ranges_.emplace_back(low, high);
      }
    }
  }

  void subtract(std::int64_t low, std::int64_t high) {
    Ranges kept;
    for (const auto& [own_low, own_high] : ranges_) {
      if (own_high < low || own_low > high) {
        kept.emplace_back(own_low, own_high);
        continue;
      }
      if (own_low < low) kept.emplace_back(own_low, low - 1);
      if (own_high > high) kept.emplace_back(high + 1, own_high);
    }
    ranges_ = std::move(kept);
  }

  std::int64_t period_ = 1;
  Ranges ranges_;
};

}  // namespace lockstep::history
