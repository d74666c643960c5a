// What the checkers found. Each violation names the checker that saw it
// (in simple mode: model, protocol, client, drain, invariant, determinism;
// the Raft and cluster checkers report theirs into the same shape for the
// swarm runner's failure report) so that a report says which opinion of the
// contract was broken, and, when it is about one key, that key, which the
// shrinker uses to focus its first cut.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "impl/units.hpp"

namespace lockstep::sim {

struct Violation {
  TimeMs at;
  std::string checker;
  std::string what;
  std::string key;  // empty when the violation is not about one key
};

class ViolationLog {
 public:
  void add(TimeMs at, std::string checker, std::string what, std::string key = {}) {
    ++count_;
    const auto counted = std::find_if(by_checker_.begin(), by_checker_.end(), [&](const auto& entry) { return entry.first == checker; });
    if (counted == by_checker_.end()) {
      by_checker_.emplace_back(checker, 1);
    } else {
      ++counted->second;
    }
    if (items_.size() < kept_max) items_.push_back({at, std::move(checker), std::move(what), std::move(key)});
  }
  bool any() const { return count_ > 0; }
  std::uint64_t count() const { return count_; }
  // How many each checker reported, in the order they first reported.
  const std::vector<std::pair<std::string, std::uint64_t>>& by_checker() const { return by_checker_; }
  const std::vector<Violation>& items() const { return items_; }

 private:
  static constexpr std::size_t kept_max = 32;  // the first ones explain; the rest are counted
  std::vector<Violation> items_;
  std::vector<std::pair<std::string, std::uint64_t>> by_checker_;
  std::uint64_t count_ = 0;
};

}  // namespace lockstep::sim
