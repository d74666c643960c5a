// Tokens run out at 2^64 - 1 (docs/protocol.md, "Tokens"). The engine and
// the reference model are driven through the same scenarios from a first
// token just below the last one, and each answer is checked against the
// protocol's rule, written out here by hand: once the last token is issued,
// every acquire is `E tokens exhausted` and changes nothing, releases are
// still served, and a waiter whose turn comes (by a release or by the
// sweep) is told `T` at once, with the rest of its key's queue, and the key
// is deleted. The property EngineVsModel.SameResponsesWhenTokensRunOut
// compares the two on random sequences from the same region.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "impl/engine.hpp"
#include "model/model.hpp"

namespace lockstep {
namespace {

constexpr std::uint64_t last = UINT64_MAX;
const ConnectionId c1{1}, c2{2}, c3{3};

Limits limits_with_sweep(std::int64_t sweep_ms) {
  Limits limits;
  limits.sweep_ms = DurationMs{sweep_ms};
  return limits;
}

// The engine or the model behind one interface, so one scenario runs on both.
template <class Service>
struct Harness;

template <>
struct Harness<Engine> {
  explicit Harness(Token first) : service({limits_with_sweep(100), first, 4, InjectedBug::none}) {}
  std::vector<std::string> line(ConnectionId c, std::string_view text, std::int64_t at) {
    Outputs out;
    service.on_line(c, text, TimeMs{at}, out);
    service.check_invariants();
    return shown(out);
  }
  std::vector<std::string> advance(std::int64_t at) {
    Outputs out;
    service.advance(TimeMs{at}, out);
    service.check_invariants();
    return shown(out);
  }
  static std::vector<std::string> shown(const Outputs& out) {
    std::vector<std::string> lines;
    for (const auto& o : out) lines.push_back(fmt::format("c{} {}", o.connection.value, format_response(o.response)));
    return lines;
  }
  bool exhausted() const { return service.tokens_exhausted(); }
  Engine service;
};

template <>
struct Harness<Model> {
  explicit Harness(Token first) : service(limits_with_sweep(100), first) {}
  std::vector<std::string> line(ConnectionId c, std::string_view text, std::int64_t at) {
    Outputs out;
    service.on_line(c, text, TimeMs{at}, out);
    return Harness<Engine>::shown(out);
  }
  std::vector<std::string> advance(std::int64_t at) {
    Outputs out;
    service.advance(TimeMs{at}, out);
    return Harness<Engine>::shown(out);
  }
  bool exhausted() const { return service.tokens_exhausted(); }
  Model service;
};

using Lines = std::vector<std::string>;

template <class Service>
class TokenExhaustion : public ::testing::Test {};

using Services = ::testing::Types<Engine, Model>;
TYPED_TEST_SUITE(TokenExhaustion, Services);

TYPED_TEST(TokenExhaustion, TheLastTokenIsIssuedThenAcquiresAreRefusedAndReleasesServed) {
  Harness<TypeParam> h(Token{last - 2});
  EXPECT_EQ(h.line(c1, "A a alice 50 0", 0), Lines{"c1 A 18446744073709551613 alice a"});
  EXPECT_EQ(h.line(c2, "A b bob 50 0", 0), Lines{"c2 A 18446744073709551614 bob b"});
  EXPECT_EQ(h.line(c3, "A a carol 50 1000", 0), Lines{});  // queued behind alice
  EXPECT_EQ(h.line(c3, "A b dave 50 1000", 0), Lines{});   // queued behind bob
  EXPECT_FALSE(h.exhausted());
  // The release hands `a` to carol with the last token.
  EXPECT_EQ(h.line(c1, "R a 18446744073709551613", 1),
            (Lines{"c1 R 18446744073709551613 a", "c3 A 18446744073709551615 carol a"}));
  EXPECT_TRUE(h.exhausted());
  // Every acquire now: a free key, a held key with and without a wait.
  EXPECT_EQ(h.line(c1, "A x eve 10 0", 2), Lines{"c1 E tokens exhausted"});
  EXPECT_EQ(h.line(c1, "A a eve 10 0", 2), Lines{"c1 E tokens exhausted"});
  EXPECT_EQ(h.line(c1, "A a eve 10 500", 2), Lines{"c1 E tokens exhausted"});
  // bob releases: dave's turn has come, but no token is left for him.
  EXPECT_EQ(h.line(c2, "R b 18446744073709551614", 3),
            (Lines{"c2 R 18446744073709551614 b", "c3 T dave b"}));
  EXPECT_EQ(h.line(c2, "R b 18446744073709551614", 4), Lines{"c2 N 18446744073709551614 b"});  // b is gone
  EXPECT_EQ(h.line(c3, "R a 18446744073709551615", 5), Lines{"c3 R 18446744073709551615 a"});
  EXPECT_EQ(h.line(c3, "R a 18446744073709551615", 6), Lines{"c3 N 18446744073709551615 a"});
  // Malformed lines are still E for what they are.
  EXPECT_EQ(h.line(c1, "A x eve 0 0", 7).size(), 1u);
  EXPECT_EQ(h.line(c1, "R x 0", 7).size(), 1u);
}

TYPED_TEST(TokenExhaustion, TheSweepFindsNoTokenForTheHeadWaiter) {
  Harness<TypeParam> h(Token{last - 1});
  EXPECT_EQ(h.line(c1, "A k alice 10 0", 0), Lines{"c1 A 18446744073709551614 alice k"});
  EXPECT_EQ(h.line(c2, "A k bob 10 5000", 0), Lines{});
  EXPECT_EQ(h.line(c3, "A k carol 10 5000", 0), Lines{});
  EXPECT_EQ(h.line(c1, "A other alice 1000 0", 0), Lines{"c1 A 18446744073709551615 alice other"});
  EXPECT_TRUE(h.exhausted());
  // At the sweep (t = 100) k is expired with two waiters: both hear T, in
  // queue order, and k is deleted; `other` is still valid and untouched.
  EXPECT_EQ(h.advance(100), (Lines{"c2 T bob k", "c3 T carol k"}));
  EXPECT_EQ(h.line(c1, "R k 18446744073709551614", 101), Lines{"c1 N 18446744073709551614 k"});
  EXPECT_EQ(h.line(c1, "R other 18446744073709551615", 101), Lines{"c1 R 18446744073709551615 other"});
}

TEST(TokenExhaustionMark, TheMarkReachesTheLastTokenAndNotBeyond) {
  Engine engine({limits_with_sweep(100), Token{last}, std::uint64_t{1} << 20, InjectedBug::none});
  EXPECT_EQ(engine.token_mark(), Token{last - 1});
  Outputs out;
  engine.on_line(c1, "A k o 10 0", TimeMs{0}, out);
  EXPECT_EQ(engine.token_mark(), Token{last});
  EXPECT_TRUE(engine.tokens_exhausted());
  engine.check_invariants();
}

}  // namespace
}  // namespace lockstep
