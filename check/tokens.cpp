#include "check/tokens.hpp"

#include <algorithm>
#include <tuple>
#include <vector>

#include <fmt/format.h>

namespace lockstep::history {

namespace {

// When a grant was issued, on the tester's clock: after `after_us`, before
// `before_us`.
struct Issue {
  const GrantSeen* grant = nullptr;
  std::int64_t after_us = 0, before_us = 0;
  bool from_cause = false;  // after_us comes from the key's search (the grant's cause)
};

// A grant that every explanation issues as a sweep's hand-off, with the
// instants it may be issued at and the expired holder's token.
struct SweptGrant {
  const GrantSeen* grant = nullptr;
  std::int64_t first_ms = 0, last_ms = 0;
  std::uint64_t holder = 0;
};

// One sweep visits the expired keys in the order their holders' tokens were
// issued (docs/protocol.md, simple mode point 8), so its hand-offs carry
// tokens in that order. Two hand-offs of different keys in one incarnation
// whose possible instants all lie within less than one sweep period were
// made by the same sweep: the sweeps of an incarnation are one period apart.
// Appends at most one finding.
void check_sweep_order(const Built& built, const KeyVerdicts& keys, std::int64_t sweep_ms, CheckResult& result) {
  std::vector<SweptGrant> swept;
  for (const auto& grant : built.grants) {
    const auto found = keys.find({grant.incarnation, grant.key});
    if (found == keys.end() || found->second.outcome != KeyOutcome::explained) continue;
    for (const auto& window : found->second.grants) {
      if (window.observation == grant.observation && window.swept_holder != 0) {
        swept.push_back(SweptGrant{&grant, window.first_ms, window.last_ms, window.swept_holder});
      }
    }
  }
  std::stable_sort(swept.begin(), swept.end(), [](const SweptGrant& a, const SweptGrant& b) {
    return std::tie(a.grant->incarnation, a.first_ms) < std::tie(b.grant->incarnation, b.first_ms);
  });
  const auto origins = built.incarnation_start_us;
  for (std::size_t i = 0; i < swept.size(); ++i) {
    const auto& a = swept[i];
    for (std::size_t j = i + 1; j < swept.size(); ++j) {
      const auto& b = swept[j];
      if (b.grant->incarnation != a.grant->incarnation || b.first_ms - a.first_ms >= sweep_ms) break;
      if (std::max(a.last_ms, b.last_ms) - a.first_ms >= sweep_ms || a.grant->key == b.grant->key) continue;
      if ((a.holder < b.holder) == (a.grant->token < b.grant->token)) continue;
      const auto& earlier = a.holder < b.holder ? a : b;
      const auto& later = a.holder < b.holder ? b : a;
      const auto origin = origins[a.grant->incarnation];
      Finding finding{
          "tokens", earlier.grant->key, earlier.grant->incarnation,
          fmt::format("one sweep, between {} and {}, handed key `{}` over from the holder of token {} with token {}, "
                      "and key `{}` from the holder of the older token {} with the larger token {}: a sweep visits "
                      "expired keys in the order their holders' tokens were issued",
                      at_text(std::min(a.first_ms, b.first_ms) * 1000, origin),
                      at_text(std::max(a.last_ms, b.last_ms) * 1000 + 1000, origin), later.grant->key, later.holder,
                      later.grant->token, earlier.grant->key, earlier.holder, earlier.grant->token),
          {}, std::max(a.grant->received_us, b.grant->received_us), {}};
      finding.story.push_back(fmt::format(
          "every explanation of key `{}` issues token {} (to `{}` on connection {}, arrived at {}) at a sweep, and "
          "every explanation of key `{}` issues token {} (to `{}` on connection {}, arrived at {}) at a sweep less "
          "than one sweep period ({} ms) away: the same sweep (times count from {}).",
          a.grant->key, a.grant->token, a.grant->owner, a.grant->conn, at_text(a.grant->received_us, origin),
          b.grant->key, b.grant->token, b.grant->owner, b.grant->conn, at_text(b.grant->received_us, origin), sweep_ms,
          a.grant->incarnation == 0 ? std::string("the history's first event")
                                    : fmt::format("the target's restart {}", a.grant->incarnation)));
      result.violations.push_back(std::move(finding));
      return;
    }
  }
}

}  // namespace

std::int64_t instant_of_us(std::int64_t us) { return us >= 0 ? us / 1000 : -((-us + 999) / 1000); }

// Tokens are unique, and increase in the order issued: a grant certainly
// issued before another (issued before the other could have been) must
// carry the smaller token. Each grant is placed between the instant of its
// cause, as the key's search bounds it (a release, an expiry or a sweep
// hands a key over long after its acquire was sent), and its arrival.
//
// Simple mode places them on the server's instants (docs/protocol.md, S13):
// a grant is issued at an instant no earlier than its request's sending
// (S3) and at most 1 ms after its arrival (S9, S10); two grants of one
// instant may be issued in either order. Cluster mode places them in the
// tester's real time (C15, C18): a grant is issued after its request was
// sent and before it was read, to the microsecond (both stamps are the
// tester's clock, so any real cluster does so), and within a millisecond
// either way of the instants of its cause.
void check_tokens(const Built& built, const KeyVerdicts& keys, CheckResult& result) {
  std::vector<Issue> issues;
  for (const auto& grant : built.grants) {
    Issue issue = built.cluster ? Issue{&grant, grant.issued_after_us, grant.received_us, false}
                                : Issue{&grant, instant_of_us(grant.issued_after_us) * 1000,
                                        (instant_of_us(grant.received_us) + 1) * 1000, false};
    const auto found = keys.find({grant.incarnation, grant.key});
    if (found != keys.end() && found->second.outcome == KeyOutcome::explained) {
      for (const auto& window : found->second.grants) {
        if (window.observation != grant.observation) continue;
        // Cluster mode: instant n is a real interval that starts no earlier
        // than n - 1 ms and ends no later than n + 1 ms on the tester's
        // clock (the grid).
        const std::int64_t slack_us = built.cluster ? 1000 : 0;
        if (window.first_ms * 1000 - slack_us > issue.after_us) {
          issue.after_us = window.first_ms * 1000 - slack_us;
          issue.from_cause = true;
        }
        issue.before_us = std::min(issue.before_us, window.last_ms * 1000 + slack_us);
      }
    }
    issues.push_back(issue);
  }
  std::stable_sort(issues.begin(), issues.end(), [](const Issue& a, const Issue& b) { return a.grant->token < b.grant->token; });
  const auto origin = built.incarnation_start_us.front();
  const auto who = [&](const GrantSeen& g) {
    return fmt::format("key `{}` to `{}` on connection {}", g.key, g.owner, g.conn);
  };
  for (std::size_t i = 1; i < issues.size(); ++i) {
    const auto& a = *issues[i - 1].grant;
    const auto& b = *issues[i].grant;
    if (a.token == b.token) {
      result.violations.push_back(Finding{
          "tokens", b.key, b.incarnation,
          fmt::format("token {} was granted twice: {} at {} and {} at {}", b.token, who(a),
                      at_text(a.received_us, origin), who(b), at_text(b.received_us, origin)),
          {}, b.received_us, {}});
      return;
    }
  }
  // In token order: the grant issued latest at the earliest so far.
  const Issue* latest_start = nullptr;
  for (const auto& issue : issues) {
    if (latest_start != nullptr && issue.before_us < latest_start->after_us) {
      const auto& small = *latest_start->grant;
      const auto& large = *issue.grant;
      Finding finding{
          "tokens", small.key, small.incarnation,
          fmt::format("token {} ({}) was issued no earlier than {}, after token {} ({}) arrived at {}: a later grant "
                      "carries a smaller token (tokens must increase in the order issued)",
                      small.token, who(small), at_text(latest_start->after_us, origin), large.token, who(large),
                      at_text(issue.before_us, origin)),
          {}, small.received_us, {}};
      finding.story.push_back(fmt::format(
          "token {} arrived at {} (times count from the history's first event); {}.", small.token,
          at_text(small.received_us, origin),
          latest_start->from_cause
              ? "every explanation of its key issues it at its cause (the release, expiry or sweep that handed the "
                "key over, or its request) no earlier than that"
              : "its first request was sent then"));
      result.violations.push_back(std::move(finding));
      return;
    }
    if (latest_start == nullptr || issue.after_us > latest_start->after_us) latest_start = &issue;
  }
  if (!built.cluster) check_sweep_order(built, keys, built.sweep_ms, result);
}

bool tokens_in_order(const Built& built, const KeyVerdicts& keys) {
  CheckResult scratch;
  check_tokens(built, keys, scratch);
  return scratch.violations.empty();
}

}  // namespace lockstep::history
