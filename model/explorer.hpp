// An exhaustive breadth-first explorer of the reference model (model.hpp)
// under the bounds of a TLC config, checking the properties of
// spec/LockServer.tla on every state and step. Its distinct states are the
// spec's (explorer_state.hpp says how a model state is viewed), so its count
// must equal TLC's on the same config: two independent checkers agreeing on
// the number of states is the evidence that the spec and the model describe
// one machine.
//
// The actions are the spec's: Acquire and Release requests (wire lines fed
// to Model::on_line), Close, and Tick (Model::advance to the next instant),
// enabled under the spec's bounds. Deterministic: actions are tried in one
// fixed order and the search is single-threaded, so the counter-example and
// every emitted behaviour are the same on every run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/explorer_config.hpp"
#include "model/explorer_state.hpp"

namespace lockstep {

struct ExplorerAction {
  StepKind kind = StepKind::tick;
  std::uint8_t conn = 0;
  std::uint8_t key = 0;
  std::uint8_t owner = 0;
  std::int64_t lease_ms = 0;
  std::int64_t wait_ms = 0;
  std::uint64_t token = 0;
  std::string line;  // the request's wire line (Acquire, Release)
};

struct ExploreResult {
  std::uint64_t distinct_states = 0;
  std::uint64_t states_generated = 0;  // the initial state and every successor computed
  int depth = 0;                       // as TLC counts it: states on the longest shortest path
  bool complete = true;                // false when stopped by a violation or the depth limit
  Coverage coverage;
  std::optional<PropertyFailure> failure;
  std::vector<std::uint32_t> counterexample;  // action indices from the initial state
};

class Explorer {
 public:
  // `bug` overrides the config's LifoHandoff/SweepFirst when given.
  explicit Explorer(SpecBounds bounds, std::optional<InjectedBug> bug = std::nullopt);
  Explorer(const Explorer&) = delete;  // names_ refers to bounds_
  Explorer& operator=(const Explorer&) = delete;

  // Explores every state reachable in at most `steps_max` steps (all when
  // absent); stops at the first property that fails, whose shortest
  // counter-example is then in the result.
  ExploreResult run(std::optional<int> steps_max = std::nullopt);

  // After run(): the distinct states in the order found (0 is the initial
  // state), and the first behaviour found reaching each, as action indices.
  std::size_t state_count() const { return parents_.size(); }
  std::vector<std::uint32_t> behaviour_to(std::uint32_t state) const;

  const std::vector<ExplorerAction>& actions() const { return actions_; }
  const SpecBounds& bounds() const { return bounds_; }

  // A behaviour replayed on a fresh model, as a readable trace, and as a
  // conformance vector whose expect lines are what the model answered.
  std::string trace_text(const std::vector<std::uint32_t>& behaviour) const;
  std::string vector_text(const std::vector<std::uint32_t>& behaviour,
                          std::string_view comment) const;

 private:
  struct Replayed {
    const ExplorerAction* action;  // null for the initial state
    TimeMs at;                     // the instant of the step
    Outputs sent;
    StateView view;
  };
  void replay(const std::vector<std::uint32_t>& behaviour,
              const std::function<void(const Replayed&)>& visit) const;
  bool enabled(const ExplorerAction& action, const StateView& view) const;
  // Applies the action to `model` (a copy of the state's); false when the
  // spec's bounds disable it (a request issuing a token beyond MaxToken).
  bool apply(const ExplorerAction& action, Model& model, std::uint32_t& open, Outputs& out) const;
  Model initial_model() const;

  // One run's search (explorer.cpp): its states, and the buffers reused for
  // every successor.
  struct Search;
  bool start_search(Search& search);
  void expand(std::uint32_t index, int steps, Search& search);
  bool add_successor(std::uint32_t index, std::uint32_t action, int steps, Search& search);

  struct Parent {
    std::uint32_t state;
    std::uint32_t action;
  };

  SpecBounds bounds_;
  InjectedBug bug_;
  NameTable names_;
  std::vector<ExplorerAction> actions_;
  std::vector<Parent> parents_;  // parents_[0] is the initial state's (unused)
};

}  // namespace lockstep
