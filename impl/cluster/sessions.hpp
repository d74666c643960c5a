// The client sessions of the lock table (Raft dissertation §6.3): what makes
// a retried request apply at most once. Part of the replicated state, so it
// is deterministic and snapshotted with the table.
//
// Bounds and eviction (every table has a limit):
// - per client, only the outcomes of the last `window` sequence numbers are
//   kept: those above `highest - window`, where `highest` is the client's
//   highest applied sequence number. A request in that window that was
//   applied is a retry, answered from its outcome; one in the window that was
//   not applied is new (a pipelining client's requests may commit out of
//   order after a leader change); one at or below `highest - window` is
//   stale and refused, since whether it was applied is forgotten;
// - at most `clients_max` clients: a new client past that evicts the client
//   whose last request was applied first (LRU by the table's count of
//   applied commands, unique per command, so the choice is deterministic and
//   the same on every replica). A retry from an evicted client is
//   indistinguishable from a new request; clients_max bounds how many
//   clients may be retrying at once.
// What a request asked is kept with its outcome as a digest (request_digest:
// 8 bytes, whatever the names' length): a request whose (client, seq) has an
// outcome but whose digest differs is not that request's retry but another
// request reusing the number (a program restarted with the same client id),
// and is refused, never told the other request's outcome.
// Anonymous requests (no session fields) are never recorded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "impl/cluster/bytes.hpp"
#include "impl/cluster/commands.hpp"
#include "impl/protocol.hpp"

namespace lockstep::cluster {

struct SessionLimits {
  std::uint64_t clients_max = 4'096;
  std::uint64_t window = 16;
  friend bool operator==(const SessionLimits&, const SessionLimits&) = default;
};
// The ranges a node accepts: window 1..1,024, clients_max 1..10,000,000.
inline constexpr std::uint64_t session_window_max = 1'024;
inline constexpr std::uint64_t session_clients_max = 10'000'000;
// The reason of the `E` that refuses a request whose (client, seq) was
// applied for another request (docs/protocol.md, "Cluster nodes on the wire").
inline constexpr std::string_view reused_reason = "session reused for another request";

// Why the limits are out of range, or nothing.
std::optional<std::string> validate(const SessionLimits& limits);

// What became of an applied request, as a retry of it must be told.
struct Outcome {
  enum class Kind : std::uint8_t {
    answered,  // `response` was sent (A, T, B, R or N)
    queued,    // waiting as `waiter`; becomes answered when it is answered
    dropped,   // its waiter left with its closed connection, unanswered
  };
  Kind kind = Kind::answered;
  Response response;  // answered: the response; dropped: the T a retry gets
  WaiterId waiter;    // queued
  std::uint64_t request = 0;  // request_digest of the request it is the outcome of
  friend bool operator==(const Outcome&, const Outcome&) = default;
};

// A 64-bit digest (FNV-1a) of what a request asks, without its session: of
// its canonical wire text, `A <key> <owner> <lease_ms> <wait_ms>` or
// `R <key> <token>`. A retry digests the same; another request differs but
// with probability 2^-64. Only for Acquire and Release, as a command or as
// parsed from the wire.
std::uint64_t request_digest(const Command& command);
std::uint64_t request_digest(const Request& request);

class SessionTable {
 public:
  explicit SessionTable(SessionLimits limits) : limits_(limits) {}

  // `use` stamps below are the table's count of applied commands: unique
  // and increasing, the LRU order.
  // retry: an outcome is kept for the session and the request digests the
  // same; reused: kept, but for another request.
  enum class Standing { fresh, retry, reused, stale };
  Standing standing(const Session& session, std::uint64_t request) const;
  // The outcome of an applied request still in its client's window.
  const Outcome* find(const Session& session) const;

  // Records the outcome of a request applied as use `use`, and trims the
  // window and the client table to their bounds.
  void record(const Session& session, Outcome outcome, std::uint64_t use);
  // A retry applied as use `use` counts for the LRU order.
  void touch(const std::string& client, std::uint64_t use);
  // The waiter `waiter` of `session` was answered or dropped: its outcome
  // is replaced (the request's digest kept), if it is still kept and still
  // that waiter's (a client evicted and seen again may have reused the
  // sequence number since).
  void settle_waiter(const Session& session, WaiterId waiter, Outcome outcome);

  std::size_t client_count() const { return clients_.size(); }
  const SessionLimits& limits() const { return limits_; }

  void write(ByteWriter& w) const;
  // Reads what write() wrote; on bad input the reader is failed.
  static SessionTable read(ByteReader& r, SessionLimits limits);

  // Bounds hold and the LRU order names every client once.
  void check_invariants() const;
  // Calls visit(session, outcome) for every kept outcome, in session order.
  template <class Visit>
  void for_each(Visit&& visit) const {
    for (const auto& [client, state] : clients_) {
      for (const auto& [sequence, outcome] : state.outcomes) visit(Session{client, sequence}, outcome);
    }
  }

 private:
  struct ClientState {
    std::uint64_t highest = 0;
    std::uint64_t last_use = 0;
    std::map<std::uint64_t, Outcome> outcomes;  // sequence -> outcome, within the window
  };
  void evict_least_recent();

  SessionLimits limits_;
  std::map<std::string, ClientState, std::less<>> clients_;
  std::map<std::uint64_t, std::string> by_last_use_;  // LRU order: last use -> client
};

void write_response(ByteWriter& w, const Response& response);
Response read_response(ByteReader& r);

}  // namespace lockstep::cluster
