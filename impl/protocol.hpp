// The wire protocol (docs/protocol.md, "Wire protocol"): one text line per
// message, fields separated by exactly one space. This file holds the message
// types and a strict codec for them. Parsing never allocates: a parsed
// request's key and owner are views into the line it came from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "impl/limits.hpp"
#include "impl/units.hpp"

namespace lockstep {

// Key and owner: 1 to 250 bytes of printable ASCII without space.
inline constexpr std::size_t name_bytes_max = 250;
bool is_valid_name(std::string_view name);

// The session fields a cluster node takes after a request (docs/protocol.md,
// "Cluster nodes on the wire"): the client's id, 1 to 250 bytes of printable
// ASCII without space (as key and owner), and its sequence number,
// 1 .. 2^63-1, which the client raises by one per new request.
inline constexpr std::uint64_t sequence_max = (std::uint64_t{1} << 63) - 1;
struct SessionFields {
  std::string_view client;
  std::uint64_t sequence = 0;
};

// `A <key> <owner> <lease_ms> <wait_ms>`
struct AcquireRequest {
  std::string_view key;
  std::string_view owner;
  DurationMs lease_ms;
  DurationMs wait_ms;
};

// `R <key> <token>`
struct ReleaseRequest {
  std::string_view key;
  Token token;
};

using Request = std::variant<AcquireRequest, ReleaseRequest>;

// A request as a cluster node reads it: `A <key> <owner> <lease_ms>
// <wait_ms> [<client> <seq>]` or `R <key> <token> [<client> <seq>]`.
struct SessionRequest {
  Request request;
  std::optional<SessionFields> session;
};

// A line that is not a valid request, with the reason sent back in `E`.
struct Malformed {
  std::string reason;
};

// Parses one request line (without its `\n`) against the limits, which bound
// lease_ms and wait_ms and the line's length. Simple mode: session fields
// are not part of the syntax (a 7-field A or 5-field R is malformed).
std::variant<Request, Malformed> parse_request(std::string_view line, const Limits& limits);
// The same, for a cluster node: the session fields may follow.
std::variant<SessionRequest, Malformed> parse_session_request(std::string_view line, const Limits& limits);

enum class ResponseKind : char {
  granted = 'A',     // A <token> <owner> <key>
  timed_out = 'T',   // T <owner> <key>
  busy = 'B',        // B <owner> <key>
  released = 'R',    // R <token> <key>
  not_held = 'N',    // N <token> <key>
  error = 'E',       // E <reason>
};

// One response. Fields a kind does not use stay empty (owner for R/N, token
// for T/B, everything but reason for E).
struct Response {
  ResponseKind kind = ResponseKind::error;
  Token token;
  std::string owner;
  std::string key;
  std::string reason;

  static Response granted(Token token, std::string_view owner, std::string_view key);
  static Response timed_out(std::string_view owner, std::string_view key);
  static Response busy(std::string_view owner, std::string_view key);
  static Response released(Token token, std::string_view key);
  static Response not_held(Token token, std::string_view key);
  static Response error(std::string_view reason);

  friend bool operator==(const Response&, const Response&) = default;
};

// Inline: the engine builds one or more of these per request.
inline Response Response::granted(Token token, std::string_view owner, std::string_view key) {
  return Response{ResponseKind::granted, token, std::string(owner), std::string(key), {}};
}
inline Response Response::timed_out(std::string_view owner, std::string_view key) {
  return Response{ResponseKind::timed_out, {}, std::string(owner), std::string(key), {}};
}
inline Response Response::busy(std::string_view owner, std::string_view key) {
  return Response{ResponseKind::busy, {}, std::string(owner), std::string(key), {}};
}
inline Response Response::released(Token token, std::string_view key) {
  return Response{ResponseKind::released, token, {}, std::string(key), {}};
}
inline Response Response::not_held(Token token, std::string_view key) {
  return Response{ResponseKind::not_held, token, {}, std::string(key), {}};
}

// The response's wire line, without `\n`.
std::string format_response(const Response& response);
// Appends the wire line and its `\n` to `out` (the server's write path).
void append_response_line(const Response& response, std::string& out);

// The longest response line, its `\n` included: `A`, a 20-digit token, an
// owner and a key of name_bytes_max bytes each, four separators. `E`
// reasons are short and never echo the request. A server's output bound
// must hold at least one such line.
inline constexpr std::size_t response_line_bytes_max = 1 + 1 + 20 + 1 + name_bytes_max + 1 + name_bytes_max + 1;

// Parses a response line as a client receives it (the runners and the client
// library). Returns nothing when the line is not a well-formed response.
std::optional<Response> parse_response(std::string_view line);

// The request's wire line, without `\n`, with session fields if given.
std::string format_request(const Request& request, const std::optional<SessionFields>& session = std::nullopt);

}  // namespace lockstep

namespace lockstep {

// A response and the connection it is addressed to.
struct Outbound {
  ConnectionId connection;
  Response response;
  friend bool operator==(const Outbound&, const Outbound&) = default;
};

// What one call of a service produces, in the order it was produced.
using Outputs = std::vector<Outbound>;

// What the driver must do with the connection after a line was handled.
enum class LineOutcome { keep_open, close_connection };

}  // namespace lockstep
