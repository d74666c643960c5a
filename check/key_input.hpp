// The checker's view of one key of one incarnation of the target: its
// requests with their windows, the responses observed for it, and the
// connections both travel on (build.cpp makes them from a history). Times
// of observations are microseconds on the tester's clock; server instants
// are whole milliseconds, instant n standing for [n ms, n+1 ms).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "impl/limits.hpp"
#include "impl/protocol.hpp"

namespace lockstep::history {

inline constexpr std::int64_t unbounded_ms = std::numeric_limits<std::int64_t>::max() / 4;

// Cluster mode: another send of the same request (a retry with the same
// session, on another connection).
struct KeyCopy {
  std::uint32_t conn = 0;  // slot in KeyInput::conns
  std::int64_t sent_us = 0;
};

struct KeyRequest {
  std::uint32_t conn = 0;  // slot in KeyInput::conns (cluster mode: of its first send)
  std::int64_t sent_us = 0;
  std::int64_t latest_ms = unbounded_ms;  // handled no later (from answered later requests of its connection)
  bool acquire = true;
  std::uint32_t owner = 0;  // interned (acquire)
  std::int64_t lease_ms = 0, wait_ms = 0;
  std::uint64_t token = 0;  // release
  std::string_view line;    // in the History the input was built from
  // Cluster mode: the later sends of its session (client, seq), by send
  // time: one operation, applied once, whose outcome any of them may hear.
  std::vector<KeyCopy> resent;
};

struct KeyObservation {
  std::uint32_t conn = 0;
  std::int64_t received_us = 0;      // when it was read: it arrived no later
  std::int64_t arrived_from_us = 0;  // it arrived no earlier
  ResponseKind kind = ResponseKind::error;
  std::uint32_t owner = 0;  // A, T, B
  std::uint64_t token = 0;  // A, R, N
  std::string_view line;    // in the History the input was built from
};

struct KeyConnection {
  std::uint32_t id = 0;                 // the history's connection number
  std::vector<std::uint32_t> requests;  // indices into KeyInput::requests, in the order sent
  std::vector<std::uint32_t> observations;  // indices into KeyInput::observations, by arrival
  std::int64_t end_us = 0;              // nothing is observed on it after this
  bool closes = false;                  // its waiters are dropped some time after end_us
  // A prefix of the history was cut while it was open (the shrinking of a
  // counter-example): an immediate answer may then still be on its way,
  // however long ago its request was handled. A connection still open at
  // the real end of a history is not cut: it was observed until the end.
  bool cut = false;
  // The server ended it (`eof`): its waiters were dropped no later than the
  // end was read. Otherwise the tester closed it, and the server drops its
  // waiters once it reads the close (within tolerance_ms).
  bool closed_by_server = false;
  // It ended because the target was stopped (`down`): requests in flight
  // may never have been read, so their answers may be missing.
  bool stopped = false;
};

// What may couple keys, answered by the checker from the whole history:
// whether a global limit may have been reached at an instant (so that a `B`
// for a new key or a new waiter has a cause), and whether a token was seen
// in some grant (so that it cannot be a grant whose answer was lost).
struct KeyOracles {
  std::function<bool(std::int64_t instant_ms)> keys_may_be_full;
  std::function<bool(std::int64_t instant_ms)> waiters_may_be_full;
  std::function<bool(std::uint64_t token)> token_was_seen;
  // At some instant of [from_ms, to_ms] (cluster mode handles a request at
  // an instant of a range).
  std::function<bool(std::int64_t from_ms, std::int64_t to_ms)> waiters_may_be_full_within;
};

// Cluster mode's reading of a history (docs/protocol.md, "Black box
// against a cluster"), from the header or the command line.
struct ClusterReading {
  bool on = false;
  std::int64_t clock_allowance_ms = 0;  // 2·S
  std::int64_t max_lateness_ms = -1;    // -1: lateness is reported, never failed
};

struct KeyInput {
  std::string key;
  ClusterReading cluster;
  Limits limits;
  std::int64_t tolerance_ms = 0;
  std::int64_t handled_within_ms = -1;       // the history's (-1: unknown)
  std::vector<KeyRequest> requests;          // by send time
  std::vector<KeyObservation> observations;  // by arrival time
  std::vector<KeyConnection> conns;
  std::vector<std::string> owners;           // interned names
  std::int64_t horizon_ms = 0;               // after the last observation of the incarnation
};

// One point of an explanation: what the server did at `instant_ms`.
struct Step {
  std::int64_t instant_ms = 0;
  std::int32_t request = -1;      // the request handled, or -1
  std::int32_t observation = -1;  // the response it explains, or -1
  char what = '?';                // 'h' handled, 'a' answer, 't' timeout, 's' sweep, 'c' close, 'e' expire
};

}  // namespace lockstep::history
