#include "impl/key_index.hpp"

#include "impl/hash_bytes.hpp"

namespace lockstep {

namespace {

constexpr std::size_t initial_capacity = 16;

Slot slot_of(std::uint64_t entry) { return static_cast<Slot>((entry & 0xffffffffu) - 1); }
std::uint32_t fragment_of_entry(std::uint64_t entry) { return static_cast<std::uint32_t>(entry >> 32); }
std::uint64_t make_entry(std::uint32_t fragment, Slot slot) {
  return (std::uint64_t{fragment} << 32) | (std::uint64_t{slot} + 1);
}

}  // namespace

KeyIndex::KeyIndex(KeyOf key_of)
    : entries_(initial_capacity, 0), mask_(initial_capacity - 1), key_of_(std::move(key_of)) {}

std::uint32_t KeyIndex::fragment_of(std::string_view key) {
  return static_cast<std::uint32_t>(hash_bytes(key));
}

Slot KeyIndex::find(std::string_view key) const {
  const auto fragment = fragment_of(key);
  for (auto pos = home_of(fragment);; pos = (pos + 1) & mask_) {
    const auto entry = entries_[pos];
    if (entry == 0) return no_slot;
    if (fragment_of_entry(entry) == fragment && key_of_(slot_of(entry)) == key) return slot_of(entry);
  }
}

void KeyIndex::insert(std::string_view key, Slot slot) {
  LOCKSTEP_ASSERT(slot != no_slot);
  if ((size_ + 1) * 4 > entries_.size() * 3) grow();
  const auto fragment = fragment_of(key);
  auto pos = home_of(fragment);
  while (entries_[pos] != 0) pos = (pos + 1) & mask_;
  entries_[pos] = make_entry(fragment, slot);
  ++size_;
}

void KeyIndex::erase(std::string_view key) {
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

void KeyIndex::grow() {
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

}  // namespace lockstep
