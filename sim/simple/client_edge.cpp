#include "sim/simple/client_edge.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace lockstep::sim {

std::string key_wire_name(std::uint32_t key) { return "k" + std::to_string(key); }
std::string owner_wire_name(std::uint32_t owner) { return "o" + std::to_string(owner); }

std::optional<std::uint32_t> wire_index(std::string_view name, char prefix) {
  if (name.size() < 2 || name.size() > 10 || name[0] != prefix) return std::nullopt;
  std::uint64_t value = 0;
  for (std::size_t i = 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(name[i] - '0');
  }
  if (value > UINT32_MAX) return std::nullopt;
  return static_cast<std::uint32_t>(value);
}

ClientEdgeChecker::ClientEdgeChecker(std::uint32_t keys, LatencyModel latency, ViolationLog& violations)
    : latency_(latency), violations_(violations), held_(keys) {}

ClientEdgeChecker::Link& ClientEdgeChecker::link(ConnectionId connection) {
  if (links_.size() <= connection.value) links_.resize(connection.value + 1);
  return links_[connection.value];
}

void ClientEdgeChecker::opened(ConnectionId connection) { link(connection).open = true; }

void ClientEdgeChecker::closed(ConnectionId connection) {
  Link& l = link(connection);
  l.open = false;
  l.pending.clear();
  l.pending.shrink_to_fit();
}

void ClientEdgeChecker::sent_acquire(TimeMs now, RequestId id, ConnectionId connection,
                                     std::uint32_t key, std::uint32_t owner, DurationMs lease_ms,
                                     DurationMs wait_ms) {
  Link& l = link(connection);
  LOCKSTEP_ASSERT(l.open);
  // The clients keep one acquire per owner in flight per connection, which
  // is what makes matching by owner sound.
  for (const auto& p : l.pending) LOCKSTEP_ASSERT(!(p.acquire && p.owner == owner));
  l.pending.push_back(Pending{id, true, key, owner, lease_ms, wait_ms, {}, now, newest_});
}

void ClientEdgeChecker::sent_release(TimeMs now, RequestId id, ConnectionId connection,
                                     std::uint32_t key, Token token) {
  Link& l = link(connection);
  LOCKSTEP_ASSERT(l.open);
  l.pending.push_back(Pending{id, false, key, 0, {}, {}, token, now, newest_});
  // From now on the client no longer relies on the lease of that token.
  for (auto& interval : held_[key]) {
    if (interval.token == token) interval.end = std::min(interval.end, now);
  }
}

std::optional<Answer> ClientEdgeChecker::received(TimeMs now, ConnectionId connection,
                                                  const Response& r, std::uint32_t incarnation) {
  Link& l = link(connection);
  LOCKSTEP_ASSERT(l.open);
  const auto key = wire_index(r.key, 'k');
  const bool acquire_answer = r.kind == ResponseKind::granted || r.kind == ResponseKind::timed_out ||
                              r.kind == ResponseKind::busy;
  const auto owner = acquire_answer ? wire_index(r.owner, 'o') : std::optional<std::uint32_t>(0);
  auto found = l.pending.end();
  if (key && owner && r.kind != ResponseKind::error) {
    found = std::find_if(l.pending.begin(), l.pending.end(), [&](const Pending& p) {
      if (p.key != *key || p.acquire != acquire_answer) return false;
      return acquire_answer ? p.owner == *owner : p.token == r.token;
    });
  }
  if (found == l.pending.end()) {
    violations_.add(now, "client",
                    fmt::format("'{}' on c{} answers no request in flight on it",
                                format_response(r), connection.value),
                    r.key);
    return std::nullopt;
  }
  const Pending request = *found;
  l.pending.erase(found);
  if (r.kind == ResponseKind::granted) on_grant(now, connection, request, r.token, incarnation);
  if (r.kind == ResponseKind::timed_out && request.wait_ms.value > 0 &&
      now < request.sent_at + request.wait_ms) {
    violations_.add(now, "client",
                    fmt::format("'{}' on c{} arrived {} ms after the request was sent, before its wait of {} ms",
                                format_response(r), connection.value, (now - request.sent_at).value,
                                request.wait_ms.value),
                    r.key);
  }
  return Answer{r.kind, request.id, request.key, request.owner,
                acquire_answer ? r.token : request.token, request.sent_at, request.lease_ms};
}

void ClientEdgeChecker::on_grant(TimeMs now, ConnectionId connection, const Pending& request,
                                 Token token, std::uint32_t incarnation) {
  Link& l = link(connection);
  const std::string key = key_name(request.key);
  if (!tokens_seen_.insert(token.value).second) {
    violations_.add(now, "client", fmt::format("token {} granted twice (now for {})", token.value, key), key);
  }
  if (token <= l.last_token) {
    violations_.add(now, "client",
                    fmt::format("token {} for {} arrived on c{} after token {}: not increasing",
                                token.value, key, connection.value, l.last_token.value),
                    key);
  }
  if (token <= request.newest_at_send) {
    violations_.add(now, "client",
                    fmt::format("token {} for {} is not greater than token {}, received before the "
                                "request was sent",
                                token.value, key, request.newest_at_send.value),
                    key);
  }
  l.last_token = std::max(l.last_token, token);
  newest_ = std::max(newest_, token);

  // A grant that arrives after the earliest instant its lease could end is
  // never relied on, so it cannot overlap another.
  const TimeMs end = request.sent_at + request.lease_ms;
  if (end <= now) return;
  auto& intervals = held_[request.key];
  std::erase_if(intervals, [&](const Interval& i) { return i.end <= now; });
  for (const auto& other : intervals) {
    if (other.incarnation != incarnation) continue;
    violations_.add(now, "client",
                    fmt::format("{} granted with token {} while the holder of token {} may rely on it "
                                "until {}",
                                key, token.value, other.token.value, other.end.value),
                    key);
  }
  // Bounded by the owners that can hold the key at once: every interval
  // here is live and, in a correct run, there is at most one per incarnation.
  if (intervals.size() < 64) intervals.push_back(Interval{token, now, end, incarnation});
}

TimeMs ClientEdgeChecker::answer_bound(const Pending& request) const {
  // Up to max latency each way, plus the wait at the server, plus one ms of
  // rounding: anything later is never coming.
  return request.sent_at + request.wait_ms + DurationMs{2 * latency_.max_ms.value + 1};
}

void ClientEdgeChecker::audit(TimeMs now) {
  for (std::size_t id = 0; id < links_.size(); ++id) {
    Link& l = links_[id];
    if (!l.open) continue;
    for (auto p = l.pending.begin(); p != l.pending.end();) {
      if (now <= answer_bound(*p)) {
        ++p;
        continue;
      }
      violations_.add(now, "client",
                      p->acquire ? fmt::format("acquire of {} by o{} on c{}, sent at {} with wait {}, "
                                               "was never answered",
                                               key_name(p->key), p->owner, id, p->sent_at.value,
                                               p->wait_ms.value)
                                 : fmt::format("release of {} with token {} on c{}, sent at {}, was "
                                               "never answered",
                                               key_name(p->key), p->token.value, id, p->sent_at.value),
                      key_name(p->key));
      p = l.pending.erase(p);
    }
  }
}

void ClientEdgeChecker::finish(TimeMs now) {
  audit(now);
  for (std::size_t id = 0; id < links_.size(); ++id) {
    for (const auto& p : links_[id].pending) {
      violations_.add(now, "drain",
                      fmt::format("request {} on c{} sent at {} still unanswered after the drain",
                                  p.id, id, p.sent_at.value),
                      key_name(p.key));
    }
  }
}

}  // namespace lockstep::sim
