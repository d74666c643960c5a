// A set of indices kept as "every index below `mark`" plus the others: the
// requests handled and the responses explained by a configuration of the
// history checker's search, which are mostly a prefix of their lists.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "impl/assert.hpp"

namespace lockstep::history {

struct IndexSet {
  std::uint32_t mark = 0;
  std::vector<std::uint32_t> extra;  // sorted, all above mark
  // Sorted, all below mark: indices taken out again (a request un-applied),
  // kept apart so that one taken out far below the mark costs one entry.
  std::vector<std::uint32_t> holes;

  bool contains(std::uint32_t index) const {
    if (index < mark) return !std::binary_search(holes.begin(), holes.end(), index);
    return std::binary_search(extra.begin(), extra.end(), index);
  }
  // The first index not in the set.
  std::uint32_t low() const { return holes.empty() ? mark : holes.front(); }
  void insert(std::uint32_t index) {
    LOCKSTEP_ASSERT(!contains(index));
    if (index < mark) {
      holes.erase(std::lower_bound(holes.begin(), holes.end(), index));
      return;
    }
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
  void erase(std::uint32_t index) {
    LOCKSTEP_ASSERT(contains(index));
    if (index >= mark) {
      extra.erase(std::lower_bound(extra.begin(), extra.end(), index));
      return;
    }
    holes.insert(std::upper_bound(holes.begin(), holes.end(), index), index);
  }
  std::uint32_t size() const {
    return mark - static_cast<std::uint32_t>(holes.size()) + static_cast<std::uint32_t>(extra.size());
  }
  friend bool operator==(const IndexSet&, const IndexSet&) = default;
};

}  // namespace lockstep::history
