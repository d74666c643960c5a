#include "model/state_store.hpp"

#include <stdexcept>

#include "impl/hash_bytes.hpp"

namespace lockstep {

namespace {

constexpr std::size_t initial_capacity = std::size_t{1} << 16;

std::uint32_t number_of(std::uint64_t entry) { return static_cast<std::uint32_t>(entry) - 1; }
std::uint32_t fragment_of(std::uint64_t entry) { return static_cast<std::uint32_t>(entry >> 32); }

}  // namespace

StateStore::StateStore() : offsets_{0}, table_(initial_capacity, 0), mask_(initial_capacity - 1) {}

std::uint64_t StateStore::hash_of(std::string_view bytes) { return hash_bytes(bytes); }

std::pair<std::uint32_t, bool> StateStore::insert(std::string_view bytes) {
  const auto hash = hash_of(bytes);
  const auto fragment = static_cast<std::uint32_t>(hash >> 32);
  auto pos = static_cast<std::size_t>(hash) & mask_;
  for (;; pos = (pos + 1) & mask_) {
    const auto entry = table_[pos];
    if (entry == 0) break;
    if (fragment_of(entry) == fragment && at(number_of(entry)) == bytes) return {number_of(entry), false};
  }
  if (size() >= UINT32_MAX - 1) throw std::length_error("more than 2^32 - 2 distinct states");
  const auto number = size();
  arena_.insert(arena_.end(), bytes.begin(), bytes.end());
  offsets_.push_back(arena_.size());
  table_[pos] = (std::uint64_t{fragment} << 32) | (std::uint64_t{number} + 1);
  if (std::size_t{size()} * 2 > table_.size()) grow();
  return {number, true};
}

void StateStore::grow() {
  std::vector<std::uint64_t> old(table_.size() * 2, 0);
  old.swap(table_);
  mask_ = table_.size() - 1;
  for (const auto entry : old) {
    if (entry == 0) continue;
    // The home position needs the hash's low bits, which the entry does not
    // keep: hash the state's bytes again (once per growth, amortized O(1)).
    auto pos = static_cast<std::size_t>(hash_of(at(number_of(entry)))) & mask_;
    while (table_[pos] != 0) pos = (pos + 1) & mask_;
    table_[pos] = entry;
  }
}

}  // namespace lockstep
