// The checker held to the reference (check/reference.hpp): on small
// generated histories, both modes, the two must give the same verdict, and
// in cluster mode, when the history conforms, the same least lateness to the
// millisecond. The reference is slow and plainly follows the numbered rules
// of docs/protocol.md; the checker is fast and clever; a disagreement is a
// bug in one of them, which RapidCheck shrinks to a minimal history and
// prints in the history file format (replay it with `lockstep check-history
// FILE` and `--reference`).
//
// Histories come from runs of the models (model/model.hpp, the cluster's
// model/cluster_model.hpp) with random delays, on a small grid (at most 4
// connections, 2 keys, 12 requests, leases and waits of a few ms), then
// often mutated: one answer changed, moved, dropped or heard twice. A simple run has
// closes by the tester and answers read late; a cluster run has sessions,
// retries on new connections, closes by the tester and by a node, `E`
// answers, and Expires and Timeouts applied late or early within the clock
// allowance; its clients acquire under an owner per request, or one owner
// each (as the fuzzer's do), and a test of its own asks try-locks only. A
// verdict of `unknown` (a budget ran out) is counted and must stay rare.
// The count of cases comes from RC_PARAMS (tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "check/checker.hpp"
#include "check/history.hpp"
#include "check/reference.hpp"
#include "tests/property/reference_runs.hpp"

namespace lockstep::testing {
namespace {

using history::EventKind;

// ---- the comparison ------------------------------------------------------------

std::string text_of(const history::History& h) {
  std::ostringstream out;
  history::write_history(out, h);
  return out.str();
}

struct Tally {
  std::uint64_t cases = 0, unknown = 0, violations = 0, checker_unknown = 0, disagreements = 0, coupled = 0;
};
Tally simple_tally, cluster_tally, short_tally, trylock_tally;

// LOCKSTEP_REFERENCE_SURVEY=1: count the disagreements and print each one
// (unshrunk) instead of failing at the first, and the counts every 100
// cases; for triage.
const bool survey = std::getenv("LOCKSTEP_REFERENCE_SURVEY") != nullptr;

// The checker splits a history by key and couples the keys only as far as
// windows of instants carry the sweep phase, the order of tokens and the
// order of a connection's requests (check/DESIGN.md, "What couples
// keys"): where it passes what the rules reject, each key read alone must
// pass (ReferenceOptions::per_key).
bool per_key_conforms(const history::History& h) {
  history::ReferenceOptions per_key;
  per_key.per_key = true;
  return history::check_reference(h, per_key).verdict == history::ReferenceResult::Verdict::conforms;
}

// The same for a cluster's least lateness: the checker's may lie below the
// rules' where the keys couple, no lower than each key's alone.
std::int64_t per_key_lateness(const history::History& h) {
  history::ReferenceOptions per_key;
  per_key.per_key = true;
  return history::check_reference(h, per_key).least_lateness_ms;
}

// A cluster's history has an explanation at some lateness: the reference
// finds one within the stated maximum, or finds one once the header states
// none (it does not search past a stated maximum, rule C14).
bool explained_at_any_lateness(const history::History& h, const history::ReferenceResult& reference) {
  if (reference.verdict == history::ReferenceResult::Verdict::conforms) return true;
  if (h.header.max_lateness_ms < 0) return false;
  auto unbounded = h;
  unbounded.header.max_lateness_ms = -1;
  return history::check_reference(unbounded).least_lateness_ms >= 0;
}

// `h` is a run of a model, `mutated` or not.
void compare(const history::History& h, bool mutated, Tally& tally) {
  RC_ASSERT(!history::reference_refusal(h));
  history::CheckOptions options;
  options.shrink = false;
  options.budget_states = 1'000'000;
  const auto checked = history::check_history(h, options);
  const auto reference = history::check_reference(h);
  ++tally.cases;
  if (survey && tally.cases % 100 == 0) {
    std::fprintf(stderr, "survey: %llu cases, %llu disagreements\n", static_cast<unsigned long long>(tally.cases),
                 static_cast<unsigned long long>(tally.disagreements));
  }
  using RV = history::ReferenceResult::Verdict;
  // A history with no response that has an explanation tests nothing: its
  // verdict is unknown, by rule (S17, C17); the reference then conforms.
  const bool silent =
      std::none_of(h.events.begin(), h.events.end(), [](const auto& e) { return e.kind == EventKind::recv; });
  if (silent && checked.verdict == history::Verdict::unknown && reference.verdict == RV::conforms) return;
  if (checked.verdict == history::Verdict::unknown || reference.verdict == RV::unknown) {
    ++tally.unknown;
    if (checked.verdict == history::Verdict::unknown) ++tally.checker_unknown;
    return;
  }
  const bool checker_conforms = checked.verdict == history::Verdict::conforms;
  const bool reference_conforms = reference.verdict == RV::conforms;
  const bool cluster = h.header.mode == history::Mode::cluster;
  if (!reference_conforms) ++tally.violations;
  std::string disagreement;
  if (!mutated && (cluster ? !explained_at_any_lateness(h, reference) : !reference_conforms)) {
    // A run of the model is a correct target's: the reference must find an
    // explanation (in a cluster, the lateness may pass the maximum).
    disagreement = fmt::format("the reference finds no explanation of a correct run ({})", reference.reason);
  } else if (checker_conforms && !reference_conforms && per_key_conforms(h)) {
    ++tally.coupled;  // what couples keys, which the checker reads in part (above)
  } else if (checker_conforms != reference_conforms) {
    disagreement = fmt::format("checker: {}, reference: {} ({})", checker_conforms ? "conforms" : "violation",
                               reference_conforms ? "conforms" : "violation", reference.reason);
  } else if (cluster && reference.least_lateness_ms >= 0 && checked.violations.empty() &&
             checked.lateness_ms != reference.least_lateness_ms &&
             !(checked.lateness_ms < reference.least_lateness_ms && per_key_lateness(h) <= checked.lateness_ms)) {
    disagreement = fmt::format("least lateness: checker {} ms, reference {} ms", checked.lateness_ms,
                               reference.least_lateness_ms);
  }
  if (disagreement.empty()) return;
  ++tally.disagreements;
  std::string findings;
  for (const auto& f : checked.violations) findings += "  checker: " + f.summary + "\n";
  const auto text = fmt::format("{}\n{}the history:\n{}", disagreement, findings, text_of(h));
  if (survey) {
    std::fprintf(stderr, "DISAGREEMENT %s\n", text.c_str());
    return;
  }
  RC_FAIL(text);
}

void report(const Tally& tally) {
  ::testing::Test::RecordProperty("cases", std::to_string(tally.cases));
  std::printf("cases %llu, unknown %llu (checker %llu), violations %llu (passed by the checker, coupling "
              "keys in part: %llu), disagreements %llu\n",
              static_cast<unsigned long long>(tally.cases), static_cast<unsigned long long>(tally.unknown),
              static_cast<unsigned long long>(tally.checker_unknown),
              static_cast<unsigned long long>(tally.violations), static_cast<unsigned long long>(tally.coupled),
              static_cast<unsigned long long>(tally.disagreements));
  // Unknowns (a budget ran out) must stay rare, and the mutations must
  // make violations often enough to test something.
  EXPECT_LE(tally.unknown * 1000, tally.cases) << "more than 0.1% of the cases were undecided";
  EXPECT_GE(tally.violations * 20, tally.cases) << "fewer than 5% of the cases were violations";
}

TEST(ReferenceDifferential, SimpleMode) {
  const bool ok = rc::check("simple mode: the checker agrees with the reference", [] {
    const auto steps = *gen_steps(StepRanges{10, 12, 9, 3000});
    const auto setting = *gen_simple_setting();
    const auto mutation = *gen_mutation();
    auto h = simple_run(steps, setting);
    mutate(h, mutation);
    compare(h, mutation.kind != 0, simple_tally);
  });
  EXPECT_TRUE(ok);
  report(simple_tally);
}

// A cluster run (try-locks only, or not), mutated or not, compared; of at
// most `steps_max` client steps.
void cluster_case(bool trylocks_only, Tally& tally, int steps_max = 20) {
  const auto steps = *gen_steps(StepRanges{steps_max, 4, 3, 1000});
  const auto setting = *gen_cluster_setting(trylocks_only);
  const auto mutation = *gen_mutation();
  auto h = cluster_run(steps, setting);
  mutate(h, mutation);
  compare(h, mutation.kind != 0, tally);
}

TEST(ReferenceDifferential, ClusterMode) {
  EXPECT_TRUE(rc::check("cluster mode: the checker agrees with the reference", [] { cluster_case(false, cluster_tally); }));
  report(cluster_tally);
}

// Short cluster runs (at most 8 client steps), which the reference decides
// in a few milliseconds: many of them, in the `history` label.
TEST(ReferenceDifferential, ClusterShort) {
  EXPECT_TRUE(rc::check("cluster mode, short runs: the checker agrees with the reference",
                        [] { cluster_case(false, short_tally, 8); }));
  report(short_tally);
}

// Try-locks only, the workload of most lock clients (pollers, "try then
// back off"): no queue, so what the checker must get right is which of an
// owner's try-locks each `A` and `T` answers, around Expires that may come
// late or early within the allowance.
TEST(ReferenceDifferential, ClusterTryLocks) {
  EXPECT_TRUE(rc::check("cluster mode, try-locks only: the checker agrees with the reference",
                        [] { cluster_case(true, trylock_tally); }));
  report(trylock_tally);
}

}  // namespace
}  // namespace lockstep::testing
