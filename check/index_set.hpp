// Sets of indices kept as "every index below `mark`" plus the others: the
// requests handled and the responses explained by a configuration of the
// history checker's search, which are mostly a prefix of their lists.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "check/small_vector.hpp"
#include "impl/assert.hpp"

namespace lockstep::history {

// Every index below `mark`, plus `extra`: simple mode's requests handled
// and responses explained, which are only ever added.
struct PrefixSet {
  std::uint32_t mark = 0;
  SmallVector<std::uint32_t, 4> extra;  // sorted, all above mark

  bool contains(std::uint32_t index) const {
    return index < mark || std::binary_search(extra.begin(), extra.end(), index);
  }
  // The first index not in the set.
  std::uint32_t low() const { return mark; }
  void insert(std::uint32_t index) {
    LOCKSTEP_ASSERT(!contains(index));
    if (index != mark) {
      extra.insert(std::upper_bound(extra.begin(), extra.end(), index), index);
      return;
    }
    ++mark;
    std::size_t joined = 0;
    while (joined < extra.size() && extra[joined] == mark) {
      ++mark;
      ++joined;
    }
    extra.erase(extra.begin(), extra.begin() + static_cast<std::ptrdiff_t>(joined));
  }
  std::uint32_t size() const { return mark + static_cast<std::uint32_t>(extra.size()); }
  friend bool operator==(const PrefixSet&, const PrefixSet&) = default;
};

// The same, from which an index can be taken out again (cluster mode: a
// request un-applied when a leader change may have dropped it).
struct IndexSet : PrefixSet {
  // Sorted, all below mark: indices taken out again, kept apart so that one
  // taken out far below the mark costs one entry.
  SmallVector<std::uint32_t, 4> holes;

  bool contains(std::uint32_t index) const {
    if (index < mark) return !std::binary_search(holes.begin(), holes.end(), index);
    return PrefixSet::contains(index);
  }
  std::uint32_t low() const { return holes.empty() ? mark : holes.front(); }
  void insert(std::uint32_t index) {
    LOCKSTEP_ASSERT(!contains(index));
    if (index < mark) {
      holes.erase(std::lower_bound(holes.begin(), holes.end(), index));
      return;
    }
    PrefixSet::insert(index);
  }
  void erase(std::uint32_t index) {
    LOCKSTEP_ASSERT(contains(index));
    if (index >= mark) {
      extra.erase(std::lower_bound(extra.begin(), extra.end(), index));
      return;
    }
    holes.insert(std::upper_bound(holes.begin(), holes.end(), index), index);
  }
  std::uint32_t size() const { return PrefixSet::size() - static_cast<std::uint32_t>(holes.size()); }
  friend bool operator==(const IndexSet&, const IndexSet&) = default;
};

}  // namespace lockstep::history
