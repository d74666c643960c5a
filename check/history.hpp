// A history of a black-box run against a live lock server (docs/protocol.md,
// "Live targets", "Black box, in real time"): what the tester sent and
// received on each connection, stamped on one monotonic clock in
// microseconds, and the target's limits and the timing tolerance, so that
// the file alone is all the checker needs.
//
// On disk it is NDJSON, schema `lockstep.history/1` (docs/protocol.md,
// "History files"): a header line, then one event per line in the order recorded.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "impl/limits.hpp"

namespace lockstep::history {

inline constexpr const char* schema_name = "lockstep.history/1";

// Which rules the target follows (docs/protocol.md): one server with a
// sweep (simple), or a replicated table whose Expires and Timeouts are
// proposed by a leader, and whose requests may carry sessions (cluster).
enum class Mode { simple, cluster };

struct Header {
  Mode mode = Mode::simple;
  Limits limits;
  std::int64_t tolerance_ms = 50;
  std::string target;     // free text: what was tested
  std::uint64_t seed = 0;  // the workload's seed, 0 when recorded by other clients
  // When the tester knows it: every request reaches the server and is
  // handled within this many ms of being sent (a simulated network's
  // largest delay). -1: unknown, a server may read a request late.
  std::int64_t handled_within_ms = -1;
  // Cluster mode: how far apart two node clocks may be (2·S): an Expire or
  // a Timeout takes effect no earlier than its deadline less this.
  std::int64_t clock_allowance_ms = 0;
  // Cluster mode: how late an Expire, a Timeout or a deferred answer may
  // be past its deadline (and the allowance) before the run fails; -1:
  // unbounded, lateness is only reported.
  std::int64_t max_lateness_ms = -1;
};

const char* mode_name(Mode mode);

enum class EventKind {
  connect,  // the tester opened connection `conn`
  send,     // the tester wrote `line` (without `\n`) on `conn`
  recv,     // a response `line` arrived on `conn`
  close,    // the tester closed `conn`
  eof,      // the server closed `conn` (or it broke)
  down,     // the target was stopped (every connection is gone with it)
  up,       // the target was started again and accepts connections
  nemesis,  // the tester did something to the target (`what`: kill, pause, ...); no effect on the checker
};

struct Event {
  std::int64_t t_us = 0;
  EventKind kind = EventKind::send;
  std::uint32_t conn = 0;  // unused for down and up
  std::string line;        // send and recv; nemesis: what was done (`what` in the file)
  // recv only: the response arrived after this instant (the tester's last
  // look at the connection that found nothing), at the latest at t_us when
  // it was read. A tester that was not scheduled for a while reads late;
  // without this, its lateness would count against the server. Absent in
  // the file: t_us.
  std::int64_t after_us = -1;
  std::int64_t arrived_from_us() const { return after_us >= 0 ? after_us : t_us; }
};

struct History {
  Header header;
  std::vector<Event> events;  // in recorded order, t_us never decreasing
};

const char* event_kind_name(EventKind kind);

// One NDJSON line (no newline) for the header or an event.
std::string header_line(const Header& header);
std::string event_line(const Event& event);

struct ReadError {
  std::size_t line = 0;  // 1-based line of the file
  std::string message;
};

// Reads a whole history; any malformed line, a wrong schema, invalid
// limits or times that go back is an error naming the line.
std::variant<History, ReadError> read_history(std::istream& in);
std::variant<History, ReadError> read_history_file(const std::string& path);

// Writes the header and every event, one line each.
void write_history(std::ostream& out, const History& history);

}  // namespace lockstep::history
