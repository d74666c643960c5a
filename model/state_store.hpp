// The explorer's distinct states, each stored once as the bytes of its
// encoded view (explorer_state.hpp), numbered in the order found. It is both
// the seen-set and the frontier: the explorer searches breadth-first, so it
// expands states in the order of their numbers, and a state is nothing more
// than its bytes until it is expanded.
//
// The bytes live end to end in one arena, so a state costs its bytes plus
// about 24 bytes of bookkeeping (its offset, its table entry at the table's
// average load) and no allocation of its own. Lookups are exact: equal
// bytes, not equal hashes, make two states one. The table is open
// addressing with linear probing, and nothing is ever erased.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace lockstep {

class StateStore {
 public:
  StateStore();

  // The number of `bytes` and whether it is new (stored now) or was stored.
  std::pair<std::uint32_t, bool> insert(std::string_view bytes);

  std::string_view at(std::uint32_t index) const {
    const auto begin = offsets_[index];
    return {arena_.data() + begin, static_cast<std::size_t>(offsets_[index + 1] - begin)};
  }
  std::uint32_t size() const { return static_cast<std::uint32_t>(offsets_.size() - 1); }

 private:
  static std::uint64_t hash_of(std::string_view bytes);
  void grow();

  std::vector<char> arena_;
  std::vector<std::uint64_t> offsets_;  // state i is arena_[offsets_[i], offsets_[i + 1])
  // (upper 32 bits of the hash) << 32 | (state number + 1); 0 is empty.
  std::vector<std::uint64_t> table_;
  std::size_t mask_ = 0;
};

}  // namespace lockstep
