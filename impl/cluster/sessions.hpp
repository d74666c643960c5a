// The client sessions of the lock table (Raft dissertation §6.3): what makes
// a retried request apply at most once. Part of the replicated state, so it
// is deterministic and snapshotted with the table.
//
// Bounds and eviction (STYLE.md, "A limit on everything"):
// - per client, only the outcomes of the last `window` sequence numbers are
//   kept: those above `highest - window`, where `highest` is the client's
//   highest applied sequence number. A request in that window that was
//   applied is a retry, answered from its outcome; one in the window that was
//   not applied is new (a pipelining client's requests may commit out of
//   order after a leader change); one at or below `highest - window` is
//   stale and refused, since whether it was applied is forgotten;
// - at most `clients_max` clients: a new client past that evicts the client
//   whose last command was applied at the lowest log index (LRU by log
//   index; indexes are unique, so the choice is deterministic). A retry from
//   an evicted client is indistinguishable from a new request; clients_max
//   bounds how many clients may be retrying at once.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "impl/cluster/bytes.hpp"
#include "impl/cluster/commands.hpp"
#include "impl/protocol.hpp"
#include "impl/raft/types.hpp"

namespace lockstep::cluster {

struct SessionLimits {
  std::uint64_t clients_max = 4'096;
  std::uint64_t window = 16;
  friend bool operator==(const SessionLimits&, const SessionLimits&) = default;
};

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
  friend bool operator==(const Outcome&, const Outcome&) = default;
};

class SessionTable {
 public:
  explicit SessionTable(SessionLimits limits) : limits_(limits) {}

  enum class Standing { fresh, retry, stale };
  Standing standing(Session session) const;
  // The outcome of an applied request still in its client's window.
  const Outcome* find(Session session) const;

  // Records the outcome of a request applied at log index `index`, and
  // trims the window and the client table to their bounds.
  void record(Session session, Outcome outcome, raft::Index index);
  // A retry applied at `index` counts as use for the LRU order.
  void touch(std::uint64_t client, raft::Index index);
  // Replaces an outcome still kept (a queued waiter answered later).
  void update(Session session, Outcome outcome);

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
    raft::Index last_index = 0;
    std::map<std::uint64_t, Outcome> outcomes;  // sequence -> outcome, within the window
  };
  void evict_least_recent();

  SessionLimits limits_;
  std::map<std::uint64_t, ClientState> clients_;
  std::map<raft::Index, std::uint64_t> by_last_index_;  // LRU order: log index -> client
};

void write_response(ByteWriter& w, const Response& response);
Response read_response(ByteReader& r);

}  // namespace lockstep::cluster
