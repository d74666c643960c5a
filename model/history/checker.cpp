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
#include "model/history/frontier.hpp"
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
  // Per incarnation, the phases every key decided so far allows: each key is
  // searched within them, so its explanations narrow them exactly.
  std::vector<PhaseSet> shared(incarnations, PhaseSet(limits.sweep_ms.value));
  std::uint64_t budget = options.budget_states;
  for (const auto& [where, input] : built.keys) {
    names.insert(input.key);
    const auto origin = built.incarnation_start_us[where.first];
    const KeyOracles oracles_of_key = key_oracles(oracles, limits, where.first, input);
    KeyCheckOptions key_options;
    key_options.work_max = budget;
    key_options.origin_us = origin;
    key_options.record_steps = options.record_steps || input.key == options.explain_key;
    auto verdict = check_key(input, oracles_of_key, shared[where.first], key_options);
    budget -= std::min(budget, verdict.work);
    result.states_expanded += verdict.work;
    result.frontier_peak = std::max(result.frontier_peak, verdict.frontier_peak);
    if (input.key == options.explain_key) {
      result.explain_lines.push_back(fmt::format("explanation of key `{}` (incarnation {}){}:", input.key, where.first + 1,
                                                 verdict.outcome == KeyOutcome::explained ? "" : ", as far as it goes"));
      for (const auto& step : verdict.steps) {
        const char* what = step.what == 'h' ? "handles" : step.what == 'a' ? "answers" : step.what == 't' ? "times out"
                           : step.what == 's' ? "sweeps" : "closes";
        result.explain_lines.push_back(fmt::format(
            "  {:>14}  {:<9} {:<32} {}", fmt::format("+{:.3f} ms", (step.instant_ms * 1000 - origin) / 1000.0), what,
            step.request >= 0 ? input.requests[static_cast<std::size_t>(step.request)].line : std::string_view(),
            step.observation >= 0 ? "-> " + std::string(input.observations[static_cast<std::size_t>(step.observation)].line) : ""));
      }
    }
    if (verdict.outcome == KeyOutcome::undecided) {
      std::string why = fmt::format("key `{}`: undecided ({}), with {} of {} responses explained up to +{:.3f} ms", input.key,
                                    verdict.why, verdict.explained, input.observations.size(),
                                    (verdict.last_alive_ms * 1000 - origin) / 1000.0);
      if (verdict.unexplained >= 0) {
        const auto& next = input.observations[static_cast<std::size_t>(verdict.unexplained)];
        why += fmt::format("; next to explain: `{}` on c{} at +{:.3f} ms; {}", next.line, input.conns[next.conn].id,
                           (next.received_us - origin) / 1000.0, verdict.state);
      }
      result.unknown.push_back(std::move(why));
      continue;
    }
    if (verdict.outcome == KeyOutcome::unexplained) {
      // Searched within the phases the keys before it allow: with every
      // phase it may have an explanation, and then the keys disagree.
      const PhaseSet every(limits.sweep_ms.value);
      if (shared[where.first] != every) {
        key_options.work_max = budget;
        const auto alone = check_key(input, oracles_of_key, every, key_options);
        budget -= std::min(budget, alone.work);
        result.states_expanded += alone.work;
        if (alone.outcome == KeyOutcome::explained) {
          result.violations.push_back(Finding{
              "phase", input.key, where.first,
              fmt::format("no single sweep phase explains every key: key `{}` needs sweeps at phases the keys before "
                          "it rule out",
                          input.key),
              {}, origin});
          continue;
        }
        if (alone.outcome == KeyOutcome::undecided) {
          result.unknown.push_back(fmt::format("key `{}`: undecided with every sweep phase ({})", input.key, alone.why));
          continue;
        }
        result.violations.push_back(key_finding(history, where.first, input, options.shrink, alone));
        continue;
      }
      result.violations.push_back(key_finding(history, where.first, input, options.shrink, verdict));
      continue;
    }
    shared[where.first] = verdict.phases;
    result.explanations.push_back(KeyExplanation{input.key, where.first, std::move(verdict.steps)});
  }
  result.keys = names.size();
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
  lines.push_back(fmt::format("search: {} configurations stepped, at most {} alive at once", result.states_expanded,
                              result.frontier_peak));
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
