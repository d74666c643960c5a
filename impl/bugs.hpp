// One catalogue of bugs that can be injected into the engine, so that every
// checker of the project (property tests, simulator, fuzzer, trace
// validation) can be shown to catch them, and so that a reader can see what
// breaks when a rule of the contract is bent. A correct engine runs with
// InjectedBug::none; each other value changes one rule, as its story says.
#pragma once

#include <optional>
#include <span>
#include <string_view>

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
};

struct BugDescription {
  InjectedBug bug;
  std::string_view name;
  std::string_view story;
};

// Every bug but `none`, in catalogue order.
std::span<const BugDescription> bug_catalogue();
std::optional<InjectedBug> bug_from_name(std::string_view name);
std::string_view bug_name(InjectedBug bug);

}  // namespace lockstep
