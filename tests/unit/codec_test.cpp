// The wire codec: strict parsing of requests (every malformed or
// out-of-range line is refused with a reason), formatting of responses, and
// round trips of valid lines through parse and format. Session fields
// (`<client> <seq>` after A or R) are a cluster node's syntax: the simple
// parser refuses them, the session parser takes them within their bounds.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "impl/protocol.hpp"

namespace lockstep {
namespace {

Limits limits() { return Limits{}; }

bool malformed(std::string_view line) {
  return std::holds_alternative<Malformed>(parse_request(line, limits()));
}

TEST(Codec, ParsesAcquire) {
  const auto parsed = parse_request("A k alice 100 0", limits());
  ASSERT_TRUE(std::holds_alternative<Request>(parsed));
  const auto& a = std::get<AcquireRequest>(std::get<Request>(parsed));
  EXPECT_EQ(a.key, "k");
  EXPECT_EQ(a.owner, "alice");
  EXPECT_EQ(a.lease_ms.value, 100);
  EXPECT_EQ(a.wait_ms.value, 0);
}

TEST(Codec, ParsesRelease) {
  const auto parsed = parse_request("R key-1 18446744073709551615", limits());
  ASSERT_TRUE(std::holds_alternative<Request>(parsed));
  const auto& r = std::get<ReleaseRequest>(std::get<Request>(parsed));
  EXPECT_EQ(r.key, "key-1");
  EXPECT_EQ(r.token.value, 18446744073709551615ULL);
}

TEST(Codec, RefusesWrongFieldCounts) {
  EXPECT_TRUE(malformed("A k alice 100"));
  EXPECT_TRUE(malformed("A k alice 100 0 0"));
  EXPECT_TRUE(malformed("R k"));
  EXPECT_TRUE(malformed("R k 1 2"));
  EXPECT_TRUE(malformed(""));
  EXPECT_TRUE(malformed("A"));
}

TEST(Codec, RefusesUnknownRequests) {
  EXPECT_TRUE(malformed("a k alice 1 0"));
  EXPECT_TRUE(malformed("C 10"));
  EXPECT_TRUE(malformed("X"));
  EXPECT_TRUE(malformed("AA k alice 1 0"));
}

TEST(Codec, RefusesAnySpacingButSingleSpaces) {
  EXPECT_TRUE(malformed("A k  alice 1 0"));
  EXPECT_TRUE(malformed(" A k alice 1 0"));
  EXPECT_TRUE(malformed("A k alice 1 0 "));
  EXPECT_TRUE(malformed("A\tk alice 1 0"));
  EXPECT_TRUE(malformed("A k alice 1 0\r"));
}

TEST(Codec, RefusesNonCanonicalNumbers) {
  EXPECT_TRUE(malformed("A k alice 01 0"));
  EXPECT_TRUE(malformed("A k alice +1 0"));
  EXPECT_TRUE(malformed("A k alice -1 0"));
  EXPECT_TRUE(malformed("A k alice 1 00"));
  EXPECT_TRUE(malformed("A k alice 1x 0"));
  EXPECT_TRUE(malformed("R k 007"));
  EXPECT_TRUE(malformed("R k 18446744073709551616"));
  EXPECT_TRUE(malformed("R k 99999999999999999999999"));
}

TEST(Codec, RefusesOutOfRangeDurationsAndTokens) {
  Limits small;
  small.max_lease_ms = DurationMs{100};
  small.max_wait_ms = DurationMs{50};
  EXPECT_TRUE(std::holds_alternative<Request>(parse_request("A k o 100 50", small)));
  EXPECT_TRUE(std::holds_alternative<Malformed>(parse_request("A k o 101 50", small)));
  EXPECT_TRUE(std::holds_alternative<Malformed>(parse_request("A k o 100 51", small)));
  EXPECT_TRUE(std::holds_alternative<Malformed>(parse_request("A k o 0 0", small)));
  EXPECT_TRUE(malformed("R k 0"));
}

TEST(Codec, NamesAreOneTo250PrintableBytes) {
  const std::string longest(250, 'k');
  EXPECT_FALSE(malformed("A " + longest + " o 1 0"));
  EXPECT_TRUE(malformed("A " + longest + "k o 1 0"));
  EXPECT_TRUE(malformed("A k " + std::string(251, 'o') + " 1 0"));
  EXPECT_TRUE(malformed(std::string("A k\x7f o 1 0")));
  EXPECT_TRUE(malformed(std::string("A k\x01 o 1 0")));
  EXPECT_TRUE(malformed(std::string("A k\xc3\xa9 o 1 0")));
  EXPECT_FALSE(malformed("A !~#$% o 1 0"));
}

TEST(Codec, RefusesLinesOverTheLimit) {
  Limits tight;
  tight.max_line_bytes = 64;
  const std::string key(64 - 8, 'k');  // "A " + key + " o 1 0" is 64 bytes
  EXPECT_TRUE(std::holds_alternative<Request>(parse_request("A " + key + " o 1 0", tight)));
  EXPECT_TRUE(std::holds_alternative<Malformed>(parse_request("A " + key + "k o 1 0", tight)));
}

TEST(Codec, MalformedReasonsSayWhat) {
  const auto parsed = parse_request("A k alice 0 0", limits());
  ASSERT_TRUE(std::holds_alternative<Malformed>(parsed));
  EXPECT_NE(std::get<Malformed>(parsed).reason.find("lease_ms"), std::string::npos);
}

TEST(Codec, FormatsEveryResponseKind) {
  EXPECT_EQ(format_response(Response::granted(Token{7}, "alice", "k")), "A 7 alice k");
  EXPECT_EQ(format_response(Response::timed_out("alice", "k")), "T alice k");
  EXPECT_EQ(format_response(Response::busy("alice", "k")), "B alice k");
  EXPECT_EQ(format_response(Response::released(Token{7}, "k")), "R 7 k");
  EXPECT_EQ(format_response(Response::not_held(Token{9}, "k")), "N 9 k");
  EXPECT_EQ(format_response(Response::error("bad lease")), "E bad lease");
}

TEST(Codec, AppendsResponseLinesWithNewline) {
  std::string out;
  append_response_line(Response::granted(Token{1}, "o", "k"), out);
  append_response_line(Response::not_held(Token{2}, "k"), out);
  EXPECT_EQ(out, "A 1 o k\nN 2 k\n");
}

TEST(Codec, ParsesResponsesAndRefusesBrokenOnes) {
  EXPECT_EQ(parse_response("A 7 alice k"), Response::granted(Token{7}, "alice", "k"));
  EXPECT_EQ(parse_response("E anything at all"), Response::error("anything at all"));
  EXPECT_FALSE(parse_response("A 0 alice k").has_value());
  EXPECT_FALSE(parse_response("A 7 alice").has_value());
  EXPECT_FALSE(parse_response("T alice").has_value());
  EXPECT_FALSE(parse_response("Q 1 k").has_value());
  EXPECT_FALSE(parse_response("R x k").has_value());
}

// ---- session fields ----------------------------------------------------------------

bool session_malformed(std::string_view line) {
  return std::holds_alternative<Malformed>(parse_session_request(line, limits()));
}

TEST(CodecSessions, SimpleModeRefusesSessionFields) {
  EXPECT_TRUE(malformed("A k alice 100 0 laptop 1"));
  EXPECT_TRUE(malformed("R k 7 laptop 1"));
  EXPECT_EQ(std::get<Malformed>(parse_request("A k alice 100 0 laptop 1", limits())).reason,
            "expected: A <key> <owner> <lease_ms> <wait_ms>");
}

TEST(CodecSessions, ParsesSessionFieldsOrNone) {
  const auto parsed = parse_session_request("A k alice 100 0 alice@laptop#2 9223372036854775807", limits());
  ASSERT_TRUE(std::holds_alternative<SessionRequest>(parsed));
  const auto& request = std::get<SessionRequest>(parsed);
  ASSERT_TRUE(request.session);
  EXPECT_EQ(request.session->client, "alice@laptop#2");
  EXPECT_EQ(request.session->sequence, sequence_max);
  EXPECT_EQ(std::get<AcquireRequest>(request.request).owner, "alice");
  const auto release = std::get<SessionRequest>(parse_session_request("R k 7 c 1", limits()));
  EXPECT_EQ(std::get<ReleaseRequest>(release.request).token, Token{7});
  EXPECT_EQ(release.session->sequence, 1u);
  EXPECT_FALSE(std::get<SessionRequest>(parse_session_request("R k 7", limits())).session);
}

TEST(CodecSessions, RefusesBadSessionFields) {
  EXPECT_TRUE(session_malformed("A k alice 100 0 laptop"));        // half a pair
  EXPECT_TRUE(session_malformed("A k alice 100 0 laptop 0"));      // seq from 1
  EXPECT_TRUE(session_malformed("A k alice 100 0 laptop 9223372036854775808"));  // past 2^63-1
  EXPECT_TRUE(session_malformed("A k alice 100 0 laptop 01"));     // canonical decimal
  EXPECT_TRUE(session_malformed("A k alice 100 0 laptop -1"));
  EXPECT_TRUE(session_malformed("A k alice 100 0 " + std::string(251, 'c') + " 1"));
  EXPECT_TRUE(session_malformed("R k 7 laptop 1 more"));
  EXPECT_TRUE(session_malformed("R k 7 laptop  1"));
  EXPECT_FALSE(session_malformed("A k alice 100 0 " + std::string(250, 'c') + " 1"));
}

// Valid requests survive a round trip through format and parse.
RC_GTEST_PROP(Codec, ValidRequestsRoundTrip, ()) {
  const auto name = rc::gen::container<std::string>(rc::gen::inRange<char>('!', '~' + 1));
  const auto key = *rc::gen::resize(250, rc::gen::nonEmpty(name));
  const auto owner = *rc::gen::resize(250, rc::gen::nonEmpty(name));
  RC_PRE(key.size() <= 250 && owner.size() <= 250);
  const auto lease = *rc::gen::inRange<std::int64_t>(1, 86'400'001);
  const auto wait = *rc::gen::inRange<std::int64_t>(0, 86'400'001);
  const auto token = *rc::gen::inRange<std::uint64_t>(1, UINT64_MAX);
  for (const Request request : {Request{AcquireRequest{key, owner, DurationMs{lease}, DurationMs{wait}}},
                                Request{ReleaseRequest{key, Token{token}}}}) {
    const auto line = format_request(request);
    Limits wide;
    wide.max_line_bytes = 1024;
    const auto parsed = parse_request(line, wide);
    RC_ASSERT(std::holds_alternative<Request>(parsed));
    RC_ASSERT(format_request(std::get<Request>(parsed)) == line);
  }
}

// With session fields too, through the session parser.
RC_GTEST_PROP(CodecSessions, ValidSessionRequestsRoundTrip, ()) {
  const auto name = rc::gen::container<std::string>(rc::gen::inRange<char>('!', '~' + 1));
  const auto client = *rc::gen::resize(250, rc::gen::nonEmpty(name));
  RC_PRE(client.size() <= 250);
  const auto sequence = *rc::gen::inRange<std::uint64_t>(1, sequence_max);
  const auto token = *rc::gen::inRange<std::uint64_t>(1, UINT64_MAX);
  for (const Request request : {Request{AcquireRequest{"k", "o", DurationMs{1}, DurationMs{0}}},
                                Request{ReleaseRequest{"k", Token{token}}}}) {
    const auto line = format_request(request, SessionFields{client, sequence});
    const auto parsed = parse_session_request(line, limits());
    RC_ASSERT(std::holds_alternative<SessionRequest>(parsed));
    const auto& got = std::get<SessionRequest>(parsed);
    RC_ASSERT(format_request(got.request, got.session) == line);
    RC_ASSERT(std::holds_alternative<Malformed>(parse_request(line, limits())));
  }
}

// Any bytes at all: parsing never crashes, and what it accepts formats back
// to the very same line (the grammar has one spelling per request).
RC_GTEST_PROP(Codec, AnyBytesParseToRequestOrReason, (const std::string& bytes)) {
  const auto parsed = parse_request(bytes, limits());
  if (const auto* request = std::get_if<Request>(&parsed)) {
    RC_ASSERT(format_request(*request) == bytes);
  } else {
    RC_ASSERT(!std::get<Malformed>(parsed).reason.empty());
  }
  const auto with_sessions = parse_session_request(bytes, limits());
  if (const auto* request = std::get_if<SessionRequest>(&with_sessions)) {
    RC_ASSERT(format_request(request->request, request->session) == bytes);
  }
}

}  // namespace
}  // namespace lockstep
