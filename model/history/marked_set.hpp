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

  bool contains(std::uint32_t index) const {
    return index < mark || std::binary_search(extra.begin(), extra.end(), index);
  }
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
  void erase(std::uint32_t index) {
    LOCKSTEP_ASSERT(contains(index));
    if (index >= mark) {
      extra.erase(std::lower_bound(extra.begin(), extra.end(), index));
      return;
    }
    std::vector<std::uint32_t> above;
    for (std::uint32_t i = index + 1; i < mark; ++i) above.push_back(i);
    above.insert(above.end(), extra.begin(), extra.end());
    extra = std::move(above);
    mark = index;
  }
  std::uint32_t size() const { return mark + static_cast<std::uint32_t>(extra.size()); }
  friend bool operator==(const IndexSet&, const IndexSet&) = default;
};

}  // namespace lockstep::history
