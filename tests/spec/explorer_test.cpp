// The exhaustive explorer of the reference model (model/explorer.hpp): it
// reads TLC configs, counts the states TLC counts on the same bounds (the
// figures below were produced by TLC 2.18 on spec/LockServer.tla), and
// catches the two bugs the model can inject, FIFO hand-off broken and the
// sweep run before due timeouts, with a shortest counter-example whose .vec
// the correct engine then fails. Behaviours it emits as vectors pass
// against the engine.
#include <gtest/gtest.h>

#include "model/explorer.hpp"
#include "model/runner.hpp"

namespace lockstep {
namespace {

// A small instance: one key, two owners, two connections, a sweep at 3 that
// can find waiters (lease 2, wait 3).
constexpr std::string_view small_config = R"(
SPECIFICATION Spec
\* a comment
CONSTANTS
  Keys = {"k1"}
  Owners = {"o1", "o2"}
  Conns = {c1, c2}            (* model values are read as names *)
  Leases = {2}
  Waits <- WaitValues
  SweepMs = 3
  MaxKeys = 1
  MaxWaitersPerKey = 2
  MaxWaiters = 2
  MaxTime = 4
  MaxToken = 3
  LifoHandoff = FALSE
  SweepFirst = FALSE
INVARIANTS TypeOK AtMostOneHolder
PROPERTIES FIFOHandoff
CHECK_DEADLOCK FALSE
)";
constexpr std::string_view small_module = "---- MODULE MCsmall ----\nEXTENDS LockServer\n"
                                          "WaitValues == {0, 3}\n====\n";

SpecBounds small_bounds() {
  auto parsed = parse_spec_config(small_config, small_module);
  if (auto* error = std::get_if<std::string>(&parsed)) throw std::runtime_error(*error);
  return std::get<SpecConfig>(parsed).bounds;
}

VectorVerdict run_text(const std::string& text, ServiceKind kind) {
  auto parsed = parse_vector(text);
  if (auto* error = std::get_if<VectorError>(&parsed)) {
    return VectorVerdict{VectorVerdict::Status::fail, error->line, "bad vector: " + error->message};
  }
  return run_vector(std::get<Vector>(parsed), kind);
}

TEST(ExplorerConfig, ReadsConstantsSectionsAndDefinitions) {
  auto parsed = parse_spec_config(small_config, small_module);
  ASSERT_TRUE(std::holds_alternative<SpecConfig>(parsed)) << std::get<std::string>(parsed);
  const auto& config = std::get<SpecConfig>(parsed);
  EXPECT_EQ(config.specification, "Spec");
  EXPECT_EQ(config.bounds.conns, (std::vector<std::string>{"c1", "c2"}));
  EXPECT_EQ(config.bounds.waits_ms, (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(config.invariants, (std::vector<std::string>{"TypeOK", "AtMostOneHolder"}));
  EXPECT_EQ(config.bounds.limits().max_wait_ms.value, 3);
  EXPECT_EQ(config.bounds.bug(), InjectedBug::none);
}

TEST(ExplorerConfig, RefusesMissingOrWrongConstants) {
  const auto error_of = [](std::string_view text) {
    auto parsed = parse_spec_config(text, "");
    return std::holds_alternative<std::string>(parsed) ? std::get<std::string>(parsed) : "";
  };
  EXPECT_NE(error_of("CONSTANTS Keys = {\"k1\"}").find("is not given"), std::string::npos);
  EXPECT_NE(error_of("CONSTANTS MaxTime = {1}").find("MaxTime"), std::string::npos);
  EXPECT_NE(error_of("CONSTANTS Waits <- Nowhere").find("not defined"), std::string::npos);
  EXPECT_NE(error_of("CONSTANTS Bogus = 1").find("not a constant"), std::string::npos);
}

// TLC 2.18, 2 workers, on small_config: 18,413 distinct states, 202,228
// generated, depth 13 (tests/spec/tlc_agrees.sh repeats this on every
// spec/MC*.cfg when TLA2TOOLS_JAR is set).
TEST(Explorer, CountsWhatTlcCounts) {
  Explorer explorer(small_bounds());
  const auto result = explorer.run();
  EXPECT_FALSE(result.failure.has_value()) << result.failure->property;
  EXPECT_TRUE(result.complete);
  EXPECT_EQ(result.distinct_states, 18413u);
  EXPECT_EQ(result.states_generated, 202228u);
  EXPECT_EQ(result.depth, 13);
  EXPECT_GT(result.coverage.sweep_handoffs, 0u);
  EXPECT_GT(result.coverage.release_handoffs, 0u);
}

TEST(Explorer, IsDeterministic) {
  Explorer first(small_bounds(), InjectedBug::lifo_handoff);
  Explorer second(small_bounds(), InjectedBug::lifo_handoff);
  const auto a = first.run(), b = second.run();
  EXPECT_EQ(a.counterexample, b.counterexample);
  EXPECT_EQ(first.trace_text(a.counterexample), second.trace_text(b.counterexample));
}

// A release handing the key to the newest waiter: two waiters queue, the
// holder releases, the second one gets the key. Four steps is the shortest.
TEST(Explorer, CatchesLifoHandoff) {
  Explorer explorer(small_bounds(), InjectedBug::lifo_handoff);
  const auto result = explorer.run();
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_EQ(result.failure->property, "FIFOHandoff");
  EXPECT_EQ(result.counterexample.size(), 4u);
  const auto vec = explorer.vector_text(result.counterexample, "lifo-handoff");
  // The counter-example records what the broken model said; the correct
  // engine disagrees, and so does the correct model.
  EXPECT_EQ(run_text(vec, ServiceKind::engine).status, VectorVerdict::Status::fail);
  EXPECT_EQ(run_text(vec, ServiceKind::model).status, VectorVerdict::Status::fail);
}

// The sweep before due timeouts: a waiter whose deadline is the sweep
// instant gets the expired key (A at its deadline) instead of its T.
TEST(Explorer, CatchesSweepBeforeTimeouts) {
  Explorer explorer(small_bounds(), InjectedBug::sweep_before_timeouts);
  const auto result = explorer.run();
  ASSERT_TRUE(result.failure.has_value());
  EXPECT_EQ(result.failure->property, "FIFOHandoff");
  EXPECT_EQ(result.counterexample.size(), 5u);
  const auto trace = explorer.trace_text(result.counterexample);
  EXPECT_NE(trace.find("time moves to 3"), std::string::npos) << trace;
  const auto vec = explorer.vector_text(result.counterexample, "sweep-before-timeouts");
  EXPECT_EQ(run_text(vec, ServiceKind::engine).status, VectorVerdict::Status::fail);
}

TEST(Explorer, ConfigSwitchesInjectTheBugs) {
  auto bounds = small_bounds();
  bounds.lifo_handoff = true;
  Explorer explorer(bounds);
  EXPECT_EQ(explorer.run().failure->property, "FIFOHandoff");
}

TEST(Explorer, EmittedBehavioursPassAgainstEngineAndModel) {
  Explorer explorer(small_bounds());
  const auto result = explorer.run(4);
  ASSERT_FALSE(result.failure.has_value());
  EXPECT_FALSE(result.complete);
  ASSERT_GT(explorer.state_count(), 100u);
  for (std::uint32_t state = 1; state < explorer.state_count(); ++state) {
    const auto vec = explorer.vector_text(explorer.behaviour_to(state), "emitted");
    for (const auto kind : {ServiceKind::engine, ServiceKind::model}) {
      const auto verdict = run_text(vec, kind);
      ASSERT_EQ(verdict.status, VectorVerdict::Status::ok)
          << "state " << state << " line " << verdict.line << ": " << verdict.message << "\n"
          << vec;
    }
  }
}

}  // namespace
}  // namespace lockstep
