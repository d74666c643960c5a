#include "check/story.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "check/build.hpp"
#include "check/frontier.hpp"

namespace lockstep::history {

namespace {

struct Attempt {
  bool fails = false;
  History prefix;  // the input's lines are views into it
  KeyInput input;
  std::optional<KeyVerdict> verdict;
};

// Whether the key still has no explanation in the history cut at `cut_us`
// (events from then on dropped; connections still open are cut, so late
// answers may be on their way).
Attempt attempt(const History& history, std::uint32_t incarnation, const std::string& key, std::int64_t cut_us,
                std::int64_t origin_us) {
  Attempt result;
  History& prefix = result.prefix;
  prefix.header = history.header;
  for (const auto& event : history.events) {
    if (event.t_us >= cut_us) break;
    prefix.events.push_back(event);
  }
  const Built built = build_inputs(prefix, true);
  const auto it = built.keys.find({incarnation, key});
  if (it == built.keys.end()) return result;
  const Oracles oracles = make_oracles(built);
  KeyCheckOptions options;
  // Prefixes cut connections open, where any answer may still be on its
  // way: bounded, and an undecided prefix counts as explained.
  options.work_max = 50'000;
  options.frontier_max = 2'000;
  options.origin_us = origin_us;
  auto verdict = check_key(it->second, key_oracles(oracles, prefix.header.limits, incarnation, it->second),
                           PhaseSet(prefix.header.limits.sweep_ms.value), options);
  // A prefix left undecided counts as explained: the bisection then keeps a
  // longer prefix, never a wrong one.
  result.fails = verdict.outcome == KeyOutcome::unexplained;
  result.input = it->second;
  result.verdict = std::move(verdict);
  return result;
}

// The response the contract gives, as it would read on the wire (a grant's
// token is the server's to choose).
std::string response_text(const KeyInput& input, const KeyFailure& failure) {
  const auto& owner = failure.owner < input.owners.size() ? input.owners[failure.owner] : std::string("?");
  switch (failure.response) {
    case ResponseKind::granted: return fmt::format("A <token> {} {}", owner, input.key);
    case ResponseKind::timed_out: return fmt::format("T {} {}", owner, input.key);
    case ResponseKind::busy: return fmt::format("B {} {}", owner, input.key);
    case ResponseKind::released: return fmt::format("R {} {}", failure.token, input.key);
    case ResponseKind::not_held: return fmt::format("N {} {}", failure.token, input.key);
    case ResponseKind::error: break;
  }
  return "E";
}

// An instant of the explanation, in ms, as the story writes times.
std::string instant_text(std::int64_t ms, std::int64_t origin_us) { return at_text(ms * 1000, origin_us); }

// A connection's number in the history, from its slot (0: no such slot).
std::uint32_t conn_id_of(const KeyInput& input, std::uint32_t slot) {
  return slot < input.conns.size() ? input.conns[slot].id : 0;
}

std::string request_line(const KeyInput& input, std::int32_t index) {
  return index >= 0 ? std::string(input.requests[static_cast<std::size_t>(index)].line) : std::string("?");
}

// When a missing answer was owed, and because of what.
std::string missing_when(const KeyInput& input, const KeyFailure& failure, std::int64_t origin_us) {
  // Cluster mode owes a caused answer by no instant unless a maximum
  // lateness is stated: there it is simply the answer of its cause.
  const auto by = failure.due_by_us >= 0 ? fmt::format("by {}", at_text(failure.due_by_us, origin_us))
                                         : std::string("as the answer");
  switch (failure.cause) {
    case KeyFailure::Cause::request:
      return fmt::format("at once to `{}` sent at {} (handled by {} in the furthest explanation)",
                         request_line(input, failure.request),
                         at_text(input.requests[static_cast<std::size_t>(failure.request)].sent_us, origin_us),
                         instant_text(failure.at_ms + 1, origin_us));
    case KeyFailure::Cause::release:
      return fmt::format("{} (the release `{}` at {} handed the key to its head waiter)", by,
                         request_line(input, failure.cause_request), instant_text(failure.at_ms, origin_us));
    case KeyFailure::Cause::sweep:
      return fmt::format("by {} (the sweep at {} handed the expired key to its head waiter)",
                         at_text(failure.due_by_us, origin_us), instant_text(failure.at_ms, origin_us));
    case KeyFailure::Cause::deadline:
      return fmt::format("{} (the wait of `{}` ended at {})", by, request_line(input, failure.request),
                         instant_text(failure.at_ms, origin_us));
    case KeyFailure::Cause::expire:
      return fmt::format("{} (the Expire at {} of the grant to `{}` handed the key to its head waiter)", by,
                         instant_text(failure.at_ms, origin_us), request_line(input, failure.cause_request));
  }
  return {};
}

// The grant of the key that carries `token`, said so that a reader sees
// whose grant was issued before the one that came: a grant the rules
// would have made later, to another request (a waiter passed by), reads
// the same as a token out of order, and the line tells them apart.
std::string token_holder(const KeyInput& input, std::uint64_t token, std::int64_t origin_us) {
  for (const auto& other : input.observations) {
    if (other.kind == ResponseKind::granted && other.token == token) {
      return fmt::format(", that of `{}` on connection {} at {}", other.line, conn_id_of(input, other.conn),
                         at_text(other.received_us, origin_us));
    }
  }
  return {};
}

// What is wrong with the timing of `seen`, the answer that came instead of
// the missing one, if it is of the same kind; empty when nothing is.
std::string got_timing(const KeyInput& input, const KeyObservation& seen, const KeyFailure& failure,
                       std::int64_t origin_us) {
  const bool same = seen.kind == failure.response;
  std::string timing = !same ? ""
                       : seen.received_us < failure.at_ms * 1000 - 1000 ? " (too early)"
                       : failure.due_by_us >= 0 && seen.arrived_from_us > failure.due_by_us ? " (too late)"
                                                                                            : "";
  if (same && timing.empty() && seen.kind == ResponseKind::granted && seen.token != failure.next_token) {
    timing = failure.next_token == 0
                 ? " (no token of the key is left for it: tokens increase in the order issued)"
                 : fmt::format(" (its token is not the key's next one, {}{}: tokens increase in the order issued)",
                               failure.next_token, token_holder(input, failure.next_token, origin_us));
  }
  return timing;
}

// What came instead of a missing answer.
std::string missing_got(const KeyInput& input, const KeyFailure& failure, std::int64_t origin_us) {
  if (failure.got >= 0) {
    const auto& seen = input.observations[static_cast<std::size_t>(failure.got)];
    return fmt::format("got `{}` at {}{}", seen.line, at_text(seen.received_us, origin_us),
                       got_timing(input, seen, failure, origin_us));
  }
  const auto& conn = input.conns[failure.conn];
  return fmt::format("nothing of the kind arrived (the connection was watched until {})",
                     at_text(conn.end_us, origin_us));
}

std::string missing_sentence(const KeyInput& input, const KeyFailure& failure, std::int64_t origin_us) {
  const std::string when = missing_when(input, failure, origin_us);
  const std::string got = missing_got(input, failure, origin_us);
  return fmt::format("expected `{}` on connection {} {}, {}", response_text(input, failure),
                     conn_id_of(input, failure.conn), when, got);
}

std::string unexplained_sentence(const KeyInput& input, const KeyFailure& failure, std::int64_t origin_us) {
  const auto& seen = input.observations[static_cast<std::size_t>(failure.observation)];
  if (!failure.instead.empty()) {
    // A cluster's reason is said outright (ClusterFrontier::early_timeout).
    return fmt::format("`{}` on connection {} at {} has no explanation: {}{}", seen.line, conn_id_of(input, seen.conn),
                       at_text(seen.received_us, origin_us), input.cluster.on ? "" : "in the furthest explanation ",
                       failure.instead);
  }
  return fmt::format("`{}` on connection {} at {} has no explanation: no answer of the contract gives it then",
                     seen.line, conn_id_of(input, seen.conn), at_text(seen.received_us, origin_us));
}

std::string late_sentence(const KeyInput& input, const KeyFailure& failure, std::int64_t origin_us) {
  if (failure.request < 0) {
    return "it has an explanation only with more lateness than the maximum lateness allows (an Expire, a Timeout or "
           "a caused answer later than that past its deadline)";
  }
  const char* what = failure.cause == KeyFailure::Cause::expire     ? "the Expire of the grant to"
                     : failure.cause == KeyFailure::Cause::deadline ? "the Timeout of"
                                                                    : "an answer caused by time or by another request, to";
  return fmt::format("{} `{}` is later than the maximum lateness allows: it was due by {} at the latest, and the "
                     "explanation that needs the least lateness has it at {}",
                     what, request_line(input, failure.request), at_text(failure.due_by_us, origin_us),
                     instant_text(failure.at_ms, origin_us));
}

std::string unhandled_sentence(const KeyInput& input, const KeyFailure& failure, std::int64_t origin_us) {
  const auto& request = input.requests[static_cast<std::size_t>(failure.request)];
  return fmt::format("`{}` sent on connection {} at {} cannot be handled by {} with an answer that matches what "
                     "arrived",
                     request.line, conn_id_of(input, request.conn), at_text(request.sent_us, origin_us),
                     instant_text(failure.at_ms, origin_us));
}

}  // namespace

// The culprit and what the contract would have answered there, in the
// furthest explanation: "expected `A <token> bob k` on connection 2 by
// +195.000 ms (...), got `T bob k` at +174.000 ms".
std::string failure_sentence(const KeyInput& input, const KeyFailure& failure, std::int64_t origin_us) {
  switch (failure.kind) {
    case KeyFailure::Kind::none: return {};
    case KeyFailure::Kind::missing: return missing_sentence(input, failure, origin_us);
    case KeyFailure::Kind::unexplained: return unexplained_sentence(input, failure, origin_us);
    case KeyFailure::Kind::late: return late_sentence(input, failure, origin_us);
    case KeyFailure::Kind::unhandled: return unhandled_sentence(input, failure, origin_us);
  }
  return {};
}

namespace {

// `expected`: a line for the answer the contract gives and nothing matched
// (at the latest instant it may arrive), empty when there is none.
std::vector<std::string> timeline(const KeyInput& input, std::int64_t origin_us, std::int32_t unexplained,
                                  std::int64_t until_us, std::int64_t expected_us = -1, std::string expected = {}) {
  struct Line {
    std::int64_t us;
    std::string text;
  };
  std::vector<Line> lines;
  if (expected_us >= 0) lines.push_back({expected_us, std::move(expected)});
  for (const auto& request : input.requests) {
    lines.push_back({request.sent_us, fmt::format("{:>14}  c{:<4} sent     {}", at_text(request.sent_us, origin_us),
                                                   input.conns[request.conn].id, request.line)});
  }
  for (std::size_t i = 0; i < input.observations.size(); ++i) {
    const auto& seen = input.observations[i];
    lines.push_back({seen.received_us, fmt::format("{:>14}  c{:<4} received {}{}", at_text(seen.received_us, origin_us),
                                                    input.conns[seen.conn].id, seen.line,
                                                    static_cast<std::int32_t>(i) == unexplained
                                                        ? "   <-- the culprit"
                                                        : "")});
  }
  for (const auto& conn : input.conns) {
    if (!conn.closes) continue;
    // Who ended it: the tester (`close`), the server (`eof`), or the
    // target's stop (`down`), which ends every connection at once.
    const char* how = conn.stopped ? "ended    (the target was stopped: `down`)"
                      : conn.closed_by_server ? "eof      (the server closed it)"
                                              : "closed   (by the tester)";
    lines.push_back({conn.end_us, fmt::format("{:>14}  c{:<4} {}", at_text(conn.end_us, origin_us), conn.id, how)});
  }
  std::stable_sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) { return a.us < b.us; });
  std::erase_if(lines, [&](const Line& line) { return line.us >= until_us; });
  std::vector<std::string> out;
  constexpr std::size_t shown_max = 60;
  if (lines.size() > shown_max) {
    out.push_back(fmt::format("({} earlier events of this key are explained and not shown)", lines.size() - shown_max));
    lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(shown_max));
  }
  for (auto& line : lines) out.push_back(std::move(line.text));
  return out;
}

}  // namespace

namespace {

// The shortest failing prefix of a key's history, and where its story ends.
struct Shrunk {
  Attempt best;
  std::int64_t bad_us = 0;        // the cut: events from then on are not in the story
  std::int32_t unexplained = -1;  // the prefix's response nothing explains, if any
  std::string state_text;         // the furthest explanation's state
};

// The shortest failing prefix, by bisection on the cut instant. The whole
// history was explained up to where its last configuration died, so a
// prefix cut there (answers still on their way may arrive later) is
// explained too: the bisection starts from it. A prefix the checker cannot
// decide within its small budget counts as explained (a longer prefix is
// kept, never a wrong one); after two of them the bisection stops.
Shrunk shrink_key(const History& history, std::uint32_t incarnation, const KeyInput& input, bool shrink,
                  const KeyVerdict& whole, std::int64_t origin_us) {
  Shrunk out;
  std::int64_t good = std::max(origin_us, whole.last_alive_ms * 1000);
  out.bad_us = history.events.empty() ? 0 : history.events.back().t_us + 1;
  out.best.fails = true;
  out.best.input = input;
  out.best.verdict = whole;
  int undecided = 0;
  for (int round = 0; shrink && round < 24 && undecided < 2 && out.bad_us - good > 1000; ++round) {
    const std::int64_t middle = good + (out.bad_us - good) / 2;
    Attempt tried = attempt(history, incarnation, input.key, middle, origin_us);
    if (tried.fails) {
      out.bad_us = middle;
      out.best = std::move(tried);
    } else {
      good = middle;
      if (tried.verdict && tried.verdict->outcome == KeyOutcome::undecided) ++undecided;
    }
  }
  if (out.best.verdict) {
    out.unexplained = out.best.verdict->unexplained;
    out.state_text = out.best.verdict->state;
  }
  if (!history.events.empty() && out.bad_us > history.events.back().t_us) {
    // Not shrunk: the story ends where the last configuration died, or at
    // the response it could not explain.
    out.bad_us = (out.best.verdict->last_alive_ms + 2) * 1000;
    if (out.unexplained >= 0) {
      out.bad_us = std::max(
          out.bad_us, out.best.input.observations[static_cast<std::size_t>(out.unexplained)].received_us + 1);
    }
  }
  return out;
}

// The finding's one line and the instant it shows at.
void summarize(Finding& finding, const KeyInput& input, const KeyVerdict& whole, const Shrunk& shrunk,
               std::int64_t origin_us) {
  if (const auto sentence = failure_sentence(input, whole.failure, origin_us); !sentence.empty()) {
    // The culprit, from the whole history's furthest explanation: what the
    // contract answers there, or the response nothing gives.
    finding.summary = fmt::format("key `{}`: {}", input.key, sentence);
    finding.at_us = whole.failure.got >= 0 ? input.observations[static_cast<std::size_t>(whole.failure.got)].received_us
                    : whole.failure.observation >= 0
                        ? input.observations[static_cast<std::size_t>(whole.failure.observation)].received_us
                        : whole.failure.due_by_us >= 0 ? whole.failure.due_by_us
                                                       : whole.failure.at_ms * 1000;
  } else if (shrunk.unexplained >= 0) {
    const auto& seen = shrunk.best.input.observations[static_cast<std::size_t>(shrunk.unexplained)];
    finding.at_us = seen.received_us;
    finding.summary = fmt::format("key `{}`: `{}` on connection {} at {} has no explanation", input.key, seen.line,
                                  shrunk.best.input.conns[seen.conn].id, at_text(seen.received_us, origin_us));
  } else {
    finding.at_us = shrunk.bad_us;
    finding.summary = fmt::format("key `{}`: a response the contract requires by {} never arrived", input.key,
                                  at_text(shrunk.bad_us, origin_us));
  }
}

// Where the report draws the violation: the culprit, and the answer the
// contract expected where nothing matched it.
void set_focus(Finding& finding, const KeyInput& input, const KeyFailure& failure, std::int32_t culprit) {
  if (culprit >= 0) {
    finding.focus.culprit_us = input.observations[static_cast<std::size_t>(culprit)].received_us;
    finding.focus.culprit_conn = input.conns[input.observations[static_cast<std::size_t>(culprit)].conn].id;
  }
  if (failure.kind != KeyFailure::Kind::missing) return;
  finding.focus.expected = response_text(input, failure);
  finding.focus.expected_conn = input.conns[failure.conn].id;
  finding.focus.cause_us = failure.at_ms * 1000;
  finding.focus.expected_from_us = failure.at_ms * 1000 - 1000;
  finding.focus.expected_by_us = failure.due_by_us >= 0 ? failure.due_by_us : failure.at_ms * 1000 + 1000;
  if (failure.cause == KeyFailure::Cause::request && failure.request >= 0) {
    finding.focus.cause_us = input.requests[static_cast<std::size_t>(failure.request)].sent_us;
  }
}

// What was searched and why it failed, after the furthest explanation.
void tell_search(Finding& finding, const KeyInput& input, const KeyFailure& failure, const Shrunk& shrunk,
                 std::int32_t culprit) {
  if (!shrunk.best.verdict) return;
  finding.story.push_back(fmt::format("the furthest explanation accounts for {} of {} responses; there, {}.",
                                      shrunk.best.verdict->explained, shrunk.best.input.observations.size(),
                                      shrunk.state_text));
  // What was searched: a sweep phase in simple mode, Expires and
  // Timeouts within the clock allowance in cluster mode.
  const char* searched = input.cluster.on ? "no order of the requests, Expires and Timeouts within their windows "
                                            "(the clock allowance included)"
                                          : "no order of the requests within their windows, no sweep phase and no "
                                            "timing within the tolerance";
  if (failure.kind == KeyFailure::Kind::missing) {
    finding.story.push_back(fmt::format("{} avoids the expected answer, and it did not arrive in time.", searched));
  } else if (failure.kind == KeyFailure::Kind::late) {
    finding.story.push_back("every explanation of the key needs more lateness than the maximum allows.");
  } else if (culprit >= 0) {
    finding.story.push_back(fmt::format("{} makes the contract give the marked response.", searched));
  } else {
    finding.story.push_back("the contract requires an answer (a `T` at a deadline, or a hand-off) that did not arrive.");
  }
}

}  // namespace

Finding key_finding(const History& history, std::uint32_t incarnation, const KeyInput& input, bool shrink,
                    const KeyVerdict& whole) {
  Finding finding;
  finding.check = "key";
  finding.key = input.key;
  finding.incarnation = incarnation;
  const auto origins = incarnation_origins_us(history);
  const std::int64_t origin_us = incarnation < origins.size() ? origins[incarnation] : origins.back();
  const Shrunk shrunk = shrink_key(history, incarnation, input, shrink, whole, origin_us);
  summarize(finding, input, whole, shrunk, origin_us);
  // The timeline of the shrunk prefix, stretched to show the culprit, with
  // the answer the contract expected where nothing matched it.
  const auto& failure = whole.failure;
  std::int32_t culprit = failure.got >= 0 ? failure.got : failure.observation;
  if (culprit < 0 && failure.kind == KeyFailure::Kind::none) culprit = shrunk.unexplained;
  std::int64_t until_us = shrunk.bad_us;
  if (culprit >= 0) until_us = std::max(until_us, input.observations[static_cast<std::size_t>(culprit)].received_us + 1);
  set_focus(finding, input, failure, culprit);
  std::int64_t expected_us = -1;
  std::string expected;
  if (failure.kind == KeyFailure::Kind::missing) {
    expected_us = failure.due_by_us >= 0 ? failure.due_by_us : failure.at_ms * 1000;
    expected = fmt::format("{:>14}  c{:<4} expected {}   <-- {}", at_text(expected_us, origin_us), input.conns[failure.conn].id,
                           response_text(input, failure), failure.due_by_us >= 0 ? "due by then" : "due at once");
    until_us = std::max(until_us, expected_us + 1);
  }
  finding.story.push_back(fmt::format("key `{}`, the shortest prefix of the history that has no explanation (up to {}; "
                                      "times count from {}):",
                                      input.key, at_text(until_us, origin_us), origin_text(history, incarnation)));
  for (auto& line : timeline(input, origin_us, culprit, until_us, expected_us, std::move(expected))) {
    finding.story.push_back("  " + line);
  }
  // A key's check stops at its first violation (check/DESIGN.md,
  // "Reports"): what was read of it later is not judged, and says so.
  const auto unread = std::count_if(input.observations.begin(), input.observations.end(),
                                    [&](const auto& seen) { return seen.received_us >= until_us; });
  if (unread > 0) {
    finding.story.push_back(fmt::format("the rest of key `{}` was not checked: a key's check stops at its first violation "
                                        "({} later response(s) of it not judged).",
                                        input.key, unread));
  }
  tell_search(finding, input, failure, shrunk, culprit);
  return finding;
}

std::string restart_note(const History& history, std::uint32_t incarnation, std::int64_t at_us) {
  if (incarnation == 0) return {};
  const auto origins = incarnation_origins_us(history);
  if (incarnation >= origins.size()) return {};
  const auto since_us = at_us - origins[incarnation];
  if (since_us > restart_suspect_us) return {};
  return fmt::format(
      "this came {:.3f} ms after {}: a server that was still running after the `down` (started through a shell "
      "that did not `exec` it, or one that keeps its listener open while it shuts down) may have taken the "
      "connections opened after the `up`, and answered them with the old incarnation's state; the tester must "
      "write `down` only once every process of the server has exited and its port refuses connections "
      "(docs/protocol.md, \"Running under the tools\")",
      since_us / 1000.0, origin_text(history, incarnation));
}

}  // namespace lockstep::history
