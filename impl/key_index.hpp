// An open-addressing hash index from key text to the slot of its record.
// It stores only (hash fragment, slot) pairs, 8 bytes each, and reads the key
// text from the records, so a held key costs the index about 11 bytes at its
// average load instead of a node allocation per key. Linear probing with
// backward-shift deletion: no tombstones, so lookups stay short under churn.
//
// `KeyOf` gives the key text stored in the record at a slot. It is a type
// parameter, not a std::function, so that the lookup of a request's key,
// the engine's hottest path, compiles to a direct read of the record.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "impl/assert.hpp"
#include "impl/hash_bytes.hpp"
#include "impl/slab.hpp"

namespace lockstep {

template <class KeyOf>
class KeyIndex {
 public:
  explicit KeyIndex(KeyOf key_of) : entries_(initial_capacity, 0), mask_(initial_capacity - 1), key_of_(std::move(key_of)) {}

  Slot find(std::string_view key) const {
    const auto fragment = fragment_of(key);
    for (auto pos = home_of(fragment);; pos = (pos + 1) & mask_) {
      const auto entry = entries_[pos];
      if (entry == 0) return no_slot;
      if (fragment_of_entry(entry) == fragment && key_of_(slot_of(entry)) == key) return slot_of(entry);
    }
  }

  // Inserts a key known to be absent.
  void insert(std::string_view key, Slot slot) {
    LOCKSTEP_ASSERT(slot != no_slot);
    if ((size_ + 1) * 4 > entries_.size() * 3) grow();
    const auto fragment = fragment_of(key);
    auto pos = home_of(fragment);
    while (entries_[pos] != 0) pos = (pos + 1) & mask_;
    entries_[pos] = make_entry(fragment, slot);
    ++size_;
  }

  // Erases a key known to be present.
  void erase(std::string_view key) {
    const auto fragment = fragment_of(key);
    auto pos = home_of(fragment);
    while (true) {
      const auto entry = entries_[pos];
      LOCKSTEP_ASSERT(entry != 0);
      if (fragment_of_entry(entry) == fragment && key_of_(slot_of(entry)) == key) break;
      pos = (pos + 1) & mask_;
    }
    // Backward-shift deletion: move later entries of the probe run back into
    // the hole when that brings them no further from their home position.
    auto hole = pos;
    for (auto next = (hole + 1) & mask_; entries_[next] != 0; next = (next + 1) & mask_) {
      const auto home = home_of(fragment_of_entry(entries_[next]));
      const auto distance_next = (next - home) & mask_;
      const auto distance_hole = (hole - home) & mask_;
      if (distance_hole < distance_next) {
        entries_[hole] = entries_[next];
        hole = next;
      }
    }
    entries_[hole] = 0;
    --size_;
  }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return entries_.size(); }

 private:
  static constexpr std::size_t initial_capacity = 16;

  static std::uint32_t fragment_of(std::string_view key) { return static_cast<std::uint32_t>(hash_bytes(key)); }
  // An entry is (32-bit hash fragment) << 32 | (slot + 1); 0 is empty.
  static Slot slot_of(std::uint64_t entry) { return static_cast<Slot>((entry & 0xffffffffu) - 1); }
  static std::uint32_t fragment_of_entry(std::uint64_t entry) { return static_cast<std::uint32_t>(entry >> 32); }
  static std::uint64_t make_entry(std::uint32_t fragment, Slot slot) {
    return (std::uint64_t{fragment} << 32) | (std::uint64_t{slot} + 1);
  }
  // An entry's home position comes from its fragment alone, so moving
  // entries (growth, deletion) never rereads or rehashes a key.
  std::size_t home_of(std::uint32_t fragment) const { return fragment & mask_; }

  void grow() {
    // Home positions come from 32 bits, so the table stops growing there.
    LOCKSTEP_ASSERT(entries_.size() <= (std::size_t{1} << 31));
    std::vector<std::uint64_t> old(entries_.size() * 2, 0);
    old.swap(entries_);
    mask_ = entries_.size() - 1;
    for (auto entry : old) {
      if (entry == 0) continue;
      auto pos = home_of(fragment_of_entry(entry));
      while (entries_[pos] != 0) pos = (pos + 1) & mask_;
      entries_[pos] = entry;
    }
  }

  std::vector<std::uint64_t> entries_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
  KeyOf key_of_;
};

}  // namespace lockstep
