// Difference constraints over a few instants (a Simple Temporal Network),
// kept closed by shortest paths: what cluster mode's search knows of the
// instants a configuration still needs (the holder's grant, each waiter's
// queueing, the step being applied), so that one operation has one instant
// for every rule that reads it (check/DESIGN.md, "Cluster mode").
//
// Variable 0 is the origin, the instant 0; bound(i, j) is the least upper
// bound of x_j - x_i that the constraints imply. The matrix is always
// closed (every bound is the shortest path), so a new constraint is checked
// against the opposite bound alone, a variable can be dropped by dropping
// its row and column (projection), and one zone is inside another exactly
// when each bound is no larger. Instants are integers (milliseconds), and a
// closed integer matrix without a negative cycle has an integer solution:
// what the search decides is exact to the millisecond.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "impl/assert.hpp"
#include "check/fingerprint.hpp"

namespace lockstep::history {

class Zone {
 public:
  // No bound: larger than any difference of instants the checker meets.
  static constexpr std::int64_t open = std::numeric_limits<std::int64_t>::max() / 4;

  Zone() : n_(1), d_(1, 0) {}

  std::uint32_t size() const { return n_; }

  // The least upper bound of x_j - x_i.
  std::int64_t bound(std::uint32_t i, std::uint32_t j) const { return d_[i * n_ + j]; }
  // The earliest and latest instant of x_i.
  std::int64_t earliest(std::uint32_t i) const { return at(i, 0) >= open ? -open : -at(i, 0); }
  std::int64_t latest(std::uint32_t i) const { return at(0, i); }
  // Whether x_i < x_j in every solution, and whether in some.
  bool certainly_before(std::uint32_t i, std::uint32_t j) const { return at(j, i) <= -1; }
  bool maybe_before(std::uint32_t i, std::uint32_t j) const { return at(i, j) >= 1; }

  // A new variable, unconstrained, at index `where` (the later ones move up
  // by one); returns it.
  std::uint32_t insert(std::uint32_t where) {
    LOCKSTEP_ASSERT(where >= 1 && where <= n_);
    const std::uint32_t n = n_, m = n_ + 1;
    d_.resize(static_cast<std::size_t>(m) * m);
    // Moved in place from the last entry back, so that nothing is read
    // after it was overwritten.
    for (std::uint32_t i = m; i-- > 0;) {
      for (std::uint32_t j = m; j-- > 0;) {
        std::int64_t value = open;
        if (i == where && j == where) {
          value = 0;
        } else if (i != where && j != where) {
          value = d_[(i < where ? i : i - 1) * n + (j < where ? j : j - 1)];
        }
        d_[i * m + j] = value;
      }
    }
    n_ = m;
    return where;
  }
  std::uint32_t add() { return insert(n_); }

  // Drops x_i: the constraints it implied between the others stay.
  void remove(std::uint32_t i) {
    LOCKSTEP_ASSERT(i >= 1 && i < n_);
    const std::uint32_t n = n_, m = n_ - 1;
    // Moved in place from the first entry on: each is read before any write
    // reaches it.
    for (std::uint32_t a = 0; a < m; ++a) {
      const auto from_a = a < i ? a : a + 1;
      for (std::uint32_t b = 0; b < m; ++b) d_[a * m + b] = d_[from_a * n + (b < i ? b : b + 1)];
    }
    d_.resize(static_cast<std::size_t>(m) * m);
    n_ = m;
  }

  // x_i forgets every constraint (dropped, then made again, unconstrained).
  void forget(std::uint32_t i) {
    LOCKSTEP_ASSERT(i >= 1 && i < n_);
    for (std::uint32_t k = 0; k < n_; ++k) {
      if (k == i) continue;
      ref(i, k) = open;
      ref(k, i) = open;
    }
  }

  // x_to becomes x_from (what x_to was is forgotten).
  void copy(std::uint32_t to, std::uint32_t from) {
    LOCKSTEP_ASSERT(to >= 1 && to < n_ && from < n_);
    if (to == from) return;
    for (std::uint32_t k = 0; k < n_; ++k) {
      if (k == to) continue;
      ref(to, k) = at(from, k);
      ref(k, to) = at(k, from);
    }
    ref(to, from) = 0;
    ref(from, to) = 0;
  }

  // x_j - x_i <= w. False when that contradicts what is known (the zone is
  // then unchanged).
  bool constrain(std::uint32_t i, std::uint32_t j, std::int64_t w) {
    if (w >= open) return true;
    if (w >= at(i, j)) return true;
    if (at(j, i) < open && at(j, i) + w < 0) return false;
    for (std::uint32_t a = 0; a < n_; ++a) {
      const auto to_i = at(a, i);
      if (to_i >= open) continue;
      for (std::uint32_t b = 0; b < n_; ++b) {
        const auto from_j = at(j, b);
        if (from_j >= open) continue;
        const auto via = to_i + w + from_j;
        if (via < at(a, b)) ref(a, b) = via;
      }
    }
    return true;
  }
  // x_i in [lo, hi]; x_i <= x_j + gap (x_i - x_j <= gap).
  bool at_least(std::uint32_t i, std::int64_t lo) { return lo <= -open || constrain(i, 0, -lo); }
  bool at_most(std::uint32_t i, std::int64_t hi) { return constrain(0, i, hi); }
  bool within(std::uint32_t i, std::int64_t lo, std::int64_t hi) { return at_least(i, lo) && at_most(i, hi); }
  bool no_later(std::uint32_t i, std::uint32_t j, std::int64_t gap = 0) { return constrain(j, i, gap); }
  // Whether x_i <= x_j + gap in some solution.
  bool allows_no_later(std::uint32_t i, std::uint32_t j, std::int64_t gap = 0) const {
    return at(i, j) >= open || at(i, j) + gap >= 0;
  }

  // Every solution of this zone is one of `other` (the same variables).
  bool inside(const Zone& other) const {
    if (other.n_ != n_) return false;
    for (std::size_t k = 0; k < d_.size(); ++k) {
      if (d_[k] > other.d_[k]) return false;
    }
    return true;
  }
  // The smallest zone holding both (a zone is convex: the union of two is
  // held in it, and is it only when union_is_hull says so).
  void hull(const Zone& other) {
    LOCKSTEP_ASSERT(other.n_ == n_);
    for (std::size_t k = 0; k < d_.size(); ++k) d_[k] = std::max(d_[k], other.d_[k]);
  }

  void add_to(FingerprintBuilder& print) const {
    print.add(n_);
    for (const auto v : d_) print.add(static_cast<std::uint64_t>(v));
  }

  std::size_t bytes() const { return d_.capacity() * sizeof(std::int64_t); }

  friend bool operator==(const Zone&, const Zone&) = default;

 private:
  std::int64_t at(std::uint32_t i, std::uint32_t j) const { return d_[i * n_ + j]; }
  std::int64_t& ref(std::uint32_t i, std::uint32_t j) { return d_[i * n_ + j]; }

  std::uint32_t n_;
  std::vector<std::int64_t> d_;  // row-major, n_ * n_, closed
};

// Whether the union of two closed zones over the same variables is their
// hull (then replacing both by the hull loses and adds nothing). Exact: the
// hull is inside the union when every piece of the hull outside `a` (the
// hull with one of a's bounds broken) is inside `b`.
inline bool union_is_hull(const Zone& a, const Zone& b) {
  Zone whole = a;
  whole.hull(b);
  const auto n = a.size();
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = 0; j < n; ++j) {
      if (i == j || a.bound(i, j) >= whole.bound(i, j)) continue;
      // The part of the hull where x_j - x_i > a's bound: x_i - x_j <= -bound - 1.
      Zone piece = whole;
      if (!piece.constrain(j, i, -a.bound(i, j) - 1)) continue;
      if (!piece.inside(b)) return false;
    }
  }
  return true;
}

}  // namespace lockstep::history
