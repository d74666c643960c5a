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
                                        const cluster::Applied& applied, TimeMs now) {
  const auto* key = cluster::command_key(command);
  if (key == nullptr) return;  // Close: the simulator's clients send none
  const auto found = machine.keys().find(*key);
  const auto* after = found != machine.keys().end() ? &found->second : nullptr;
  const bool changed_hands = holder_before_ && (after == nullptr || after->token.value != *holder_before_);

  // The on-time instant of a hand-off's grant: the ended grant's due (an
  // Expire), or when the Release was first sent.
  std::optional<std::int64_t> handoff_on_time;
  if (changed_hands) {
    const auto ended = grants_.find({*key, *holder_before_});
    if (ended != grants_.end()) {
      note(now.value - grant_due(ended->second),
           fmt::format("the grant of token {} on key `{}` ended at +{} ms, due by +{} ms", *holder_before_, *key,
                       now.value, grant_due(ended->second)));
      if (std::holds_alternative<cluster::Expire>(command)) handoff_on_time = grant_due(ended->second);
      grants_.erase(ended);
    }
    if (const auto* r = std::get_if<cluster::Release>(&command)) {
      const auto a = attempts_.find(r->session);
      if (a != attempts_.end()) handoff_on_time = a->second.first_sent;
    }
  }

  // Caused grants: a waiter handed the key. (A request's own answer, or a
  // retry's replay of it, is caused by nothing else.)
  const auto* acquire = std::get_if<cluster::Acquire>(&command);
  for (const auto& out : applied.responses) {
    const auto& r = out.response;
    if (r.kind != ResponseKind::granted || (acquire != nullptr && acquire->owner == r.owner)) continue;
    const auto session = owner_session(r.owner);
    if (session && handoff_on_time) caused_.insert_or_assign(r.owner, Caused{*handoff_on_time, *session, false});
  }
  // The new holder: a request granted at once, or a waiter handed the key.
  if (after != nullptr && (!holder_before_ || changed_hands)) {
    grants_[{*key, after->token.value}] = Grant{now.value, (after->expiry - after->granted_at).value};
  }
}

void ClusterLateness::received(const Response& response, TimeMs at) {
  if (response.kind != ResponseKind::granted) return;
  const auto found = caused_.find(response.owner);
  if (found == caused_.end() || found->second.heard) return;
  found->second.heard = true;
  note(at.value - (found->second.on_time + 1 + tolerance_ms_),
       fmt::format("`{}` heard its caused `{}` at +{} ms, on time until +{} ms (with the tolerance)", response.owner,
                   format_response(response), at.value, found->second.on_time + 1 + tolerance_ms_));
}

void ClusterLateness::finish(TimeMs end) {
  // The checker's horizon is the millisecond after the history's end.
  const std::int64_t horizon = end.value + 1;
  for (const auto& [id, grant] : grants_) {
    note(horizon - grant_due(grant), fmt::format("the grant of token {} on key `{}` still held at the end, due by +{} ms",
                                                 id.second, id.first, grant_due(grant)));
  }
  // A caused grant to a request sent once is owed on its connection while
  // the client watched it.
  for (const auto& [owner, caused] : caused_) {
    if (caused.heard) continue;
    const auto a = attempts_.find(caused.session);
    if (a == attempts_.end() || a->second.count != 1) continue;
    const auto watched_until = a->second.first_ended.value_or(end.value);
    note(watched_until - (caused.on_time + tolerance_ms_),
         fmt::format("`{}` never heard its caused grant, watched until +{} ms, on time until +{} ms", owner,
                     watched_until, caused.on_time + 1 + tolerance_ms_));
  }
}

}  // namespace lockstep::sim
