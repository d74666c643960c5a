// The explorer's state store and the engine's compact strings, each against
// the plain standard container it replaces (the "optimized against naive"
// kind of property test). The store must number distinct byte strings in the
// order first inserted, find each again exactly (byte strings that differ
// only in a trailing zero, or that share a hash fragment, stay apart) and
// hand back the same bytes, through its table's growth; a CompactString
// must hold exactly the text a std::string holds, in place or on the heap,
// through copies, moves and reassignment.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "impl/compact_string.hpp"
#include "model/state_store.hpp"

namespace lockstep {
namespace {

RC_GTEST_PROP(StateStore, NumbersDistinctBytesAsAMapDoes, ()) {
  // Short strings over a tiny alphabet with zero bytes: many repeats and
  // many near misses.
  const auto inputs = *rc::gen::container<std::vector<std::string>>(
      rc::gen::container<std::string>(rc::gen::element('\0', 'a', 'b')));
  StateStore store;
  std::map<std::string, std::uint32_t> naive;
  std::vector<std::string> in_order;
  for (const auto& bytes : inputs) {
    const auto [number, fresh] = store.insert(bytes);
    const auto found = naive.find(bytes);
    RC_ASSERT(fresh == (found == naive.end()));
    if (fresh) {
      RC_ASSERT(number == in_order.size());
      naive.emplace(bytes, number);
      in_order.push_back(bytes);
    } else {
      RC_ASSERT(number == found->second);
    }
  }
  RC_ASSERT(store.size() == in_order.size());
  for (std::uint32_t i = 0; i < in_order.size(); ++i) RC_ASSERT(store.at(i) == in_order[i]);
}

TEST(StateStore, GrowsAndFindsEveryState) {
  StateStore store;
  for (std::uint32_t i = 0; i < 300'000; ++i) {
    const auto [number, fresh] = store.insert("state " + std::to_string(i));
    ASSERT_TRUE(fresh);
    ASSERT_EQ(number, i);
  }
  for (std::uint32_t i = 0; i < 300'000; i += 7) {
    const auto [number, fresh] = store.insert("state " + std::to_string(i));
    EXPECT_FALSE(fresh);
    EXPECT_EQ(number, i);
  }
  EXPECT_EQ(store.at(123'456), "state 123456");
}

RC_GTEST_PROP(CompactString, HoldsWhatAStdStringHolds, ()) {
  // Lengths around the 15 bytes kept in place.
  const auto texts = *rc::gen::container<std::vector<std::string>>(
      rc::gen::resize(40, rc::gen::container<std::string>(rc::gen::inRange('!', '~'))));
  std::vector<CompactString> compact;
  for (const auto& text : texts) compact.emplace_back(text);
  for (std::size_t i = 0; i < texts.size(); ++i) RC_ASSERT(compact[i].view() == texts[i]);
  // Copies, moves and reassignment between in-place and heap texts.
  std::vector<CompactString> copies = compact;
  for (std::size_t i = 0; i + 1 < copies.size(); ++i) {
    copies[i] = copies[i + 1];
    RC_ASSERT(copies[i].view() == texts[i + 1]);
    CompactString moved = std::move(copies[i]);
    RC_ASSERT(moved.view() == texts[i + 1]);
    RC_ASSERT(copies[i].view().empty());
    moved.assign(texts[i]);
    RC_ASSERT(moved.view() == texts[i]);
  }
}

}  // namespace
}  // namespace lockstep
