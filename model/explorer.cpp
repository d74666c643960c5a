#include "model/explorer.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "model/state_store.hpp"

namespace lockstep {

namespace {

// Every action the spec's Next can take, in one fixed order: Acquire for each
// connection, key, owner, lease and wait; Release for each connection, key
// and token the bounds allow; Close for each connection; Tick.
std::vector<ExplorerAction> all_actions(const SpecBounds& b) {
  std::vector<ExplorerAction> actions;
  for (std::uint8_t c = 0; c < b.conns.size(); ++c) {
    for (std::uint8_t k = 0; k < b.keys.size(); ++k) {
      for (std::uint8_t o = 0; o < b.owners.size(); ++o) {
        for (const auto lease : b.leases_ms) {
          for (const auto wait : b.waits_ms) {
            actions.push_back({StepKind::acquire, c, k, o, lease, wait, 0,
                               fmt::format("A {} {} {} {}", b.keys[k], b.owners[o], lease, wait)});
          }
        }
      }
    }
  }
  for (std::uint8_t c = 0; c < b.conns.size(); ++c) {
    for (std::uint8_t k = 0; k < b.keys.size(); ++k) {
      for (std::uint64_t t = 1; t < b.token_bound(); ++t) {
        actions.push_back({StepKind::release, c, k, 0, 0, 0, t, fmt::format("R {} {}", b.keys[k], t)});
      }
    }
  }
  for (std::uint8_t c = 0; c < b.conns.size(); ++c) {
    actions.push_back({StepKind::close, c, 0, 0, 0, 0, 0, {}});
  }
  actions.push_back({StepKind::tick, 0, 0, 0, 0, 0, 0, {}});
  return actions;
}

std::uint32_t all_open(const SpecBounds& b) { return (std::uint32_t{1} << b.conns.size()) - 1; }

// A response as a vector's expect line writes it: tokens by name, `$t<value>`.
std::string expect_text(const Response& r) {
  switch (r.kind) {
    case ResponseKind::granted: return fmt::format("A $t{} {} {}", r.token.value, r.owner, r.key);
    case ResponseKind::timed_out: return fmt::format("T {} {}", r.owner, r.key);
    case ResponseKind::busy: return fmt::format("B {} {}", r.owner, r.key);
    case ResponseKind::released: return fmt::format("R $t{} {}", r.token.value, r.key);
    case ResponseKind::not_held: return fmt::format("N $t{} {}", r.token.value, r.key);
    case ResponseKind::error: break;
  }
  return "E";
}

std::string action_text(const ExplorerAction& a, const SpecBounds& b, TimeMs at) {
  switch (a.kind) {
    case StepKind::acquire:
    case StepKind::release: return fmt::format("at {} {} sends {}", at.value, b.conns[a.conn], a.line);
    case StepKind::close: return fmt::format("at {} {} closes", at.value, b.conns[a.conn]);
    case StepKind::tick: break;
  }
  return fmt::format("time moves to {}", at.value);
}

// Ends the search at a property that fails, with the behaviour reaching it.
void stop_search(ExploreResult& result, PropertyFailure failure, std::vector<std::uint32_t> behaviour) {
  result.failure = std::move(failure);
  result.counterexample = std::move(behaviour);
  result.complete = false;
}

}  // namespace

Explorer::Explorer(SpecBounds bounds, std::optional<InjectedBug> bug)
    : bounds_(std::move(bounds)),
      bug_(bug.value_or(bounds_.bug())),
      names_(bounds_),
      actions_(all_actions(bounds_)) {
  // apply() calls the model's typed requests instead of on_line: each line
  // must be one the model reads (no E), so that the two are the same step.
  for (const auto& a : actions_) {
    if (a.kind != StepKind::acquire && a.kind != StepKind::release) continue;
    Model model = initial_model();
    Outputs out;
    model.on_line(connection_of(a.conn), a.line, TimeMs{0}, out);
    if (!out.empty() && out.front().response.kind == ResponseKind::error) {
      throw std::invalid_argument(fmt::format("the model does not read \"{}\": {}", a.line,
                                              out.front().response.reason));
    }
  }
}

Model Explorer::initial_model() const { return Model(bounds_.limits(), Token{1}, bug_); }

bool Explorer::enabled(const ExplorerAction& a, const StateView& view) const {
  switch (a.kind) {
    case StepKind::acquire: return view.is_open(a.conn) && view.clock_ms + a.wait_ms <= bounds_.max_time_ms;
    case StepKind::release: return view.is_open(a.conn) && a.token < view.next_token;
    case StepKind::close: return view.is_open(a.conn);
    case StepKind::tick: return view.clock_ms < bounds_.max_time_ms;
  }
  return false;
}

bool Explorer::apply(const ExplorerAction& a, Model& model, std::uint32_t& open, Outputs& out) const {
  const TimeMs now = model.now();
  switch (a.kind) {
    case StepKind::acquire:
      // What on_line does with a.line, without reading it again (the
      // constructor checked that the model reads each line so).
      model.on_acquire(connection_of(a.conn), bounds_.keys[a.key], bounds_.owners[a.owner],
                       DurationMs{a.lease_ms}, DurationMs{a.wait_ms}, now, out);
      return model.next_token().value <= bounds_.max_token + 1;
    case StepKind::release:
      model.on_release(connection_of(a.conn), bounds_.keys[a.key], Token{a.token}, now, out);
      return model.next_token().value <= bounds_.max_token + 1;
    case StepKind::close:
      model.on_close(connection_of(a.conn), now, out);
      open &= ~(std::uint32_t{1} << a.conn);
      return true;
    case StepKind::tick:
      model.advance(TimeMs{now.value + 1}, out);
      return true;
  }
  return false;
}

struct Explorer::Search {
  Search(ExploreResult& into, Model base_model, Model scratch_model)
      : result(into), base(std::move(base_model)), scratch(std::move(scratch_model)) {}

  ExploreResult& result;
  // Every distinct state as its encoded view, numbered in the order found:
  // the seen-set, and (breadth-first) the frontier too, expanded in number
  // order. A state's model is rebuilt from its view when it is expanded.
  StateStore states;
  std::string bytes;
  StateView before;
  // Reused for every successor: assigning a model to it reuses its storage.
  Model base;
  Model scratch;
  StateView after;
  Outputs out;
};

ExploreResult Explorer::run(std::optional<int> steps_max) {
  ExploreResult result;
  parents_.clear();
  Search search(result, initial_model(), initial_model());
  if (!start_search(search)) return result;

  int steps = 0;                  // of the states numbered below level_end
  std::uint32_t level_end = 1;    // the first state one step further
  for (std::uint32_t index = 0; index < search.states.size() && !result.failure; ++index) {
    if (index == level_end) {
      ++steps;
      level_end = search.states.size();
    }
    if (steps_max && steps >= *steps_max) {
      result.complete = false;
      break;
    }
    expand(index, steps, search);
  }
  result.distinct_states = parents_.size();
  return result;
}

// Numbers the initial state; false when it fails a property (the result
// then says which).
bool Explorer::start_search(Search& search) {
  const Model init = initial_model();
  view_of(init, all_open(bounds_), {}, names_, search.before);
  encode(search.before, search.bytes);
  search.states.insert(search.bytes);
  parents_.push_back({0, 0});
  search.result.states_generated = 1;
  search.result.depth = 1;
  if (auto failure = check_state(search.before, bounds_)) {
    stop_search(search.result, *failure, {});
    search.result.distinct_states = 1;
    return false;
  }
  return true;
}

// Tries every action enabled in state `index` (`steps` steps from the
// initial state), until a property fails.
void Explorer::expand(std::uint32_t index, int steps, Search& search) {
  decode(search.states.at(index), bounds_.sweep_ms, search.before);
  search.base = model_of(search.before, bounds_, bug_);
  bool scratch_is_base = false;
  for (std::uint32_t a = 0; a < actions_.size(); ++a) {
    const auto& action = actions_[a];
    if (!enabled(action, search.before)) continue;
    if (!scratch_is_base) search.scratch = search.base;
    scratch_is_base = false;
    std::uint32_t open = search.before.open;
    search.out.clear();
    if (!apply(action, search.scratch, open, search.out)) continue;
    ++search.result.states_generated;
    view_of(search.scratch, open, search.out, names_, search.after);
    // A step that changed nothing of the model's view (an N, a B, a T at
    // once) left a model that behaves as the state's does: the next
    // action starts from it without a copy.
    scratch_is_base = search.after.same_model_as(search.before);
    if (!add_successor(index, a, steps, search)) break;
  }
}

// Checks the step of action `a` from state `index` to search.after, and
// numbers search.after if it was not seen; false when a property fails.
bool Explorer::add_successor(std::uint32_t index, std::uint32_t a, int steps, Search& search) {
  const StepKind kind = actions_[a].kind;
  count_step(search.before, search.after, kind, bounds_, search.result.coverage);
  if (auto failure = check_step(search.before, search.after, kind, bounds_)) {
    auto behaviour = behaviour_to(index);
    behaviour.push_back(a);
    stop_search(search.result, *failure, std::move(behaviour));
    return false;
  }
  encode(search.after, search.bytes);
  const auto [found, fresh] = search.states.insert(search.bytes);
  if (!fresh) return true;
  parents_.push_back({index, a});
  search.result.depth = std::max(search.result.depth, steps + 2);
  if (auto failure = check_state(search.after, bounds_)) {
    stop_search(search.result, *failure, behaviour_to(found));
    return false;
  }
  return true;
}

std::vector<std::uint32_t> Explorer::behaviour_to(std::uint32_t state) const {
  std::vector<std::uint32_t> behaviour;
  for (auto s = state; s != 0; s = parents_[s].state) behaviour.push_back(parents_[s].action);
  std::reverse(behaviour.begin(), behaviour.end());
  return behaviour;
}

void Explorer::replay(const std::vector<std::uint32_t>& behaviour,
                      const std::function<void(const Replayed&)>& visit) const {
  Model model = initial_model();
  std::uint32_t open = all_open(bounds_);
  Replayed step{nullptr, TimeMs{0}, {}, {}};
  view_of(model, open, {}, names_, step.view);
  visit(step);
  for (const auto a : behaviour) {
    step.action = &actions_.at(a);
    step.sent.clear();
    apply(*step.action, model, open, step.sent);
    step.at = model.now();
    view_of(model, open, step.sent, names_, step.view);
    visit(step);
  }
}

std::string Explorer::trace_text(const std::vector<std::uint32_t>& behaviour) const {
  std::string text;
  int number = 0;
  replay(behaviour, [&](const Replayed& step) {
    if (step.action == nullptr) {
      text += fmt::format("  {:>3}. initial state\n", number++);
    } else {
      text += fmt::format("  {:>3}. {}\n", number++, action_text(*step.action, bounds_, step.at));
      for (const auto& o : step.sent) {
        text += fmt::format("         -> {} gets {}\n", bounds_.conns[o.connection.value - 1],
                            format_response(o.response));
      }
    }
    text += fmt::format("         {}\n", describe(step.view, bounds_));
  });
  return text;
}

std::string Explorer::vector_text(const std::vector<std::uint32_t>& behaviour,
                                  std::string_view comment) const {
  const auto limits = bounds_.limits();
  std::string text = fmt::format("# {}\n", comment);
  text += fmt::format("config max_keys={} max_waiters_per_key={} max_waiters={} sweep_ms={} "
                      "max_lease_ms={} max_wait_ms={}\n",
                      limits.max_keys, limits.max_waiters_per_key, limits.max_waiters,
                      limits.sweep_ms.value, limits.max_lease_ms.value, limits.max_wait_ms.value);
  // A vector binds a token's name at the end of the instant it was granted
  // (docs/protocol.md, "Conformance vectors"), so a release at that same instant carries the token's
  // value instead: the model and the engine both issue tokens from 1.
  std::vector<std::uint64_t> named;    // tokens granted at earlier instants
  std::vector<std::uint64_t> granted;  // tokens granted at the current instant
  bool literal = false;
  TimeMs last{0};
  // Tokens granted at one instant come out in the order issued (a sweep's
  // hand-offs among them): an `order` line says so, or a vector would
  // accept them in any order.
  const auto close_instant = [&] {
    if (granted.size() >= 2) {
      text += "order";
      for (const auto token : granted) text += fmt::format(" $t{}", token);
      text += '\n';
    }
    named.insert(named.end(), granted.begin(), granted.end());
    granted.clear();
  };
  replay(behaviour, [&](const Replayed& step) {
    if (step.action == nullptr) return;
    if (step.at != last) close_instant();
    const auto& a = *step.action;
    const auto& conn = bounds_.conns[a.conn];
    if (a.kind == StepKind::acquire) {
      text += fmt::format("at {} {} {}\n", step.at.value, conn, a.line);
    } else if (a.kind == StepKind::release) {
      const bool by_name = std::find(named.begin(), named.end(), a.token) != named.end();
      literal = literal || !by_name;
      text += fmt::format("at {} {} R {} {}{}\n", step.at.value, conn, bounds_.keys[a.key],
                          by_name ? "$t" : "", a.token);
    } else if (a.kind == StepKind::close) {
      text += fmt::format("close {} {}\n", step.at.value, conn);
    }
    for (const auto& o : step.sent) {
      text += fmt::format("expect {} {} {}\n", step.at.value, bounds_.conns[o.connection.value - 1],
                          expect_text(o.response));
      if (o.response.kind == ResponseKind::granted) granted.push_back(o.response.token.value);
    }
    last = step.at;
  });
  close_instant();
  text += fmt::format("end {}\n", last.value);
  if (literal) {
    text.insert(text.find('\n') + 1,
                "# A token released at the instant it was granted is written as its value:\n"
                "# the service must issue tokens 1, 2, ... as the model does.\n");
  }
  return text;
}

}  // namespace lockstep
