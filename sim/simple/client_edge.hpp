// Judges the service from its clients' side of the network, in global time,
// with nothing but what the clients sent and received and when. Messages
// take time to cross the network, so a client never knows the instant at
// which the server handled its request; every rule here is one a correct
// server satisfies whatever the delays were:
//
// - matching: every response answers exactly one request in flight on its
//   connection (A/T/B by owner, R/N by token; each owner has at most one
//   acquire in flight per connection); nothing else arrives; a request is
//   answered (before a bound that the latency limit gives) unless its
//   connection closed.
// - leases: a grant received at r for a request sent at s is relied on over
//   [r, min(s + lease, release sent)): the lease cannot have started before
//   s. Two such intervals of one key never overlap within one server
//   incarnation (simple mode loses its locks in a restart, by design; the
//   fencing tokens below are what survives it).
// - tokens: unique over the whole run, restarts included; increasing along
//   each connection (FIFO delivery keeps the server's order); greater than
//   every token any client had received before the request was sent.
// - a queued request's T never arrives before s + wait.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "impl/protocol.hpp"
#include "sim/core/network.hpp"
#include "sim/core/violations.hpp"

namespace lockstep::sim {

using RequestId = std::uint64_t;

// What a response answered, as the checker matched it.
struct Answer {
  ResponseKind kind = ResponseKind::error;
  RequestId request = 0;
  std::uint32_t key = 0;
  std::uint32_t owner = 0;  // acquire answers only
  Token token;              // A: the new token; R/N: the released one
  TimeMs sent_at;
  DurationMs lease_ms;      // acquire answers only
};

class ClientEdgeChecker {
 public:
  ClientEdgeChecker(std::uint32_t keys, LatencyModel latency, ViolationLog& violations);

  void opened(ConnectionId connection);
  // The client's side of the connection closed: what is in flight is excused.
  void closed(ConnectionId connection);

  void sent_acquire(TimeMs now, RequestId id, ConnectionId connection, std::uint32_t key,
                    std::uint32_t owner, DurationMs lease_ms, DurationMs wait_ms);
  void sent_release(TimeMs now, RequestId id, ConnectionId connection, std::uint32_t key, Token token);
  // A response arrived on an open connection; `incarnation` is the server's
  // life in which it was sent. Returns what it answered, or nothing (and a
  // violation) when it answers nothing.
  std::optional<Answer> received(TimeMs now, ConnectionId connection, const Response& response,
                                 std::uint32_t incarnation);

  // Requests in flight past the latest instant their answer could arrive.
  void audit(TimeMs now);
  // The end of the drain: nothing may still be in flight on an open connection.
  void finish(TimeMs now);

  std::uint64_t grants_seen() const { return tokens_seen_.size(); }

 private:
  struct Pending {
    RequestId id = 0;
    bool acquire = true;
    std::uint32_t key = 0;
    std::uint32_t owner = 0;
    DurationMs lease_ms;
    DurationMs wait_ms;
    Token token;          // releases
    TimeMs sent_at;
    Token newest_at_send;  // the greatest token any client had received when it was sent
  };
  struct Link {
    bool open = false;
    Token last_token;
    std::vector<Pending> pending;  // at most owners + holdings of one client
  };
  struct Interval {
    Token token;
    TimeMs start;
    TimeMs end;
    std::uint32_t incarnation = 0;
  };

  Link& link(ConnectionId connection);
  void on_grant(TimeMs now, ConnectionId connection, const Pending& request, Token token,
                std::uint32_t incarnation);
  TimeMs answer_bound(const Pending& request) const;
  std::string key_name(std::uint32_t key) const { return "k" + std::to_string(key); }

  LatencyModel latency_;
  ViolationLog& violations_;
  std::vector<Link> links_;                  // by connection id
  std::vector<std::vector<Interval>> held_;  // by key: intervals that may still be relied on
  std::unordered_set<std::uint64_t> tokens_seen_;  // membership only: its order never shows
  Token newest_;
};

// Names on the wire: keys `k<index>`, owners `o<id>`.
std::string key_wire_name(std::uint32_t key);
std::string owner_wire_name(std::uint32_t owner);
// The index back from a name; nothing when it is not one of ours.
std::optional<std::uint32_t> wire_index(std::string_view name, char prefix);

}  // namespace lockstep::sim
