// The engine's open-addressing key index against a plain std::map (the
// "optimized against naive" kind of property test): random inserts, erases
// and lookups must agree, through growth and backward-shift deletion.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>

#include "impl/key_index.hpp"

namespace lockstep {
namespace {

RC_GTEST_PROP(KeyIndex, AgreesWithAMap, ()) {
  std::vector<std::string> names;  // slot -> key
  KeyIndex index([&](Slot slot) -> std::string_view { return names[slot]; });
  std::map<std::string, Slot> naive;
  const auto operations = *rc::gen::container<std::vector<std::pair<bool, int>>>(
      rc::gen::pair(rc::gen::arbitrary<bool>(), rc::gen::inRange(0, 200)));
  for (const auto& [insert, id] : operations) {
    const auto key = "key" + std::to_string(id);
    const auto present = naive.find(key);
    if (insert && present == naive.end()) {
      names.push_back(key);
      const auto slot = static_cast<Slot>(names.size() - 1);
      index.insert(names.back(), slot);
      naive.emplace(key, slot);
    } else if (!insert && present != naive.end()) {
      index.erase(key);
      naive.erase(present);
    }
    RC_ASSERT(index.size() == naive.size());
    RC_ASSERT(index.find(key) == (naive.contains(key) ? naive.at(key) : no_slot));
  }
  for (int id = 0; id < 200; ++id) {
    const auto key = "key" + std::to_string(id);
    RC_ASSERT(index.find(key) == (naive.contains(key) ? naive.at(key) : no_slot));
  }
}

TEST(KeyIndex, GrowsAndKeepsEveryKey) {
  std::vector<std::string> names;
  names.reserve(100'000);
  KeyIndex index([&](Slot slot) -> std::string_view { return names[slot]; });
  for (int i = 0; i < 100'000; ++i) {
    names.push_back(std::to_string(i));
    index.insert(names.back(), static_cast<Slot>(i));
  }
  EXPECT_GE(index.capacity() * 3, index.size() * 4);  // load stays at most 3/4
  for (int i = 0; i < 100'000; i += 2) index.erase(names[static_cast<std::size_t>(i)]);
  for (int i = 0; i < 100'000; ++i) {
    EXPECT_EQ(index.find(names[static_cast<std::size_t>(i)]), i % 2 ? static_cast<Slot>(i) : no_slot);
  }
}

}  // namespace
}  // namespace lockstep
