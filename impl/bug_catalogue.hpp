// The look-up every catalogue of injectable bugs shares (impl/bugs.cpp,
// impl/cluster/bugs.cpp, impl/raft/bugs.cpp): a catalogue is a table of
// entries, each with its `bug` and its `name` as the command line spells
// it; "none" names the correct service, which no entry holds.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace lockstep {

template <typename Entry>
auto bug_of_name(std::span<const Entry> catalogue, std::string_view name) -> std::optional<decltype(Entry::bug)> {
  using Bug = decltype(Entry::bug);
  if (name == "none") return Bug::none;
  for (const auto& entry : catalogue) {
    if (entry.name == name) return entry.bug;
  }
  return std::nullopt;
}

template <typename Entry>
std::string_view name_of_bug(std::span<const Entry> catalogue, decltype(Entry::bug) bug) {
  for (const auto& entry : catalogue) {
    if (entry.bug == bug) return entry.name;
  }
  return "none";
}

}  // namespace lockstep
