// The checker's outer layer: builds the inputs, checks what belongs to no
// key (malformed lines and their `E`, responses that are not responses),
// searches each key, asks whether one sweep phase per incarnation explains
// all its keys at once, and then checks the order of tokens across keys
// against the instants the keys' searches allow for each grant.
#include "check/checker.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "check/build.hpp"
#include "check/frontier.hpp"
#include "check/least_lateness.hpp"
#include "check/mode_rules.hpp"
#include "check/story.hpp"
#include "check/tokens.hpp"

namespace lockstep::history {

namespace {

// What made an undecided key's search wide, in the workload's terms, with
// what the user can change: the operations of the key sent by `at_ms` and
// not answered by then (each may be applied at any instant up to its
// answer, so the search carries their orders), how many were try-locks.
std::string workload_hint(const KeyInput& input, std::int64_t at_ms, std::int64_t origin_us) {
  std::size_t pending = 0, trylocks = 0, waiting = 0;
  for (const auto& request : input.requests) {
    if (request.sent_us > at_ms * 1000 + 999 || request.latest_ms < at_ms) continue;
    ++pending;
    if (request.acquire && request.wait_ms == 0) ++trylocks;
    if (request.acquire && request.wait_ms > 0) ++waiting;
  }
  if (pending < 2) return {};
  return fmt::format(
      ". At +{:.3f} ms, {} requests of the key were sent and not yet answered ({} try-locks, {} waiting acquires, {} "
      "releases); each may take effect at any instant up to its answer, so the search carries their orders. Fewer "
      "clients per key (more keys), shorter waits or leases{} narrow it",
      (at_ms * 1000 - origin_us) / 1000.0, pending, trylocks, waiting, pending - trylocks - waiting,
      input.cluster.on && input.cluster.max_lateness_ms < 0 ? ", or a stated maximum lateness (--max-lateness-ms)" : "");
}

// What an `E` to a line that is well-formed under the assumed limits could
// mean: the target's limits are lower. Names the largest lease, wait and
// line sent on the connection before the `E` arrived.
std::string error_hint(const ConnectionRecord& conn, std::int64_t until_us, const Limits& limits) {
  std::int64_t lease = 0, wait = 0;
  std::size_t bytes = 0;
  for (const auto& sent : conn.sent) {
    if (sent.sent_us > until_us || sent.malformed) continue;
    bytes = std::max(bytes, sent.line.size());
    if (sent.acquire) {
      lease = std::max(lease, sent.lease_ms);
      wait = std::max(wait, sent.wait_ms);
    }
  }
  return fmt::format(
      "an `E` fits a well-formed request only if the target's limits are below those assumed (max_lease_ms {}, "
      "max_wait_ms {}, max_line_bytes {}); the requests before it asked leases up to {} ms and waits up to {} ms, "
      "in lines up to {} bytes. Give the target's limits with --max-lease-ms, --max-wait-ms, --max-line-bytes",
      limits.max_lease_ms.value, limits.max_wait_ms.value, limits.max_line_bytes, lease, wait, bytes);
}

// The last well-formed line sent on the connection before `until_us`.
std::string last_request_before(const ConnectionRecord& conn, std::int64_t until_us, std::int64_t origin_us) {
  const SentLine* last = nullptr;
  for (const auto& sent : conn.sent) {
    if (sent.sent_us <= until_us && !sent.malformed) last = &sent;
  }
  if (last == nullptr) return "no well-formed line was sent before it";
  return fmt::format("the last line sent before it was `{}` at {}", last->line, at_text(last->sent_us, origin_us));
}

// Malformed lines and their `E` answers, per connection (they name no key).
// The k-th `E` of a connection answers its k-th malformed line; an `E` with
// no malformed line to answer is an error to a well-formed request.
void check_errors(const Built& built, const Limits& limits, std::int64_t tolerance_ms, std::int64_t handled_within_ms,
                  CheckResult& result) {
  for (const auto& conn : built.conns) {
    const auto origin = built.incarnation_start_us[conn.incarnation];
    std::vector<const SentLine*> malformed;
    for (const auto& sent : conn.sent) {
      if (sent.malformed) malformed.push_back(&sent);
    }
    result.malformed += malformed.size();
    std::vector<const ReceivedLine*> errors;
    for (const auto& received : conn.received) {
      if (received.answers_request) continue;  // cluster mode: a request the node refused (build.cpp)
      if (!received.parsed) {
        result.violations.push_back(Finding{"responses", "", conn.incarnation,
                                            fmt::format("connection {} received `{}` at {}, which is not a response",
                                                        conn.id, received.line, at_text(received.received_us, origin)),
                                            {}, received.received_us, {}});
      } else if (received.response.kind == ResponseKind::error) {
        errors.push_back(&received);
      }
    }
    for (std::size_t i = 0; i < errors.size(); ++i) {
      const bool none_left = i >= malformed.size();
      if (!none_left && errors[i]->received_us >= malformed[i]->sent_us) continue;
      const auto at_us = errors[i]->received_us;
      Finding finding{"errors", "", conn.incarnation,
                      fmt::format("connection {}: `{}` at {} is an error to a well-formed request: {}; the contract "
                                  "answers a well-formed request A, T, B, R or N",
                                  conn.id, errors[i]->line, at_text(at_us, origin),
                                  none_left ? fmt::format("the {} malformed line(s) sent on it were answered before",
                                                          malformed.size())
                                            : fmt::format("the malformed line it could answer, `{}`, was sent only at {}",
                                                          malformed[i]->line.substr(0, 80),
                                                          at_text(malformed[i]->sent_us, origin))),
                      {}, at_us, {}};
      finding.story.push_back(last_request_before(conn, at_us, origin) + ".");
      finding.story.push_back(error_hint(conn, at_us, limits) + ".");
      result.violations.push_back(std::move(finding));
      break;
    }
    // A malformed line is answered at once: owed its `E` when the
    // connection was watched for more than the tolerance after it was sent
    // (docs/protocol.md, "Black box, in real time": each request the rules answer gets an answer), or
    // after a later request's answer showed it handled; unless the target
    // stopped before it could read it.
    for (std::size_t i = errors.size(); i < malformed.size(); ++i) {
      auto latest = malformed[i]->latest_ms;
      if (!conn.cut && !conn.stopped) {
        latest = std::min(latest, malformed[i]->sent_us / 1000 + (handled_within_ms >= 0 ? handled_within_ms + 1 : 0));
      }
      if (latest < unbounded_ms && (latest + 1 + tolerance_ms) * 1000 <= conn.end_us) {
        result.violations.push_back(Finding{
            "errors", "", conn.incarnation,
            fmt::format("connection {}: expected `E` to the malformed line `{}` sent at {}, by {}; nothing arrived "
                        "(the connection was watched until {})",
                        conn.id, malformed[i]->line.substr(0, 80), at_text(malformed[i]->sent_us, origin),
                        at_text((latest + 1 + tolerance_ms) * 1000, origin), at_text(conn.end_us, origin)),
            {}, malformed[i]->sent_us, {}});
        break;
      }
    }
  }
}

std::string limits_text(const Limits& l) {
  return fmt::format("max_keys {}, max_waiters_per_key {}, max_waiters {}, sweep_ms {}, max_lease_ms {}, max_wait_ms {}, "
                     "max_line_bytes {}",
                     l.max_keys, l.max_waiters_per_key, l.max_waiters, l.sweep_ms.value, l.max_lease_ms.value,
                     l.max_wait_ms.value, l.max_line_bytes);
}

// Whether other limits than those assumed explain a key that has no
// explanation: the protocol's defaults, a `B` allowed anywhere (the target's
// queue or key limits lower), or other sweep periods. A hint for the report
// when the assumed limits are not the target's.
std::string limit_hint(const Oracles& oracles, const Limits& assumed, std::uint32_t incarnation, const KeyInput& input) {
  struct Variant {
    std::string what;
    Limits limits;
    bool busy_anywhere = false;
    bool never_sweeps = false;
  };
  std::vector<Variant> variants;
  const Limits contract;
  if (!(contract == assumed)) variants.push_back({"the protocol's default limits (" + limits_text(contract) + ")", contract});
  {
    Limits lower = assumed;
    lower.max_waiters_per_key = count_limit_max;
    variants.push_back({"limits that allow a `B` anywhere (the target's max_keys, max_waiters_per_key or max_waiters "
                        "lower than assumed)",
                        lower, true});
  }
  for (const std::int64_t sweep : {std::int64_t{1'000}, std::int64_t{5'000}}) {
    if (sweep == assumed.sweep_ms.value) continue;
    Limits other = assumed;
    other.sweep_ms = DurationMs{sweep};
    variants.push_back({fmt::format("sweep_ms {}", sweep), other});
  }
  variants.push_back({"no sweep at all during the run", assumed, false, true});
  for (const auto& variant : variants) {
    // A cluster has no sweep: only the limits on keys and waiters can differ.
    if (input.cluster.on && (variant.never_sweeps || variant.limits.sweep_ms != assumed.sweep_ms)) continue;
    KeyInput tried = input;
    tried.limits = variant.limits;
    KeyOracles key = key_oracles(oracles, variant.limits, incarnation, tried);
    if (variant.busy_anywhere) {
      key.keys_may_be_full = [](std::int64_t) { return true; };
      key.waiters_may_be_full = [](std::int64_t) { return true; };
      key.waiters_may_be_full_within = [](std::int64_t, std::int64_t) { return true; };
    }
    PhaseSet phases(variant.limits.sweep_ms.value);
    if (variant.never_sweeps) {
      const auto period = input.horizon_ms + 2;
      phases = PhaseSet(period);
      phases.forbid_instants(0, input.horizon_ms);  // one phase beyond the end: no sweep inside the run
      if (phases.empty()) continue;
    }
    KeyCheckOptions options;
    options.work_max = 500'000;
    options.memory_max_bytes = 256ull << 20;
    if (check_key(tried, key, phases, options).outcome == KeyOutcome::explained) {
      return fmt::format("with {} this key has an explanation: are the limits assumed ({}) the target's? Give them "
                         "with --max-keys, --max-waiters-per-key, --max-waiters, --sweep-ms",
                         variant.what, limits_text(assumed));
    }
  }
  return {};
}

}  // namespace

namespace {

// One check of a history, step by step: the history built once (its
// connections and one input per key), the keys judged one after another
// (each within the sweep phases the keys before it allow, and within its
// share of the budget), then what couples keys (the order of tokens) and,
// for a cluster, the least lateness; last the verdict.
class HistoryCheck {
 public:
  HistoryCheck(const History& history, const CheckOptions& options, const ErrorChoice* errors = nullptr)
      : history_(history),
        options_(options),
        limits_(history.header.limits),
        budget_(options.budget_states) {
    result_.built = std::make_shared<const Built>(build_inputs(history, false, errors));
    built_ = result_.built.get();
    result_.limits = limits_;
    result_.tolerance_ms = history.header.tolerance_ms;
    result_.mode = history.header.mode;
    result_.clock_allowance_ms = history.header.clock_allowance_ms;
    result_.max_lateness_ms = history.header.max_lateness_ms;
    result_.incarnation_start_us = built_->incarnation_start_us;
    result_.connections = built_->conns.size();
    result_.limbo_connections = built_->limbo_connections;
    for (const auto& conn : built_->conns) {
      for (const auto& sent : conn.sent) result_.requests += sent.malformed ? 0 : 1;
      result_.responses += conn.received.size();
    }
    check_errors(*built_, limits_, history.header.tolerance_ms, history.header.handled_within_ms, result_);
    oracles_ = make_oracles(*built_);
    rules_ = ModeRules::of(history, *built_);
  }

  CheckResult run() {
    judge_keys();
    finish();
    return std::move(result_);
  }

 private:
  using Where = std::pair<std::uint32_t, std::string>;

  // Two passes: first every key within its share of the budget (what is
  // left divided among the keys not yet searched, at most a quarter), so
  // that keys whose search is hard cannot starve the others (a violation on
  // an easy key is found whatever the hard ones do); then the keys that ran
  // out of their share, with what is left (searched again from the start:
  // a share large enough that few keys need it keeps that waste small).
  void judge_keys() {
    const std::uint64_t quarter = std::max<std::uint64_t>(options_.budget_states / 4, 1);
    std::size_t keys_left = built_->keys.size();
    for (const auto& [where, input] : built_->keys) {
      check_one(where, input, std::clamp<std::uint64_t>(budget_ / keys_left, 1, quarter), false);
      --keys_left;
    }
    for (const auto& where : deferred_) check_one(where, built_->keys.at(where), budget_, true);
  }

  void check_one(const Where& where, const KeyInput& input, std::uint64_t work_cap, bool last_pass) {
    names_.insert(input.key);
    const auto first_try = first_tries_.find(where);
    if (budget_ == 0 && first_try == first_tries_.end()) {
      not_searched_.push_back(input.key);  // the budget was spent on the keys before it
      return;
    }
    const KeyOracles oracles_of_key = key_oracles(oracles_, limits_, where.first, input);
    KeyCheckOptions key_options;
    key_options.work_max = std::min(budget_, work_cap);
    key_options.memory_max_bytes = options_.memory_max_bytes;
    key_options.origin_us = built_->incarnation_start_us[where.first];
    key_options.record_steps = options_.record_steps || input.key == options_.explain_key;
    KeyVerdict verdict;
    if (budget_ == 0) {
      verdict = std::move(first_try->second);  // nothing left to search it again with
    } else {
      verdict = rules_->search(input, oracles_of_key, where.first, key_options);
      spend(verdict);
      result_.frontier_peak = std::max(result_.frontier_peak, verdict.frontier_peak);
      result_.memory_peak_bytes = std::max(result_.memory_peak_bytes, verdict.memory_peak_bytes);
    }
    if (!last_pass && verdict.outcome == KeyOutcome::undecided && verdict.work > key_options.work_max) {
      deferred_.push_back(where);
      first_tries_.emplace(where, std::move(verdict));
      return;
    }
    if (input.key == options_.explain_key) explain(where, input, verdict);
    if (verdict.outcome == KeyOutcome::undecided) {
      undecided(input, verdict, key_options.origin_us);
    } else if (verdict.outcome == KeyOutcome::unexplained) {
      if (!unexplained(where, input, oracles_of_key, verdict, key_options)) return;
    } else {
      explained(where, input, verdict);
    }
    verdicts_.emplace(where, std::move(verdict));
  }

  void spend(const KeyVerdict& verdict) {
    budget_ -= std::min(budget_, verdict.work);
    result_.states_expanded += verdict.work;
  }

  // check-history --explain KEY: the instant of each step of the explanation.
  void explain(const Where& where, const KeyInput& input, const KeyVerdict& verdict) {
    const auto origin = built_->incarnation_start_us[where.first];
    result_.explain_lines.push_back(fmt::format("explanation of key `{}` (incarnation {}){}:", input.key, where.first + 1,
                                                verdict.outcome == KeyOutcome::explained ? "" : ", as far as it goes"));
    for (const auto& step : verdict.steps) {
      const char* what = step.what == 'h' ? "handles" : step.what == 'a' ? "answers" : step.what == 't' ? "times out"
                         : step.what == 's' ? "sweeps" : step.what == 'e' ? "expires" : "closes";
      result_.explain_lines.push_back(fmt::format(
          "  {:>14}  {:<9} {:<32} {}", fmt::format("+{:.3f} ms", (step.instant_ms * 1000 - origin) / 1000.0), what,
          step.request >= 0 ? input.requests[static_cast<std::size_t>(step.request)].line : std::string_view(),
          step.observation >= 0 ? "-> " + std::string(input.observations[static_cast<std::size_t>(step.observation)].line) : ""));
    }
  }

  void undecided(const KeyInput& input, const KeyVerdict& verdict, std::int64_t origin) {
    std::string why = fmt::format("key `{}`: undecided ({}), with {} of {} responses explained up to +{:.3f} ms", input.key,
                                  verdict.why, verdict.explained, input.observations.size(),
                                  (verdict.last_alive_ms * 1000 - origin) / 1000.0);
    if (verdict.unexplained >= 0) {
      const auto& next = input.observations[static_cast<std::size_t>(verdict.unexplained)];
      why += fmt::format("; next to explain: `{}` on c{} at +{:.3f} ms; {}", next.line, input.conns[next.conn].id,
                         (next.received_us - origin) / 1000.0, verdict.state);
    }
    why += workload_hint(input, verdict.last_alive_ms, origin);
    result_.unknown.push_back(std::move(why));
  }

  // A key with no explanation: a violation of its own, or (simple mode)
  // one of the sweep phase the keys share (ModeRules::search_unnarrowed).
  // False when the verdict kept is another search's (it is kept there).
  bool unexplained(const Where& where, const KeyInput& input, const KeyOracles& oracles_of_key, KeyVerdict& verdict,
                   KeyCheckOptions key_options) {
    // Searched within the phases the keys before it allow: with every
    // phase it may have an explanation, and then the keys disagree.
    key_options.work_max = budget_;
    if (auto searched = rules_->search_unnarrowed(input, oracles_of_key, where.first, key_options)) {
      auto alone = std::move(*searched);
      spend(alone);
      if (alone.outcome == KeyOutcome::explained) {
        result_.violations.push_back(Finding{
            "phase", input.key, where.first,
            fmt::format("no single sweep phase explains every key: key `{}` needs sweeps at phases the keys before "
                        "it rule out",
                        input.key),
            {}, key_options.origin_us, {}});
        verdicts_.emplace(where, std::move(alone));
        return false;
      }
      if (alone.outcome == KeyOutcome::undecided) {
        result_.unknown.push_back(fmt::format("key `{}`: undecided with every sweep phase ({})", input.key, alone.why));
        verdicts_.emplace(where, std::move(alone));
        return false;
      }
      verdict = std::move(alone);
    }
    auto finding = key_finding(history_, where.first, input, options_.shrink, verdict);
    // Soon after a restart, the old server still running explains more
    // than a wrong limit would. Other limits are tried on the first few
    // violating keys only: each try is a search of its own.
    if (auto note = restart_note(history_, where.first, finding.at_us); !note.empty()) {
      finding.story.push_back(note + ".");
    } else if (++hinted_ <= 3) {
      if (auto hint = limit_hint(oracles_, limits_, where.first, input); !hint.empty()) {
        finding.story.push_back("a wrong limit would explain it: " + hint + ".");
      }
    }
    result_.violations.push_back(std::move(finding));
    return true;
  }

  void explained(const Where& where, const KeyInput& input, const KeyVerdict& verdict) {
    rules_->explained(where.first, input, verdict, result_);
    result_.explanations.push_back(KeyExplanation{input.key, where.first, verdict.steps});
  }

  // What couples keys, the keys left unsearched, and the verdict.
  void finish() {
    if (!not_searched_.empty()) {
      std::string listed;
      for (std::size_t i = 0; i < not_searched_.size() && i < 8; ++i) listed += (i ? ", `" : "`") + not_searched_[i] + "`";
      if (not_searched_.size() > 8) listed += ", ...";
      result_.unknown.push_back(fmt::format("{} key(s) not searched: the budget (--budget-states {}) was spent on the "
                                            "others: {}",
                                            not_searched_.size(), options_.budget_states, listed));
    }
    check_tokens(*built_, verdicts_, result_);
    rules_->finish(oracles_, options_.memory_max_bytes, budget_, verdicts_, result_);
    result_.keys = names_.size();
    std::stable_sort(result_.violations.begin(), result_.violations.end(),
                     [](const Finding& a, const Finding& b) { return a.at_us < b.at_us; });
    if (!result_.violations.empty()) {
      result_.verdict = Verdict::violation;
    } else if (!result_.unknown.empty()) {
      result_.verdict = Verdict::unknown;
    } else if (result_.responses == 0) {
      // Nothing answered and nothing owed: the history tests nothing, and
      // that is not a pass.
      result_.unknown.push_back("the history has no response: it tests nothing");
      result_.verdict = Verdict::unknown;
    }
  }

  const History& history_;
  const CheckOptions& options_;
  const Limits& limits_;
  CheckResult result_;
  const Built* built_ = nullptr;  // result_.built's
  Oracles oracles_;
  std::unique_ptr<ModeRules> rules_;  // what the mode adds around each key
  std::uint64_t budget_;
  // Every key's verdict, for the order of tokens across keys.
  KeyVerdicts verdicts_;
  std::set<std::string> names_;
  int hinted_ = 0;
  std::vector<Where> deferred_;
  std::vector<std::string> not_searched_;
  // The verdicts of the keys deferred: what is said of them if nothing is
  // left to search them again with.
  KeyVerdicts first_tries_;
};

}  // namespace

namespace {

// Of two verdicts on readings of one history, whether `a` says more for the
// target: an explanation over none, and a less late one (C3 lets an
// explanation read the `E`s any way the rule allows, and C14 asks for the
// least lateness of all explanations).
bool better(const CheckResult& a, const CheckResult& b) {
  if (a.verdict != b.verdict) return a.verdict == Verdict::conforms;
  return a.verdict == Verdict::conforms && a.lateness_ms < b.lateness_ms;
}

}  // namespace

// In a cluster, a connection's `E`s may answer other sends than
// assign_errors's reading of them (C3): when that reading has no
// explanation, or a late one, the others are tried too (at most
// error_readings_max in all, the build lists them) and the best verdict is
// the history's. A reading that explains is as good as any: so a history
// whose first reading conforms on time is checked once.
//
// Only the keys sent on by a connection read otherwise can change: the
// others' inputs are the same in every reading. So when every violating key
// (or the key that was latest) is another, no reading can do better, and
// the history is not checked again.
static bool other_readings_may_help(const CheckResult& result) {
  const auto& built = *result.built;
  std::set<std::string_view> affected;
  for (const auto& other : built.other_error_readings) {
    for (const auto& sent : built.conns[other.conn].sent) affected.insert(sent.key);
  }
  if (result.verdict == Verdict::violation) {
    return std::any_of(result.violations.begin(), result.violations.end(), [&](const Finding& finding) {
      return finding.check != "key" || affected.contains(finding.key);
    });
  }
  if (result.verdict != Verdict::conforms || result.lateness_ms == 0) return false;
  // The key that was latest, or none (the order of tokens across keys).
  return result.lateness_key.empty() || affected.contains(result.lateness_key);
}

CheckResult check_history(const History& history, const CheckOptions& options) {
  auto best = HistoryCheck(history, options).run();
  const auto first = best.built;  // kept while `best` may be replaced
  const auto& others = first->other_error_readings;
  if (others.empty() || !other_readings_may_help(best)) return best;
  // Every combination of the connections' readings but the one built. A
  // reading that violates too is dropped, so its violations are not shrunk.
  auto quick = options;
  quick.shrink = false;
  std::vector<std::size_t> at(others.size(), 0);  // 0: the reading built
  while (true) {
    std::size_t i = 0;
    while (i < at.size() && ++at[i] > others[i].readings.size()) at[i++] = 0;
    if (i == at.size()) break;
    ErrorChoice choice;
    for (std::size_t c = 0; c < at.size(); ++c) {
      if (at[c] > 0) choice.emplace(others[c].conn, others[c].readings[at[c] - 1]);
    }
    auto tried = HistoryCheck(history, quick, &choice).run();
    if (better(tried, best)) best = std::move(tried);
    if (best.verdict == Verdict::conforms && best.lateness_ms == 0) break;
  }
  return best;
}

std::vector<std::string> summary_lines(const CheckResult& result) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("history: {} requests ({} malformed), {} responses, {} keys, {} connections, {} incarnation(s)",
                              result.requests + result.malformed, result.malformed, result.responses, result.keys,
                              result.connections, result.incarnation_start_us.size()));
  if (result.limbo_connections > 0) {
    lines.push_back(fmt::format("not judged: {} connection(s) opened while the target was down (after a `down`, before "
                                "its `up`): no incarnation of it had accepted them",
                                result.limbo_connections));
  }
  if (result.mode == Mode::cluster) {
    lines.push_back(fmt::format("read as a cluster: no sweep, Expires and Timeouts from their deadline less {} ms (2*S); "
                                "maximum lateness {}",
                                result.clock_allowance_ms,
                                result.max_lateness_ms < 0 ? std::string("none (reported only)")
                                                           : fmt::format("{} ms", result.max_lateness_ms)));
    auto limits = limits_text(result.limits);
    limits = limits.substr(0, limits.find(", sweep_ms")) + limits.substr(limits.find(", max_lease_ms"));
    lines.push_back(fmt::format("limits assumed: {}; tolerance {} ms", limits, result.tolerance_ms));
  } else {
    lines.push_back(fmt::format("limits assumed: {}; tolerance {} ms", limits_text(result.limits), result.tolerance_ms));
  }
  lines.push_back(fmt::format("search: {} configurations stepped, at most {} alive at once, {:.1f} MiB at most at one instant",
                              result.states_expanded, result.frontier_peak,
                              static_cast<double>(result.memory_peak_bytes) / (1 << 20)));
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
  if (result.mode == Mode::cluster && result.verdict != Verdict::violation) {
    if (result.lateness_unverified) {
      lines.push_back(fmt::format("worst lateness: at least {} ms, a lower bound from the explanations found{}; not "
                                  "verified as the least maximum lateness (the budget ran out or a search was undecided)",
                                  result.lateness_ms,
                                  result.lateness_text.empty() ? "" : " (" + result.lateness_text + ")"));
    } else {
      lines.push_back(result.lateness_ms > 0
                          ? fmt::format("worst lateness: {} ms past a deadline and the clock allowance ({})",
                                        result.lateness_ms, result.lateness_text)
                          : std::string("worst lateness: 0 ms (every Expire, Timeout and caused answer on time)"));
    }
  }
  for (const auto& why : result.unknown) lines.push_back("unknown: " + why);
  constexpr std::size_t listed_max = 20;
  for (std::size_t i = 0; i < result.violations.size() && i < listed_max; ++i) {
    lines.push_back(fmt::format("violation [{}]: {}", result.violations[i].check, result.violations[i].summary));
  }
  if (result.violations.size() > listed_max) {
    lines.push_back(fmt::format("({} more violations; the report lists them all)", result.violations.size() - listed_max));
  }
  switch (result.verdict) {
    case Verdict::conforms: lines.push_back("verdict: conforms"); break;
    case Verdict::violation: lines.push_back("verdict: violation"); break;
    case Verdict::unknown:
      lines.push_back("verdict: unknown (a search budget ran out, or nothing was tested; this is not a pass)");
      break;
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
