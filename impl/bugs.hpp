// One catalogue of bugs that can be injected into the engine, so that every
// checker of the project (property tests, simulator, fuzzer, trace
// validation) can be shown to catch them, and so that a reader can see what
// breaks when a rule of the contract is bent. A correct engine runs with
// InjectedBug::none; each other value changes one rule, as its story says.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "impl/bug_catalogue.hpp"

namespace lockstep {

enum class InjectedBug {
  none,
  lifo_handoff,
  token_per_key,
  early_expiry,
  no_timeout,
  same_owner_renewal,
  stale_release,
  busy_early,
  sweep_drops_waiters,
  requests_before_timeouts,
  sweep_before_timeouts,
  double_answer,
  sweep_reverse_token_order,
  sweep_by_key_name,
  sweep_by_expiry,
};

// How a tester outside the server can see a bug: in a real-time history
// (the fuzzer), or only by exact replay on the test clock, when the bug
// reorders what happens within one instant.
enum class BugReach { real_time, exact_replay };

// Each entry also says how its tests must see it, so that a bug added here
// is tested by every layer without a test list to edit: `symptom` is what
// one of the simulator's clients'-side checkers says when it reports the
// bug (the protocol rules of model/client_checker, or sim/simple/client_edge), and
// `reach` which black-box test must fail.
struct BugDescription {
  InjectedBug bug;
  std::string_view name;
  std::string_view story;
  std::string_view symptom;
  BugReach reach;
};

// Every bug but `none`, in catalogue order.
std::span<const BugDescription> bug_catalogue();
// The bug `name` names ("none": the correct service), if any; a bug's name.
inline std::optional<InjectedBug> bug_from_name(std::string_view name) { return bug_of_name(bug_catalogue(), name); }
inline std::string_view bug_name(InjectedBug bug) { return name_of_bug(bug_catalogue(), bug); }

}  // namespace lockstep
