// Counters named once. A figures struct (the engine's counters, a
// simulator's statistics, a client's) lists each of its counters in one
// table beside it, with the label a summary prints; summing over seeds,
// incarnations or clients and printing a summary both walk that table, so
// a counter added to the struct and not to its table fails to compile (the
// table's static_assert on the struct's size) instead of silently missing
// from a sum or a summary.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lockstep {

template <class Figures>
struct Counter {
  std::string_view label;  // as a summary prints it
  std::uint64_t Figures::*field;
};

// Adds every counter of `table` from `from` into `into`.
template <class Figures, std::size_t N>
void add_counters(Figures& into, const Figures& from, const std::array<Counter<Figures>, N>& table) {
  for (const auto& counter : table) into.*counter.field += from.*counter.field;
}

// True when `table` names as many counters as `Figures` holds words beside
// `other_bytes` (fields that are not counters): for the static_assert that
// keeps a table complete.
template <class Figures, std::size_t N>
constexpr bool lists_every_counter(const std::array<Counter<Figures>, N>&, std::size_t other_bytes = 0) {
  return sizeof(Figures) == N * sizeof(std::uint64_t) + other_bytes;
}

}  // namespace lockstep
