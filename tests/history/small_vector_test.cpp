// SmallVector (check/small_vector.hpp) held to std::vector: random sequences
// of the operations the checker uses, on lists that cross the inline size
// both ways, copied and moved between, must leave the same elements. Also the
// sets built on it (PrefixSet, IndexSet, PhaseSet) against plain sets.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "check/index_set.hpp"
#include "check/phase_set.hpp"
#include "check/small_vector.hpp"

namespace lockstep::history {
namespace {

struct Op {
  int kind = 0;          // which operation
  std::uint32_t value = 0;
  std::uint32_t where = 0;  // a position, taken modulo the size
};

using Small = SmallVector<std::uint32_t, 3>;

bool same(const Small& small, const std::vector<std::uint32_t>& plain) {
  return small.size() == plain.size() && std::equal(plain.begin(), plain.end(), small.begin()) &&
         small.empty() == plain.empty();
}

// Applies `op` to both; `spare` is a second pair that copies and moves
// exchange elements with.
void apply(const Op& op, Small& small, std::vector<std::uint32_t>& plain, Small& spare_small,
           std::vector<std::uint32_t>& spare_plain) {
  const auto at = [&](std::size_t size) { return size == 0 ? 0 : op.where % (size + 1); };
  switch (op.kind) {
    case 0:
      small.push_back(op.value);
      plain.push_back(op.value);
      break;
    case 1: {
      const auto i = at(plain.size());
      small.insert(small.begin() + i, op.value);
      plain.insert(plain.begin() + static_cast<std::ptrdiff_t>(i), op.value);
      break;
    }
    case 2:
      if (!plain.empty()) {
        const auto i = op.where % plain.size();
        const auto j = i + (op.value % (plain.size() - i + 1));
        small.erase(small.begin() + i, small.begin() + j);
        plain.erase(plain.begin() + static_cast<std::ptrdiff_t>(i), plain.begin() + static_cast<std::ptrdiff_t>(j));
      }
      break;
    case 3:
      if (!plain.empty()) {
        const auto i = op.where % plain.size();
        small.erase(small.begin() + i);
        plain.erase(plain.begin() + static_cast<std::ptrdiff_t>(i));
      }
      break;
    case 4:  // the element pushed is one of its own (aliasing on growth)
      if (!plain.empty()) {
        const auto i = op.where % plain.size();
        small.push_back(small[i]);
        plain.push_back(plain[i]);
      }
      break;
    case 5:
      spare_small = small;
      spare_plain = plain;
      break;
    case 6:
      small = std::move(spare_small);
      plain = std::move(spare_plain);
      spare_small = Small{};
      spare_plain.clear();
      break;
    case 7: {
      Small moved(std::move(small));
      small = moved;
      break;
    }
    case 8: {
      const auto i = at(plain.size());
      small.insert(small.begin() + i, spare_small.begin(), spare_small.end());
      plain.insert(plain.begin() + static_cast<std::ptrdiff_t>(i), spare_plain.begin(), spare_plain.end());
      break;
    }
    case 9:
      erase_if(small, [&](std::uint32_t v) { return v % 3 == op.value % 3; });
      std::erase_if(plain, [&](std::uint32_t v) { return v % 3 == op.value % 3; });
      break;
    case 10:
      small.clear();
      plain.clear();
      break;
    default:
      small.reserve(op.where % 9);
      break;
  }
}

RC_GTEST_PROP(SmallVector, BehavesAsStdVector, ()) {
  const auto ops = *rc::gen::container<std::vector<Op>>(rc::gen::apply(
      [](int kind, std::uint32_t value, std::uint32_t where) { return Op{kind, value, where}; }, rc::gen::inRange(0, 12),
      rc::gen::inRange<std::uint32_t>(0, 50), rc::gen::inRange<std::uint32_t>(0, 20)));
  Small small, spare_small;
  std::vector<std::uint32_t> plain, spare_plain;
  for (const auto& op : ops) {
    apply(op, small, plain, spare_small, spare_plain);
    RC_ASSERT(same(small, plain));
    RC_ASSERT(same(spare_small, spare_plain));
    RC_ASSERT((small == Small(small)));
  }
  // Past the inline three, the elements are on the heap.
  if (small.size() > 3) RC_ASSERT(small.heap_bytes() >= small.size() * sizeof(std::uint32_t));
}

TEST(SmallVector, HoldsItsFirstElementsInsideAndMovesToTheHeapPastThem) {
  Small v{1, 2, 3};
  EXPECT_EQ(v.heap_bytes(), 0u);
  v.push_back(4);
  EXPECT_GT(v.heap_bytes(), 0u);
  EXPECT_EQ(std::vector<std::uint32_t>(v.begin(), v.end()), (std::vector<std::uint32_t>{1, 2, 3, 4}));
  Small copy = v;
  v.clear();
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(copy.size(), 4u);
  EXPECT_EQ(copy.back(), 4u);
}

// PrefixSet and IndexSet (index_set.hpp, whose lists are SmallVectors) hold
// the same indices as a std::set under random inserts and erases.
RC_GTEST_PROP(SmallVector, IndexSetHoldsWhatASetHolds, ()) {
  const auto ops = *rc::gen::container<std::vector<std::pair<bool, std::uint32_t>>>(
      rc::gen::pair(rc::gen::arbitrary<bool>(), rc::gen::inRange<std::uint32_t>(0, 24)));
  IndexSet set;
  std::set<std::uint32_t> plain;
  for (const auto& [insert, index] : ops) {
    if (insert && !plain.contains(index)) {
      set.insert(index);
      plain.insert(index);
    } else if (!insert && plain.contains(index)) {
      set.erase(index);
      plain.erase(index);
    }
    RC_ASSERT(set.size() == plain.size());
    for (std::uint32_t i = 0; i < 26; ++i) RC_ASSERT(set.contains(i) == plain.contains(i));
  }
}

// PhaseSet (ranges in a SmallVector) narrowed at random holds the residues
// a plain set of residues holds.
RC_GTEST_PROP(SmallVector, PhaseSetHoldsWhatASetOfResiduesHolds, ()) {
  const std::int64_t period = *rc::gen::inRange<std::int64_t>(1, 12);
  const auto ops = *rc::gen::container<std::vector<std::tuple<int, std::int64_t, std::int64_t>>>(
      rc::gen::tuple(rc::gen::inRange(0, 3), rc::gen::inRange<std::int64_t>(0, 30), rc::gen::inRange<std::int64_t>(0, 6)));
  PhaseSet set(period), other(period);
  std::set<std::int64_t> plain, plain_other;
  for (std::int64_t r = 0; r < period; ++r) plain.insert(r), plain_other.insert(r);
  const auto residues = [&](std::int64_t first, std::int64_t last) {
    std::set<std::int64_t> out;
    for (auto t = first; t <= last; ++t) out.insert(((t % period) + period) % period);
    return out;
  };
  for (const auto& [kind, first, length] : ops) {
    const auto last = first + length;
    if (kind == 0) {
      set.forbid_instants(first, last);
      for (const auto r : residues(first, last)) plain.erase(r);
    } else if (kind == 1) {
      other.require_one_of(first, last);
      const auto wanted = residues(first, last);
      std::erase_if(plain_other, [&](std::int64_t r) { return !wanted.contains(r); });
    } else {
      set.unite(other);
      plain.insert(plain_other.begin(), plain_other.end());
    }
    RC_ASSERT(set.size() == static_cast<std::int64_t>(plain.size()));
    for (std::int64_t r = 0; r < period; ++r) RC_ASSERT(set.contains_instant(r) == plain.contains(r));
  }
}

}  // namespace
}  // namespace lockstep::history
