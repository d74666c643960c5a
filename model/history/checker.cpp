// The checker's outer layer: builds the inputs, checks what belongs to no
// key (malformed lines and their `E`, responses that are not responses,
// token uniqueness and order), searches each key, and then asks whether one
// sweep phase per incarnation explains all its keys at once.
#include "model/history/checker.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "model/history/build.hpp"
#include "model/history/story.hpp"

namespace lockstep::history {

namespace {

std::string at_text(std::int64_t us, std::int64_t origin_us) { return fmt::format("+{:.3f} ms", (us - origin_us) / 1000.0); }

// Malformed lines and their `E` answers, per connection (they name no key).
void check_errors(const Built& built, std::int64_t tolerance_ms, CheckResult& result) {
  for (const auto& conn : built.conns) {
    const auto origin = built.incarnation_start_us[conn.incarnation];
    std::vector<const SentLine*> malformed;
    for (const auto& sent : conn.sent) {
      if (sent.malformed) malformed.push_back(&sent);
    }
    result.malformed += malformed.size();
    std::vector<const ReceivedLine*> errors;
    for (const auto& received : conn.received) {
      if (!received.parsed) {
        result.violations.push_back(Finding{"responses", "", conn.incarnation,
                                            fmt::format("connection {} received `{}` at {}, which is not a response",
                                                        conn.id, received.line, at_text(received.received_us, origin)),
                                            {}, received.received_us});
      } else if (received.response.kind == ResponseKind::error) {
        errors.push_back(&received);
      }
    }
    for (std::size_t i = 0; i < errors.size(); ++i) {
      if (i >= malformed.size()) {
        result.violations.push_back(Finding{
            "errors", "", conn.incarnation,
            fmt::format("connection {} received `{}` at {}, but only {} malformed line(s) were sent on it", conn.id,
                        errors[i]->line, at_text(errors[i]->received_us, origin), malformed.size()),
            {}, errors[i]->received_us});
        break;
      }
      if (errors[i]->received_us < malformed[i]->sent_us) {
        result.violations.push_back(Finding{
            "errors", "", conn.incarnation,
            fmt::format("connection {}: `E` number {} arrived at {}, before malformed line number {} was sent at {}",
                        conn.id, i + 1, at_text(errors[i]->received_us, origin), i + 1,
                        at_text(malformed[i]->sent_us, origin)),
            {}, errors[i]->received_us});
        break;
      }
    }
    for (std::size_t i = errors.size(); i < malformed.size(); ++i) {
      const auto latest = malformed[i]->latest_ms;
      if (latest < unbounded_ms && (latest + 1 + tolerance_ms) * 1000 <= conn.end_us) {
        result.violations.push_back(Finding{
            "errors", "", conn.incarnation,
            fmt::format("connection {}: the malformed line `{}` sent at {} was never answered `E`", conn.id,
                        malformed[i]->line.substr(0, 80), at_text(malformed[i]->sent_us, origin)),
            {}, malformed[i]->sent_us});
        break;
      }
    }
  }
}

// Tokens are unique, and increase in the order issued: a grant certainly
// issued before another (its latest instant before the other's earliest)
// must carry the smaller token.
void check_tokens(const Built& built, CheckResult& result) {
  std::vector<const GrantSeen*> grants;
  for (const auto& grant : built.grants) grants.push_back(&grant);
  std::stable_sort(grants.begin(), grants.end(), [](const GrantSeen* a, const GrantSeen* b) { return a->token < b->token; });
  const auto origin = built.incarnation_start_us.front();
  for (std::size_t i = 1; i < grants.size(); ++i) {
    if (grants[i]->token == grants[i - 1]->token) {
      result.violations.push_back(Finding{
          "tokens", grants[i]->key, 0,
          fmt::format("token {} was granted twice: key `{}` on connection {} at {} and key `{}` on connection {} at {}",
                      grants[i]->token, grants[i - 1]->key, grants[i - 1]->conn, at_text(grants[i - 1]->received_us, origin),
                      grants[i]->key, grants[i]->conn, at_text(grants[i]->received_us, origin)),
          {}, grants[i]->received_us});
      return;
    }
  }
  const GrantSeen* latest_start = nullptr;
  for (const auto* grant : grants) {
    const auto issued_by_ms = grant->received_us / 1000;
    if (latest_start != nullptr && issued_by_ms < latest_start->issued_from_ms) {
      result.violations.push_back(Finding{
          "tokens", grant->key, 0,
          fmt::format("token {} (key `{}`, arrived at {}) was issued before token {} (key `{}`, asked for no earlier "
                      "than {}): tokens must increase in the order issued",
                      grant->token, grant->key, at_text(grant->received_us, origin), latest_start->token,
                      latest_start->key, at_text(latest_start->issued_from_ms * 1000, origin)),
          {}, grant->received_us});
      return;
    }
    if (latest_start == nullptr || grant->issued_from_ms > latest_start->issued_from_ms) latest_start = grant;
  }
}

}  // namespace

CheckResult check_history(const History& history, const CheckOptions& options) {
  CheckResult result;
  const Built built = build_inputs(history);
  const Limits& limits = history.header.limits;
  result.incarnation_start_us = built.incarnation_start_us;
  result.connections = built.conns.size();
  for (const auto& conn : built.conns) {
    for (const auto& sent : conn.sent) result.requests += sent.malformed ? 0 : 1;
    result.responses += conn.received.size();
  }
  check_errors(built, history.header.tolerance_ms, result);
  check_tokens(built, result);
  const Oracles oracles = make_oracles(built);

  std::set<std::string> names;
  const auto incarnations = built.incarnation_start_us.size();
  std::vector<PhaseSet> shared(incarnations, PhaseSet(limits.sweep_ms.value));
  // Per incarnation, the keys whose explanation used a narrower phase set.
  std::vector<std::vector<std::pair<const KeyInput*, PhaseSet>>> narrowed(incarnations);
  std::uint64_t budget = options.budget_states;
  std::size_t keys_left = built.keys.size();
  for (const auto& [where, input] : built.keys) {
    names.insert(input.key);
    const KeyProblem problem(input, key_oracles(oracles, limits, where.first, input),
                             PhaseSet(limits.sweep_ms.value));
    // Each key gets a fair share of what is left, so that one key whose
    // search explodes leaves the others decided.
    const auto share = std::max<std::uint64_t>(budget / std::max<std::size_t>(1, keys_left), std::min<std::uint64_t>(budget, 100'000));
    --keys_left;
    const auto found = search(problem, share);
    budget -= std::min(budget, found.expanded);
    result.states_expanded += found.expanded;
    if (input.key == options.explain_key) {
      const auto origin = built.incarnation_start_us[where.first];
      const auto& shown = found.solution ? *found.solution : *found.deepest;
      result.explain_lines.push_back(fmt::format("explanation of key `{}` (incarnation {}){}:", input.key, where.first + 1,
                                                 found.solution ? "" : ", as far as it goes"));
      for (const auto& step : KeyProblem::steps_of(shown)) {
        const char* what = step.what == 'h' ? "handles" : step.what == 'a' ? "answers" : step.what == 't' ? "times out"
                           : step.what == 's' ? "sweeps" : "closes";
        result.explain_lines.push_back(fmt::format(
            "  {:>14}  {:<9} {:<32} {}", fmt::format("+{:.3f} ms", (step.instant_ms * 1000 - origin) / 1000.0), what,
            step.request >= 0 ? input.requests[static_cast<std::size_t>(step.request)].line : "",
            step.observation >= 0 ? "-> " + input.observations[static_cast<std::size_t>(step.observation)].line : ""));
      }
    }
    if (found.outcome == SearchOutcome::budget_spent) {
      const auto& deepest = *found.deepest;
      result.unknown.push_back(fmt::format(
          "key `{}`: the search budget ran out after {} states, with {} of {} responses explained (up to +{:.3f} ms)",
          input.key, found.expanded, deepest.explained, input.observations.size(),
          (deepest.now_ms * 1000 - built.incarnation_start_us[where.first]) / 1000.0));
      if (deepest.observed_mark < input.observations.size()) {
        const auto& next = input.observations[deepest.observed_mark];
        result.unknown.back() += fmt::format("; next to explain: `{}` on c{} at +{:.3f} ms; {}", next.line,
                                             input.conns[next.conn].id,
                                             (next.received_us - built.incarnation_start_us[where.first]) / 1000.0,
                                             describe_state(input, deepest, built.incarnation_start_us[where.first]));
      }
      continue;
    }
    if (found.outcome == SearchOutcome::exhausted) {
      result.violations.push_back(key_finding(history, where.first, input, options.shrink));
      continue;
    }
    result.explanations.push_back(KeyExplanation{input.key, where.first, KeyProblem::steps_of(*found.solution)});
    const auto& phases = found.solution->phases;
    if (phases.size() < limits.sweep_ms.value) narrowed[where.first].emplace_back(&input, phases);
    shared[where.first].intersect(phases);
  }
  result.keys = names.size();
  // One phase for all keys of an incarnation. When the first explanations
  // found disagree, each narrowed key's full set of possible phases is
  // collected (search again outside what is known) before concluding.
  for (std::size_t at = 0; at < incarnations; ++at) {
    if (!shared[at].empty()) continue;
    PhaseSet common(limits.sweep_ms.value);
    bool decided = true;
    std::string first_conflict;
    for (const auto& [input, known] : narrowed[at]) {
      PhaseSet possible = known;
      for (int round = 0; round < 64; ++round) {
        PhaseSet rest(limits.sweep_ms.value);
        rest.subtract_set(possible);
        if (rest.empty()) break;
        const KeyProblem again(*input, key_oracles(oracles, limits, static_cast<std::uint32_t>(at), *input),
                               rest);
        const auto found = search(again, budget);
        budget -= std::min(budget, found.expanded);
        result.states_expanded += found.expanded;
        if (found.outcome == SearchOutcome::exhausted) break;
        if (found.outcome == SearchOutcome::budget_spent || round == 63) {
          decided = false;
          break;
        }
        // Union: what the new explanation allows, added to what was known.
        PhaseSet outside(limits.sweep_ms.value);
        outside.subtract_set(found.solution->phases);
        outside.subtract_set(possible);
        PhaseSet merged(limits.sweep_ms.value);
        merged.subtract_set(outside);
        possible = merged;
      }
      common.intersect(possible);
      if (common.empty() && first_conflict.empty()) first_conflict = input->key;
    }
    if (!decided) {
      result.unknown.push_back(fmt::format("incarnation {}: could not decide one sweep phase for all keys", at + 1));
    } else if (common.empty()) {
      result.violations.push_back(Finding{
          "phase", first_conflict, static_cast<std::uint32_t>(at),
          fmt::format("no single sweep phase explains every key: key `{}` needs sweeps that the keys before it rule out",
                      first_conflict),
          {}, built.incarnation_start_us[at]});
    }
    shared[at] = common;
  }
  result.phases = shared;
  std::stable_sort(result.violations.begin(), result.violations.end(),
                   [](const Finding& a, const Finding& b) { return a.at_us < b.at_us; });
  if (!result.violations.empty()) {
    result.verdict = Verdict::violation;
  } else if (!result.unknown.empty()) {
    result.verdict = Verdict::unknown;
  }
  return result;
}

std::vector<std::string> summary_lines(const CheckResult& result) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("history: {} requests ({} malformed), {} responses, {} keys, {} connections, {} incarnation(s)",
                              result.requests + result.malformed, result.malformed, result.responses, result.keys,
                              result.connections, result.incarnation_start_us.size()));
  lines.push_back(fmt::format("search: {} states", result.states_expanded));
  for (std::size_t at = 0; at < result.phases.size(); ++at) {
    const auto& phases = result.phases[at];
    if (phases.empty()) continue;
    if (phases.size() == phases.period()) {
      lines.push_back(fmt::format("sweep phase (incarnation {}): not constrained", at + 1));
    } else {
      const auto& first = phases.ranges().front();
      lines.push_back(fmt::format("sweep phase (incarnation {}): {} of {} ms possible, first {}..{} ms", at + 1,
                                  phases.size(), phases.period(), first.first, first.second));
    }
  }
  for (const auto& why : result.unknown) lines.push_back("unknown: " + why);
  for (const auto& finding : result.violations) lines.push_back(fmt::format("violation [{}]: {}", finding.check, finding.summary));
  switch (result.verdict) {
    case Verdict::conforms: lines.push_back("verdict: conforms"); break;
    case Verdict::violation: lines.push_back("verdict: violation"); break;
    case Verdict::unknown: lines.push_back("verdict: unknown (the search budget ran out; this is not a pass)"); break;
  }
  lines.push_back(fmt::format("violations: {}", result.violations.size()));
  return lines;
}

int exit_code(const CheckResult& result) {
  switch (result.verdict) {
    case Verdict::conforms: return 0;
    case Verdict::violation: return 1;
    case Verdict::unknown: return 2;
  }
  return 2;
}

}  // namespace lockstep::history
