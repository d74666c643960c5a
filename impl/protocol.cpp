#include "impl/protocol.hpp"

#include <array>
#include <charconv>

#include <fmt/format.h>

#include "impl/decimal.hpp"

namespace lockstep {

namespace {

// Splits `line` on single spaces into at most N fields. Returns the number of
// fields, or N + 1 when there are more. An empty field (two spaces, or a
// space at either end) is reported as a field of length zero, which no
// caller accepts.
template <std::size_t N>
std::size_t split_fields(std::string_view line, std::array<std::string_view, N>& fields) {
  std::size_t count = 0;
  std::size_t start = 0;
  while (true) {
    const auto space = line.find(' ', start);
    const auto end = space == std::string_view::npos ? line.size() : space;
    if (count == N) return N + 1;
    fields[count++] = line.substr(start, end - start);
    if (space == std::string_view::npos) return count;
    start = space + 1;
  }
}

Malformed malformed(std::string reason) { return Malformed{std::move(reason)}; }

// The optional `<client> <seq>` pair at fields[at], fields[at + 1].
std::variant<std::optional<SessionFields>, Malformed> parse_session(const std::array<std::string_view, 7>& f,
                                                                    std::size_t at, std::size_t count) {
  if (count == at) return std::optional<SessionFields>{};
  if (!is_valid_name(f[at])) return malformed("client must be 1 to 250 printable bytes");
  const auto sequence = parse_decimal(f[at + 1]);
  if (!sequence || *sequence == 0 || *sequence > sequence_max) {
    return malformed(fmt::format("seq must be a decimal number in 1..{}", sequence_max));
  }
  return std::optional<SessionFields>{SessionFields{f[at], *sequence}};
}

std::variant<SessionRequest, Malformed> parse_acquire(const std::array<std::string_view, 7>& f, std::size_t count,
                                               const Limits& limits) {
  if (!is_valid_name(f[1])) return malformed("key must be 1 to 250 printable bytes");
  if (!is_valid_name(f[2])) return malformed("owner must be 1 to 250 printable bytes");
  const auto lease = parse_decimal(f[3]);
  if (!lease) return malformed("lease_ms must be a decimal number");
  if (*lease < 1 || *lease > static_cast<std::uint64_t>(limits.max_lease_ms.value)) {
    return malformed(fmt::format("lease_ms must be in 1..{}", limits.max_lease_ms.value));
  }
  const auto wait = parse_decimal(f[4]);
  if (!wait) return malformed("wait_ms must be a decimal number");
  if (*wait > static_cast<std::uint64_t>(limits.max_wait_ms.value)) {
    return malformed(fmt::format("wait_ms must be in 0..{}", limits.max_wait_ms.value));
  }
  auto session = parse_session(f, 5, count);
  if (auto* bad = std::get_if<Malformed>(&session)) return std::move(*bad);
  return SessionRequest{AcquireRequest{f[1], f[2], DurationMs{static_cast<std::int64_t>(*lease)},
                                       DurationMs{static_cast<std::int64_t>(*wait)}},
                        std::get<std::optional<SessionFields>>(session)};
}

std::variant<SessionRequest, Malformed> parse_release(const std::array<std::string_view, 7>& f, std::size_t count) {
  if (!is_valid_name(f[1])) return malformed("key must be 1 to 250 printable bytes");
  const auto token = parse_decimal(f[2]);
  if (!token || *token == 0) return malformed("token must be a positive decimal number");
  auto session = parse_session(f, 3, count);
  if (auto* bad = std::get_if<Malformed>(&session)) return std::move(*bad);
  return SessionRequest{ReleaseRequest{f[1], Token{*token}}, std::get<std::optional<SessionFields>>(session)};
}

}  // namespace

bool is_valid_name(std::string_view name) {
  if (name.empty() || name.size() > name_bytes_max) return false;
  for (char c : name) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

namespace {

std::variant<SessionRequest, Malformed> parse_any(std::string_view line, const Limits& limits, bool with_sessions) {
  if (line.size() > limits.max_line_bytes) {
    return malformed(fmt::format("line longer than {} bytes", limits.max_line_bytes));
  }
  std::array<std::string_view, 7> fields{};
  const auto count = split_fields(line, fields);
  if (fields[0] == "A") {
    if (count != 5 && !(with_sessions && count == 7)) {
      return malformed(with_sessions ? "expected: A <key> <owner> <lease_ms> <wait_ms> [<client> <seq>]"
                                     : "expected: A <key> <owner> <lease_ms> <wait_ms>");
    }
    return parse_acquire(fields, count, limits);
  }
  if (fields[0] == "R") {
    if (count != 3 && !(with_sessions && count == 5)) {
      return malformed(with_sessions ? "expected: R <key> <token> [<client> <seq>]" : "expected: R <key> <token>");
    }
    return parse_release(fields, count);
  }
  return malformed("unknown request; expected A or R");
}

}  // namespace

std::variant<Request, Malformed> parse_request(std::string_view line, const Limits& limits) {
  auto parsed = parse_any(line, limits, false);
  if (auto* bad = std::get_if<Malformed>(&parsed)) return std::move(*bad);
  return std::get<SessionRequest>(parsed).request;
}

std::variant<SessionRequest, Malformed> parse_session_request(std::string_view line, const Limits& limits) {
  return parse_any(line, limits, true);
}

Response Response::error(std::string_view reason) {
  return Response{ResponseKind::error, {}, {}, {}, std::string(reason)};
}

void append_response_line(const Response& r, std::string& out) {
  // The server's write path, once per response: plain appends, no format
  // string read at run time.
  const auto token = [&out](Token t) {
    char digits[20];
    const auto end = std::to_chars(digits, digits + sizeof digits, t.value).ptr;
    out.append(digits, end);
  };
  out += static_cast<char>(r.kind);
  out += ' ';
  switch (r.kind) {
    case ResponseKind::granted:
      token(r.token);
      out += ' ';
      out += r.owner;
      break;
    case ResponseKind::timed_out:
    case ResponseKind::busy:
      out += r.owner;
      break;
    case ResponseKind::released:
    case ResponseKind::not_held:
      token(r.token);
      break;
    case ResponseKind::error:
      out += r.reason;
      out += '\n';
      return;
  }
  out += ' ';
  out += r.key;
  out += '\n';
}

std::string format_response(const Response& response) {
  std::string line;
  append_response_line(response, line);
  line.pop_back();
  return line;
}

std::optional<Response> parse_response(std::string_view line) {
  if (line.size() >= 2 && line[0] == 'E' && line[1] == ' ') {
    return Response::error(line.substr(2));
  }
  if (line == "E") return Response::error("");
  std::array<std::string_view, 4> f{};
  const auto count = split_fields(line, f);
  if (f[0].size() != 1) return std::nullopt;
  const auto token_in = [](std::string_view text) -> std::optional<Token> {
    const auto value = parse_decimal(text);
    if (!value || *value == 0) return std::nullopt;
    return Token{*value};
  };
  switch (f[0][0]) {
    case 'A': {
      const auto token = token_in(f[1]);
      if (count != 4 || !token || !is_valid_name(f[2]) || !is_valid_name(f[3])) return std::nullopt;
      return Response::granted(*token, f[2], f[3]);
    }
    case 'T':
    case 'B':
      if (count != 3 || !is_valid_name(f[1]) || !is_valid_name(f[2])) return std::nullopt;
      return f[0][0] == 'T' ? Response::timed_out(f[1], f[2]) : Response::busy(f[1], f[2]);
    case 'R':
    case 'N': {
      const auto token = token_in(f[1]);
      if (count != 3 || !token || !is_valid_name(f[2])) return std::nullopt;
      return f[0][0] == 'R' ? Response::released(*token, f[2]) : Response::not_held(*token, f[2]);
    }
    default:
      return std::nullopt;
  }
}

std::string format_request(const Request& request, const std::optional<SessionFields>& session) {
  std::string line;
  if (const auto* a = std::get_if<AcquireRequest>(&request)) {
    line = fmt::format("A {} {} {} {}", a->key, a->owner, a->lease_ms.value, a->wait_ms.value);
  } else {
    const auto& r = std::get<ReleaseRequest>(request);
    line = fmt::format("R {} {}", r.key, r.token.value);
  }
  if (session) fmt::format_to(std::back_inserter(line), " {} {}", session->client, session->sequence);
  return line;
}

}  // namespace lockstep
