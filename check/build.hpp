// From a history to the checker's inputs: connections with their requests
// and responses parsed against the target's limits, one KeyInput per key and
// incarnation, each request's latest possible instant, and what the
// couplings between keys need (tokens seen, first use of each key, possible
// waiters), all in the history's order so the result is deterministic.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "check/history.hpp"
#include "check/key_input.hpp"

namespace lockstep::history {

struct SentLine {
  std::int64_t sent_us = 0;
  // The key and the owner are views into `line`, as the line is, so that a
  // minute's history does not hold a second copy of each in the builder.
  std::string_view key;   // empty when malformed
  std::string_view line;  // in the History built from
  std::int64_t latest_ms = unbounded_ms;
  // When its own answer certainly arrived (the only request of its owner and
  // key on the connection not yet answered when that answer came): it was
  // no longer waiting then. unbounded_ms when it cannot be told.
  std::int64_t answered_by_ms = unbounded_ms;
  // The request's fields, parsed once (valid when not malformed).
  std::string_view owner;
  std::int64_t lease_ms = 0, wait_ms = 0;
  std::uint64_t token = 0;
  bool malformed = false;
  bool acquire = false;
  bool queued_kind = false;  // an acquire with a wait: may be queued
  // Cluster mode: the session fields, when the request carries them.
  bool has_session = false;
  // Cluster mode: an `E` answered it (not-leader, too many in flight, a
  // stale session): it was never applied.
  bool errored = false;
};

// A response as read: what the builder needs of it, its names views into
// the line (a minute's history holds a few hundred thousand of them).
struct ResponseWords {
  ResponseKind kind = ResponseKind::error;
  Token token;                  // A, R, N
  std::string_view owner, key;  // A, T, B: both; R, N: the key
};

struct ReceivedLine {
  std::int64_t received_us = 0;
  std::int64_t arrived_from_us = 0;  // it arrived in [arrived_from_us, received_us]
  std::string_view line;  // in the History built from
  ResponseWords response;  // valid when parsed
  bool parsed = false;
  // Cluster mode: an `E` that answers a well-formed request (SentLine::errored).
  bool answers_request = false;
};

struct ConnectionRecord {
  std::uint32_t id = 0;
  std::uint32_t incarnation = 0;
  std::int64_t opened_us = 0;
  std::int64_t end_us = -1;
  bool closes = false;
  bool cut = false;               // open where a prefix was cut (KeyConnection::cut)
  bool closed_by_server = false;  // it ended with `eof` or `down`
  bool stopped = false;           // it ended with `down`
  std::vector<SentLine> sent;  // every line sent, in order (after an over-long line: none)
  std::vector<ReceivedLine> received;
};

struct GrantSeen {
  std::uint64_t token = 0;
  std::string key;
  std::string owner;
  std::uint32_t conn = 0;
  std::uint32_t incarnation = 0;
  std::uint32_t observation = 0;  // its index in its key's KeyInput::observations
  std::int64_t received_us = 0;
  // Issued no earlier than this (the tester's clock): the first request
  // that it may answer was sent then. The key's search narrows it to the
  // instant of its cause (a release, an expiry, a sweep, the request).
  std::int64_t issued_after_us = 0;
};

// C3: which send each `E` of a connection answers (by index into the
// connection's `sent`, in the order the `E`s were read; a malformed line's
// `E` included), one of the ways the rule allows.
using ErrorReading = std::vector<std::uint32_t>;

// Other readings of some connections' `E`s than the one built (cluster mode):
// by connection (index into Built::conns), the readings the rule allows
// besides it.
struct OtherErrorReadings {
  std::uint32_t conn = 0;
  std::vector<ErrorReading> readings;
};

// A choice of readings to build with: by connection index, the reading.
using ErrorChoice = std::map<std::uint32_t, ErrorReading>;

struct Built {
  std::vector<ConnectionRecord> conns;  // by first appearance
  // Cluster mode: where the `E`s could be read otherwise (at most
  // error_readings_max readings in all; none listed when there are more,
  // and then error_readings_over is set).
  std::vector<OtherErrorReadings> other_error_readings;
  bool error_readings_over = false;
  std::map<std::pair<std::uint32_t, std::string>, KeyInput> keys;
  std::vector<std::int64_t> incarnation_start_us;  // incarnation_origins_us
  std::vector<std::int64_t> incarnation_end_us;
  std::vector<GrantSeen> grants;
  std::int64_t end_us = 0;
  bool cluster = false;  // read as a cluster's history (Header::mode)
  std::int64_t sweep_ms = 0;  // the sweep period assumed (the header's limits)
  // Connections opened after a `down` and before its `up`, when the target
  // accepted nothing: not judged, and charged to no incarnation.
  std::uint64_t limbo_connections = 0;
};

// The lines of what it builds are views into `history`, which must outlive
// the result. `prefix`: the history is a prefix cut from a longer one, so
// the connections still open at its end are cut (answers may be on their
// way); otherwise they were observed until the end.
Built build_inputs(const History& history, bool prefix = false, const ErrorChoice* errors = nullptr);

// The most readings of the `E`s (C3) the checker tries, over all connections.
inline constexpr std::size_t error_readings_max = 16;

// What the couplings between keys need, precomputed for all keys.
struct Oracles {
  // Per incarnation: the first instant each key was asked for, sorted.
  std::vector<std::vector<std::int64_t>> first_use_ms;
  // Per incarnation: how many acquires may be waiting, as a step function
  // (instant from which, count), sorted by instant.
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> may_wait_ms;
  std::set<std::uint64_t> tokens;
};

Oracles make_oracles(const Built& built);
KeyOracles key_oracles(const Oracles& oracles, const Limits& limits, std::uint32_t incarnation, const KeyInput& input);

// Where each incarnation's times count from in reports (`+12.500 ms`): the
// history's first event, then for each restart the `up` that follows its
// `down` (when the restarted target accepted connections), or the `down`
// itself when no `up` follows.
std::vector<std::int64_t> incarnation_origins_us(const History& history);

// How a report names the origin of incarnation `incarnation`'s times.
std::string origin_text(const History& history, std::uint32_t incarnation);

// An instant of the tester's clock as the reports print it: milliseconds
// after the incarnation's origin ("+12.500 ms").
std::string at_text(std::int64_t us, std::int64_t origin_us);

}  // namespace lockstep::history
