// An open-addressing hash index from key text to the slot of its record.
// It stores only (hash fragment, slot) pairs, 8 bytes each, and reads the key
// text from the records, so a held key costs the index about 11 bytes at its
// average load instead of a node allocation per key. Linear probing with
// backward-shift deletion: no tombstones, so lookups stay short under churn.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "impl/slab.hpp"

namespace lockstep {

class KeyIndex {
 public:
  // `key_of(slot)` gives the key text stored in the record at `slot`.
  using KeyOf = std::function<std::string_view(Slot)>;

  explicit KeyIndex(KeyOf key_of);

  Slot find(std::string_view key) const;
  // Inserts a key known to be absent.
  void insert(std::string_view key, Slot slot);
  // Erases a key known to be present.
  void erase(std::string_view key);

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return entries_.size(); }

 private:
  static std::uint32_t fragment_of(std::string_view key);
  // An entry's home position comes from its fragment alone, so moving
  // entries (growth, deletion) never rereads or rehashes a key.
  std::size_t home_of(std::uint32_t fragment) const { return fragment & mask_; }
  void grow();

  // An entry is (32-bit hash fragment) << 32 | (slot + 1); 0 is empty.
  std::vector<std::uint64_t> entries_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
  KeyOf key_of_;
};

}  // namespace lockstep
