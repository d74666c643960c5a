#include "sim/cluster/lateness.hpp"

#include <fmt/format.h>

#include "sim/cluster/checker.hpp"

namespace lockstep::sim {

void ClusterLateness::note(std::int64_t amount, std::string what) {
  if (amount <= worst_ms_) return;
  worst_ms_ = amount;
  worst_what_ = std::move(what);
}

void ClusterLateness::sent(const cluster::Session& session, TimeMs at) {
  auto& a = attempts_[session];
  if (a.count++ == 0) a.first_sent = at.value;
}

void ClusterLateness::attempt_ended(const cluster::Session& session, TimeMs at) {
  auto& a = attempts_[session];
  if (a.count == 1 && !a.first_ended) a.first_ended = at.value;
}

void ClusterLateness::before_first_apply(const cluster::Command& command, const cluster::LockMachine& machine) {
  holder_before_.reset();
  const auto* key = cluster::command_key(command);
  if (key == nullptr) return;
  const auto found = machine.keys().find(*key);
  if (found == machine.keys().end()) return;
  holder_before_ = found->second.token.value;
}

void ClusterLateness::after_first_apply(const cluster::Command& command, const cluster::LockMachine& machine,
                                        const cluster::Applied& applied, TimeMs proposed) {
  const auto* key = cluster::command_key(command);
  if (key == nullptr) return;  // Close: the simulator's clients send none
  const std::int64_t at = proposed.value;
  const auto found = machine.keys().find(*key);
  const auto* after = found != machine.keys().end() ? &found->second : nullptr;
  const bool changed_hands = holder_before_ && (after == nullptr || after->token.value != *holder_before_);

  // The on-time instant of a hand-off's grant: the ended grant's due (an
  // Expire), or the Release's own instant.
  std::optional<std::int64_t> handoff_on_time;
  if (changed_hands) {
    const auto ended = grants_.find({*key, *holder_before_});
    if (ended != grants_.end()) {
      note(at - grant_due(ended->second),
           fmt::format("the grant of token {} on key `{}` ended at +{} ms, due by +{} ms", *holder_before_, *key, at,
                       grant_due(ended->second)));
      if (std::holds_alternative<cluster::Expire>(command)) handoff_on_time = grant_due(ended->second);
      grants_.erase(ended);
    }
    if (std::holds_alternative<cluster::Release>(command)) handoff_on_time = at;
  }

  // Caused answers: a waiter handed the key, or answered `T` (by its
  // Timeout, or by a hand-off its deadline had come for). A request's own
  // answer, or a retry's replay of it, is caused by nothing else.
  const auto* acquire = std::get_if<cluster::Acquire>(&command);
  for (const auto& out : applied.responses) {
    const auto& r = out.response;
    if (acquire != nullptr && acquire->owner == r.owner) continue;
    const auto queued = waiting_.find(r.owner);
    if (r.kind == ResponseKind::timed_out && queued != waiting_.end()) {
      note(at - queued->second.due, fmt::format("the Timeout of `{}` on key `{}` at +{} ms, due by +{} ms", r.owner,
                                                *key, at, queued->second.due));
      caused_timeouts_.insert_or_assign(r.owner, Caused{queued->second.due, queued->second.session, false});
    }
    if (r.kind == ResponseKind::granted) {
      const auto session = owner_session(r.owner);
      if (session && handoff_on_time) caused_.insert_or_assign(r.owner, Caused{*handoff_on_time, *session, false});
    }
    if (queued != waiting_.end() && (r.kind == ResponseKind::timed_out || r.kind == ResponseKind::granted)) {
      waiting_.erase(queued);
    }
  }
  // A waiting acquire queued: its deadline counts from its instant.
  if (acquire != nullptr && after != nullptr && acquire->wait_ms.value > 0) {
    for (const auto& [id, waiter] : after->queue) {
      if (waiter.owner != acquire->owner || waiting_.contains(waiter.owner)) continue;
      waiting_.emplace(waiter.owner, Waiting{at + acquire->wait_ms.value + allowance_ms_, acquire->session});
    }
  }
  // The new holder: a request granted at once, or a waiter handed the key.
  if (after != nullptr && (!holder_before_ || changed_hands)) {
    grants_[{*key, after->token.value}] = Grant{at, (after->expiry - after->granted_at).value};
  }
}

void ClusterLateness::received(const Response& response, TimeMs at) {
  auto* caused = response.kind == ResponseKind::granted     ? &caused_
                 : response.kind == ResponseKind::timed_out ? &caused_timeouts_
                                                            : nullptr;
  if (caused == nullptr) return;
  const auto found = caused->find(response.owner);
  if (found == caused->end() || found->second.heard) return;
  found->second.heard = true;
  note(at.value - (found->second.on_time + 1 + tolerance_ms_),
       fmt::format("`{}` heard its caused `{}` at +{} ms, on time until +{} ms (with the tolerance)", response.owner,
                   format_response(response), at.value, found->second.on_time + 1 + tolerance_ms_));
}

void ClusterLateness::owed(const cluster::Session& session, std::int64_t on_time, std::int64_t end,
                           const std::string& what) {
  const auto a = attempts_.find(session);
  if (a == attempts_.end() || a->second.count != 1) return;
  const auto watched_until = a->second.first_ended.value_or(end);
  note(watched_until - (on_time + tolerance_ms_),
       fmt::format("{}, watched until +{} ms, on time until +{} ms", what, watched_until, on_time + 1 + tolerance_ms_));
}

void ClusterLateness::finish(TimeMs end) {
  // The checker's horizon is the millisecond after the history's end.
  const std::int64_t horizon = end.value + 1;
  for (const auto& [id, grant] : grants_) {
    note(horizon - grant_due(grant), fmt::format("the grant of token {} on key `{}` still held at the end, due by +{} ms",
                                                 id.second, id.first, grant_due(grant)));
  }
  // A caused answer to a request sent once is owed on its connection while
  // the client watched it; so is the `T` of a waiter still queued.
  for (const auto& [owner, caused] : caused_) {
    if (!caused.heard) owed(caused.session, caused.on_time, end.value, fmt::format("`{}` never heard its caused grant", owner));
  }
  for (const auto& [owner, caused] : caused_timeouts_) {
    if (!caused.heard) owed(caused.session, caused.on_time, end.value, fmt::format("`{}` never heard its `T`", owner));
  }
  for (const auto& [owner, waiting] : waiting_) {
    owed(waiting.session, waiting.due, end.value, fmt::format("`{}` still queued at the end", owner));
  }
}

}  // namespace lockstep::sim
