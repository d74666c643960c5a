// The commands of the cluster's replicated log (docs/protocol.md, "Cluster mode"),
// as plain values, and their byte encoding.
//
// Every command carries the instant the leader stamped on it when it
// proposed it, and that leadership's epoch: applying a command never reads a
// clock, so every replica computes the same grant times, expiries and
// deadlines from the same log, and sees leaderships change at the same
// command (a waiter is attached to the leadership whose node holds its
// connection: lock_machine.hpp).
// Acquire and Release come from clients and carry a session (client id and
// sequence number) so that a retried request is applied at most once;
// Expire and Timeout come from the leader's deadline heap and are made
// harmless to repeat by what they check when applied (the token, the waiter);
// Close comes from the node that owned a connection.
//
// Encoding, version 3: one byte `command_format_version`, one byte tag, then
// the fields in declaration order; integers are 8 bytes little-endian,
// strings a 4-byte length then the bytes. Decoding checks everything a
// replica relies on (names valid, durations and instants in range, no
// trailing bytes) and returns an error for anything else; it never throws
// on bad input and never reads past it. (Version 1 had numeric client ids,
// version 2 no epoch.)
//
// A log entry holds framed commands (encode_framed): a 4-byte length, then
// the proposing leadership's epoch and its proposal id, then the command
// (whose own epoch must be the frame's).
// Frames concatenate, so one entry may carry several proposals (a driver's
// group commit) and an empty entry carries none (a Raft no-op).
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "impl/units.hpp"

namespace lockstep::cluster {

inline constexpr std::uint8_t command_format_version = 3;

// Who sent a request, for at-most-once application: the client's id (1 to
// 250 printable bytes, as on the wire) and its sequence number (1 ..
// sequence_max, increasing per request). A request without session fields
// is anonymous: empty id, sequence 0, never recorded.
struct Session {
  std::string client;
  std::uint64_t sequence = 0;
  bool anonymous() const { return client.empty(); }
  friend bool operator==(const Session&, const Session&) = default;
  // Written out, as DeadlineTarget's: the libc++ of emscripten (the web
  // preset) has no <=> on std::string. Client, then sequence.
  friend std::strong_ordering operator<=>(const Session& a, const Session& b) {
    if (const auto order = a.client.compare(b.client) <=> 0; order != 0) return order;
    return a.sequence <=> b.sequence;
  }
};

// Names one queued waiter over the life of the lock table: issued in
// queueing order, so comparing ids compares queueing order.
struct WaiterId {
  std::uint64_t value = 0;
  friend auto operator<=>(WaiterId, WaiterId) = default;
};

struct Acquire {
  Session session;
  ConnectionId connection;
  std::string key;
  std::string owner;
  DurationMs lease_ms;
  DurationMs wait_ms;
  TimeMs now;
  std::uint64_t epoch = 0;  // the proposing leadership's (0: none)
  friend bool operator==(const Acquire&, const Acquire&) = default;
};

struct Release {
  Session session;
  ConnectionId connection;
  std::string key;
  Token token;
  TimeMs now;
  std::uint64_t epoch = 0;  // the proposing leadership's (0: none)
  friend bool operator==(const Release&, const Release&) = default;
};

// The holder of `key` with `token` reached its expiry.
struct Expire {
  std::string key;
  Token token;
  TimeMs now;
  std::uint64_t epoch = 0;  // the proposing leadership's (0: none)
  friend bool operator==(const Expire&, const Expire&) = default;
};

// The waiter `waiter` on `key` reached its deadline.
struct Timeout {
  std::string key;
  WaiterId waiter;
  TimeMs now;
  std::uint64_t epoch = 0;  // the proposing leadership's (0: none)
  friend bool operator==(const Timeout&, const Timeout&) = default;
};

// A client connection closed: its waiters leave their queues silently.
struct Close {
  ConnectionId connection;
  TimeMs now;
  std::uint64_t epoch = 0;  // the proposing leadership's (0: none)
  friend bool operator==(const Close&, const Close&) = default;
};

using Command = std::variant<Acquire, Release, Expire, Timeout, Close>;

TimeMs stamped_time(const Command& command);
// The epoch of the leadership that proposed it, and stamping one on it.
std::uint64_t command_epoch(const Command& command);
void set_epoch(Command& command, std::uint64_t epoch);
// The key a command acts on, or nullptr for Close (which acts on every key
// its connection waits on).
const std::string* command_key(const Command& command);

std::string encode(const Command& command);

struct DecodeError {
  std::string reason;
};
std::variant<Command, DecodeError> decode(std::string_view bytes);

// Who proposed a framed command: the leadership's epoch and the proposal's
// id within it. Only the proposer reads it (to know its own proposal came
// back); applying ignores it, so every replica applies the same commands.
struct Origin {
  std::uint64_t epoch = 0;
  std::uint64_t proposal = 0;
  friend auto operator<=>(const Origin&, const Origin&) = default;
};

struct Framed {
  Origin origin;
  Command command;
  friend bool operator==(const Framed&, const Framed&) = default;
};

// The command is written with the origin's epoch.
std::string encode_framed(const Origin& origin, const Command& command);
// Every frame of an entry, in order; any bad frame rejects the whole entry
// (only a faulty leader writes one, and every replica rejects it alike).
std::variant<std::vector<Framed>, DecodeError> decode_entry(std::string_view bytes);

// One line for traces and test failures, e.g. `Expire(k, 7, @100)`.
std::string describe(const Command& command);

}  // namespace lockstep::cluster
