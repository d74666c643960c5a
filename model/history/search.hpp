// A depth-first search over the states of a history problem, written once
// and generic over the problem (Porcupine's and Lowe's linearizability
// searches, with the problem deciding what a step is). It remembers every
// state it has expanded, by a 128-bit fingerprint, so a state reached along
// two orders is explored once; it stops at the first final state, when no
// state is left (no explanation exists), or when the budget of expansions
// is spent (the answer is then unknown, never a pass).
//
// A Problem provides:
//   using State = ...;
//   State initial() const;
//   bool is_final(const State&) const;
//   void successors(const State&, std::vector<State>& out) const;  // best first
//   Fingerprint fingerprint(const State&) const;
//   std::uint64_t progress(const State&) const;  // how far a state got, for reports
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

namespace lockstep::history {

struct Fingerprint {
  std::uint64_t high = 0;
  std::uint64_t low = 0;
  friend bool operator==(const Fingerprint&, const Fingerprint&) = default;
};

struct FingerprintHash {
  std::size_t operator()(const Fingerprint& print) const noexcept { return print.high ^ (print.low * 31); }
};

// Two independent 64-bit mixes of the same words; a collision of both
// (which could hide a state, and so an explanation) is about 2^-128 per pair.
class FingerprintBuilder {
 public:
  void add(std::uint64_t word) {
    high_ = mix(high_ ^ word, 0x9e3779b97f4a7c15ULL);
    low_ = mix(low_ + word, 0xc2b2ae3d27d4eb4fULL);
  }
  Fingerprint finish() const { return Fingerprint{high_, low_}; }

 private:
  static std::uint64_t mix(std::uint64_t x, std::uint64_t salt) {
    x = (x ^ (x >> 31)) * (0xbf58476d1ce4e5b9ULL ^ salt);
    x = (x ^ (x >> 29)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 32);
  }
  std::uint64_t high_ = 0x243f6a8885a308d3ULL;
  std::uint64_t low_ = 0x13198a2e03707344ULL;
};

enum class SearchOutcome { found, exhausted, budget_spent };

template <typename State>
struct SearchResult {
  SearchOutcome outcome = SearchOutcome::exhausted;
  std::optional<State> solution;  // when found
  std::optional<State> deepest;   // the state that got furthest, for reports
  std::uint64_t expanded = 0;
};

template <typename Problem>
SearchResult<typename Problem::State> search(const Problem& problem, std::uint64_t budget) {
  using State = typename Problem::State;
  SearchResult<State> result;
  std::unordered_set<Fingerprint, FingerprintHash> seen;
  std::vector<State> stack;
  std::vector<State> next;
  stack.push_back(problem.initial());
  std::uint64_t deepest_progress = 0;
  while (!stack.empty()) {
    State state = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(problem.fingerprint(state)).second) continue;
    if (result.expanded == budget) {
      result.outcome = SearchOutcome::budget_spent;
      return result;
    }
    ++result.expanded;
    const auto progress = problem.progress(state);
    if (!result.deepest || progress > deepest_progress) {
      deepest_progress = progress;
      result.deepest = state;
    }
    if (problem.is_final(state)) {
      result.outcome = SearchOutcome::found;
      result.solution = std::move(state);
      return result;
    }
    next.clear();
    problem.successors(state, next);
    // Best first: the first successor is pushed last, so it is expanded next.
    for (auto it = next.rbegin(); it != next.rend(); ++it) stack.push_back(std::move(*it));
  }
  result.outcome = SearchOutcome::exhausted;
  return result;
}

}  // namespace lockstep::history
